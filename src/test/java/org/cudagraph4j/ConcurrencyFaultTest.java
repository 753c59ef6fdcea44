package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.N;
import static org.cudagraph4j.FaultChecks.THREAD_TIMEOUT;
import static org.cudagraph4j.FaultChecks.assertExecWritesPattern;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertPattern;
import static org.cudagraph4j.FaultChecks.assertSaxpyComputesOn;
import static org.cudagraph4j.FaultChecks.patternGraph;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Many platform and virtual threads launching, updating, allocating and freeing at once each get
 * correct results. Fault injection as {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class ConcurrencyFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void sixteenPlatformThreadsLaunchOneShotSaxpyOnTheirOwnStreams() throws Exception {
        try (ExecutorService executor = Executors.newThreadPerTaskExecutor(
                Thread.ofPlatform().name("fault-saxpy-platform-", 0).factory())) {
            runAllAtOnce(executor, 16, index -> {
                try (CudaStream own = gpu.device().createStream()) {
                    for (int round = 0; round < 4; round++) {
                        assertSaxpyComputesOn(gpu, own);
                    }
                }
            });
        }
        assertHealthy(gpu);
    }

    /**
     * 64 virtual threads, four times as many as a 16-core host has carriers, so that most wait for one
     * while the others are inside the runtime. Under racecheck as many as there are carriers: 64 stalled
     * there on an H200 (two carriers spinning in {@code cudaStreamSynchronize} and the rest blocked
     * in the runtime for minutes), while the same test passes in seconds under the other three tools.
     */
    @Test
    void sixtyFourVirtualThreadsLaunchOneShotSaxpyOnTheirOwnStreams() throws Exception {
        int threads = TestData.underRacecheck() ? Runtime.getRuntime().availableProcessors() : 64;
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            runAllAtOnce(executor, threads, index -> {
                try (CudaStream own = gpu.device().createStream()) {
                    for (int round = 0; round < 2; round++) {
                        assertSaxpyComputesOn(gpu, own);
                    }
                }
            });
        }
        assertHealthy(gpu);
    }

    @Test
    void oneGraphExecLaunchedFromEightThreadsWhileAnotherUpdatesItsKernelNode() throws Exception {
        float scale = 0.5f;
        float offset = 9f;
        int launchesPerThread = 25;
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = patternGraph(gpu, out, scale, offset);
                GraphExec exec = graph.instantiate()) {
            out.memset(0xFF);
            GraphNode node = graph.nodes().get(0);
            KernelLaunch original = node.kernelParams().orElseThrow();
            // Equivalent parameters: the same kernel and arguments; a grid-stride loop makes any shape
            // write the same values.
            List<KernelLaunch> equivalents = List.of(original,
                    original.withConfig(LaunchConfig.of(Dim3.of(7), Dim3.of(128))),
                    original.withConfig(LaunchConfig.of(Dim3.of(3), Dim3.of(1024))));
            AtomicBoolean launching = new AtomicBoolean(true);
            AtomicInteger updates = new AtomicInteger();
            CyclicBarrier start = new CyclicBarrier(9);
            try (ExecutorService executor = Executors.newThreadPerTaskExecutor(
                    Thread.ofPlatform().name("fault-graph-", 0).factory())) {
                Future<?> updater = executor.submit(() -> {
                    start.await();
                    for (int i = 0; launching.get() || i < 8; i++) {
                        exec.updateKernelNode(node, equivalents.get(i % equivalents.size()));
                        updates.incrementAndGet();
                    }
                    return null;
                });
                try {
                    runAllAtOnce(executor, 8, index -> {
                        start.await();
                        try (CudaStream own = gpu.device().createStream()) {
                            for (int launch = 0; launch < launchesPerThread; launch++) {
                                exec.launch(own);
                                own.synchronize();
                                float[] result = TestData.nans(N);
                                out.copyTo(result);
                                assertPattern(result, scale, offset,
                                        "thread " + index + ", launch " + launch + " of the shared executable");
                            }
                        }
                    });
                } finally {
                    launching.set(false);
                }
                try {
                    updater.get(THREAD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    throw new AssertionError("the updating thread failed: " + e.getCause(), e.getCause());
                }
            }
            assertTrue(updates.get() >= 8, "updates: " + updates.get());
            assertExecWritesPattern(gpu, exec, out, scale, offset);
        }
        assertHealthy(gpu);
    }

    @Test
    void thirtyTwoVirtualThreadsAllocateAndFreeAtOnce() throws Exception {
        LiveResources before = Cuda.liveResources();
        Set<Long> addresses = ConcurrentHashMap.newKeySet();
        CyclicBarrier allAllocated = new CyclicBarrier(32);
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            runAllAtOnce(executor, 32, index -> {
                int length = 1000 + 4099 * index;
                long seed = TestData.newSeed();
                float[] data = TestData.randomFloats(length, seed);
                try (DeviceBuffer buffer = gpu.device().allocateFloats(length)) {
                    addresses.add(buffer.address());
                    buffer.copyFrom(data);
                    // Every buffer is alive at once here, so their addresses must all differ.
                    allAllocated.await(THREAD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                    float[] back = TestData.nans(length);
                    buffer.copyTo(back);
                    for (int i = 0; i < length; i++) {
                        if (Float.floatToRawIntBits(back[i]) != Float.floatToRawIntBits(data[i])) {
                            fail("thread " + index + ", element " + i + ": " + back[i] + " != " + data[i] + " ("
                                    + TestData.seedDescription(seed) + ")");
                        }
                    }
                }
            });
        }
        assertEquals(32, addresses.size(), "live allocations must not share an address");
        assertEquals(before, Cuda.liveResources(), "every allocation was freed");
        assertHealthy(gpu);
    }

    /** Starts {@code tasks} tasks at once on {@code executor} and rethrows every failure. */
    private static void runAllAtOnce(ExecutorService executor, int tasks, IndexedTask task) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            int index = i;
            futures.add(executor.submit(() -> {
                start.await();
                task.run(index);
                return null;
            }));
        }
        start.countDown();
        List<Throwable> failures = new ArrayList<>();
        for (Future<?> future : futures) {
            try {
                future.get(THREAD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failures.add(e.getCause());
            }
        }
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError(failures.size() + " of " + tasks + " tasks failed; first: "
                    + failures.get(0), failures.get(0));
            failures.stream().skip(1).forEach(error::addSuppressed);
            throw error;
        }
    }

    @FunctionalInterface
    interface IndexedTask {
        void run(int index) throws Exception;
    }
}
