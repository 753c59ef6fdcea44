package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.TestData;
import org.cudagraph4j.internal.NativeLaunch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which node each captured launch became, as {@link GraphNode#kernelParams()} reports it, checked
 * against what the node really does: with one node disabled, exactly the buffer its recorded
 * launch writes stays poisoned. Launch {@code i} writes {@code i * 1000 + index} into buffer
 * {@code i}, so a node matched to the wrong launch shows.
 */
@GpuTest
class CapturedNodesGpuTest {
    private static final int LENGTH = 64;
    private static final LaunchConfig CONFIG = LaunchConfig.of(Dim3.of(1), Dim3.of(64));

    private CudaDevice device;
    private CudaLibrary library;
    private CudaKernel writePattern;
    private CudaStream stream;
    private final List<DeviceBuffer> outputs = new ArrayList<>();

    @BeforeEach
    void open() {
        device = TestData.device();
        library = TestData.testKernels();
        writePattern = library.kernel("write_pattern");
        stream = device.createStream();
    }

    @AfterEach
    void close() {
        outputs.forEach(DeviceBuffer::close);
        stream.close();
        library.close();
    }

    /** Allocates buffers 0 to {@code count - 1}, before a capture, which forbids allocation. */
    private void allocate(int count) {
        for (int i = 0; i < count; i++) {
            outputs.add(device.allocateFloats(LENGTH));
        }
    }

    /** Launch {@code i} on {@code on}: buffer {@code i} gets {@code i * 1000 + index}. */
    private void write(int i, CudaStream on) {
        writePattern.launch(on, CONFIG, outputs.get(i), LENGTH, 1f, i * 1000f);
    }

    @Test
    void launchesBetweenCopiesAndMemsetsAreEachTheirNode() {
        allocate(6);
        try (DeviceBuffer scratch = device.allocateFloats(LENGTH); DeviceBuffer other = device.allocateFloats(LENGTH)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                scratch.memsetAsync(0, stream); // the stream's first node is not a kernel
                for (int i = 0; i < 6; i++) {
                    write(i, stream);
                    if (i % 2 == 0) {
                        other.copyFromAsync(scratch, stream);
                    }
                }
                scratch.memsetAsync(0, stream); // nor is its last
                graph = capture.end();
            }
            try (graph) {
                assertEachNodeIsItsLaunch(graph, 6);
            }
        }
    }

    @Test
    void aForkAndJoinResolvesTheLaunchesOfBothStreams() {
        allocate(7);
        try (CudaStream side = device.createStream(); CudaEvent forked = device.createEvent();
                CudaEvent joined = device.createEvent()) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                write(0, stream);
                write(1, stream);
                forked.record(stream);
                side.waitFor(forked);
                write(2, side);
                write(3, side);
                write(4, stream);
                joined.record(side);
                stream.waitFor(joined);
                write(5, stream);
                write(6, stream);
                graph = capture.end();
            }
            try (graph) {
                assertEachNodeIsItsLaunch(graph, 7);
            }
        }
    }

    @Test
    void launchesFromManyThreadsOntoOneCapturingStreamAreEachTheirNode() throws Exception {
        int threads = 8;
        int perThread = 6;
        allocate(threads * perThread);
        CudaGraph graph;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.RELAXED)) {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int first = t * perThread;
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = first; i < first + perThread; i++) {
                        write(i, stream);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> future : done) {
                future.get();
            }
            graph = capture.end();
        } finally {
            pool.shutdown();
        }
        try (graph) {
            assertEachNodeIsItsLaunch(graph, threads * perThread);
        }
    }

    @Test
    void aKernelQueuedByOtherCodeIsPassedOverAndTheLaunchesAroundItAreMatched() {
        CudaKernel empty = library.kernel("empty_kernel");
        allocate(4);
        try (CudaEvent event = device.createEvent()) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                write(0, stream);
                // Another library's launch on the same stream, which this one never sees.
                NativeLaunch.of(new int[] {1, 1, 1}, new int[] {1, 1, 1}, 0, false, null, false)
                        .launch(empty.handle(), MemorySegment.NULL, stream.handle(), "empty_kernel");
                write(1, stream);
                event.record(stream);
                stream.waitFor(event); // ends the run: what follows is a run of its own
                write(2, stream);
                write(3, stream);
                graph = capture.end();
            }
            try (graph) {
                List<GraphNode> kernels = graph.topologicalOrder().stream()
                        .filter(node -> node.type() == GraphNodeType.KERNEL).toList();
                assertEquals(5, kernels.size());
                assertTrue(kernels.get(1).kernelParams().isEmpty(), "the other code's launch is not the library's");
                assertEquals("empty_kernel", kernels.get(1).kernelInfo().name(), "the driver names it");
                assertTrue(kernels.get(0).kernelParams().isPresent() && kernels.get(2).kernelParams().isPresent(),
                        "the library's launches before and after it are matched by their kernel");
                assertEachNodeIsItsLaunch(graph, 4);
            }
        }
    }

    /**
     * Each kernel node whose launch was recorded writes the buffer its launch names, and no other;
     * {@code recorded} nodes have a launch.
     */
    private void assertEachNodeIsItsLaunch(CudaGraph graph, int recorded) {
        List<GraphNode> kernels = graph.nodes().stream()
                .filter(node -> node.type() == GraphNodeType.KERNEL && node.kernelParams().isPresent()).toList();
        assertEquals(recorded, kernels.size(), "kernel nodes with a recorded launch");
        try (GraphExec exec = graph.instantiate()) {
            for (GraphNode node : kernels) {
                KernelLaunch launch = node.kernelParams().orElseThrow();
                assertSame(writePattern, launch.kernel());
                DeviceBuffer named = (DeviceBuffer) launch.arguments().get(0);
                int index = outputs.indexOf(named);
                assertEquals(index * 1000f, (float) launch.arguments().get(3), node + ": the offset of its buffer");
                exec.setEnabled(node, false);
                for (DeviceBuffer output : outputs) {
                    output.copyFrom(TestData.nans(LENGTH));
                }
                exec.launch(stream);
                stream.synchronize();
                for (int i = 0; i < outputs.size(); i++) {
                    float first = outputs.get(i).toFloatArray()[0];
                    if (i == index) {
                        assertTrue(Float.isNaN(first), node + " is disabled, yet buffer " + i + " was written");
                    } else if (wasWritten(kernels, i)) {
                        assertFalse(Float.isNaN(first), "buffer " + i + " was not written with " + node + " disabled");
                        assertEquals(i * 1000f, first);
                    }
                }
                exec.setEnabled(node, true);
            }
        }
    }

    /** Whether a recorded node writes buffer {@code i}: a foreign run's buffers are written by nodes of no record. */
    private boolean wasWritten(List<GraphNode> kernels, int i) {
        return kernels.stream().anyMatch(node -> node.kernelParams().orElseThrow().arguments().get(0) == outputs.get(i));
    }
}
