package org.cudagraph4j.benchmarks;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.graph.ConditionalHandle;
import org.cudagraph4j.graph.ConditionalKernels;
import org.cudagraph4j.graph.ConditionalNode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Warmup;

/**
 * When conditional nodes win, measured side by side in one run:
 * <ul>
 *   <li><b>One executable for every bucket.</b> A serving engine keeps one executable per batch
 *       bucket (35 on vLLM's ladder). The alternative is one executable whose SWITCH node picks the
 *       bucket's body from an index the host writes with the inputs. Both launches here copy 4
 *       bytes host to device first (the index, standing in for the inputs), then run a bucket's
 *       work: a chain of {@link #LAYERS} empty kernels. {@code bucketExecutable} launches that
 *       bucket's own executable; {@code switchExecutable} launches the one SWITCH executable.
 *       The set-up prints the device memory and instantiation time of each arrangement.</li>
 *   <li><b>A loop on the device.</b> {@code whileLoop} runs {@code iterations} rounds of a body
 *       (an empty kernel, then a count-down that sets the WHILE node's value) in one launch;
 *       {@code hostLoop} replays a one-round executable and reads a device flag back after each
 *       round to decide, as a host-driven loop must.</li>
 * </ul>
 * Each benchmark ends with a stream synchronize, so a score is a whole round trip.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 1, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgs = "--enable-native-access=ALL-UNNAMED")
public class ConditionalGraphs {
    /** Empty-kernel nodes per bucket body: a 16-layer model's launch count. */
    static final int LAYERS = 16;
    /** vLLM's default ladder: 1, 2, 4, then steps of 8 to 256. */
    static final int BUCKETS = 35;

    /** The bucket ladder both ways. */
    public static class Buckets extends GpuState {
        ConditionalKernels kernels;
        PinnedBuffer hostIndex;
        DeviceBuffer index;
        final List<GraphExec> perBucket = new ArrayList<>();
        GraphExec switchExec;
        int next;

        @Override
        void setUp() {
            kernels = ConditionalKernels.load();
            hostIndex = Cuda.allocatePinned(Integer.BYTES);
            index = gpu.device.allocate(ElementType.INT32, 1);

            long free = freeBytes();
            long began = System.nanoTime();
            for (int b = 0; b < BUCKETS; b++) {
                try (CudaGraph graph = CudaGraph.create()) {
                    chain(graph, LAYERS);
                    perBucket.add(gpu.ready(graph));
                }
            }
            long perBucketNanos = System.nanoTime() - began;
            long perBucketBytes = free - freeBytes();

            free = freeBytes();
            began = System.nanoTime();
            try (CudaGraph graph = CudaGraph.create()) {
                ConditionalHandle bucket = graph.conditionalHandle(0, true);
                GraphNode set = graph.addKernel(kernels.set(bucket, index));
                ConditionalNode choice = graph.switchOf(bucket, BUCKETS, set);
                for (int b = 0; b < BUCKETS; b++) {
                    chain(choice.caseBody(b), LAYERS);
                }
                switchExec = gpu.ready(graph);
            }
            long switchNanos = System.nanoTime() - began;
            long switchBytes = free - freeBytes();
            System.out.printf(Locale.ROOT, "%n# conditional: %d buckets of %d kernels: one executable per bucket: "
                    + "%.2f ms to build and instantiate, %.1f MiB of device memory; one SWITCH executable: %.2f ms, "
                    + "%.1f MiB%n", BUCKETS, LAYERS, perBucketNanos / 1e6, perBucketBytes / 1048576.0,
                    switchNanos / 1e6, switchBytes / 1048576.0);
        }

        private long freeBytes() {
            gpu.device.synchronize();
            return gpu.device.memoryInfo().freeBytes();
        }

        private void chain(CudaGraph graph, int length) {
            GraphNode previous = null;
            KernelLaunch empty = KernelLaunch.of(gpu.empty, LaunchConfig.of(Gpu.ONE, Gpu.ONE));
            for (int i = 0; i < length; i++) {
                previous = previous == null ? graph.addKernel(empty) : graph.addKernel(empty, previous);
            }
        }

        /** Cycles through the buckets, writing the index where the next copy reads it. */
        int nextBucket() {
            int bucket = next;
            next = (next + 1) % BUCKETS;
            hostIndex.segment().set(ValueLayout.JAVA_INT, 0, bucket);
            return bucket;
        }

        @Override
        void tearDown() {
            perBucket.forEach(GraphExec::close);
            switchExec.close();
            index.close();
            hostIndex.close();
            kernels.close();
        }
    }

    /** A counted loop both ways. */
    public static class Loop extends GpuState {
        @Param({"1", "8", "64"})
        int iterations;

        ConditionalKernels kernels;
        DeviceBuffer remaining;
        PinnedBuffer hostFlag;
        GraphExec whileExec;
        GraphExec oneRound;
        final int[] count = new int[1];

        @Override
        void setUp() {
            kernels = ConditionalKernels.load();
            remaining = gpu.device.allocate(ElementType.INT32, 1);
            hostFlag = Cuda.allocatePinned(Integer.BYTES);
            KernelLaunch empty = KernelLaunch.of(gpu.empty, LaunchConfig.of(Gpu.ONE, Gpu.ONE));
            try (CudaGraph graph = CudaGraph.create()) {
                ConditionalHandle more = graph.conditionalHandle(0, true);
                ConditionalNode loop = graph.whileLoop(more, graph.addKernel(kernels.set(more, remaining)));
                loop.body().addKernel(kernels.countDown(more, remaining), loop.body().addKernel(empty));
                whileExec = gpu.ready(graph);
            }
            // One round of the host-driven loop: the same body, the count-down writing the count the
            // host reads back. CUDA refuses to instantiate a graph with a handle no conditional node
            // reads, so the count-down's handle drives an IF with an empty body.
            try (CudaGraph graph = CudaGraph.create()) {
                ConditionalHandle flag = graph.conditionalHandle(0, true);
                graph.ifThen(flag, graph.addKernel(kernels.countDown(flag, remaining), graph.addKernel(empty)));
                oneRound = gpu.ready(graph);
            }
        }

        @Override
        void tearDown() {
            whileExec.close();
            oneRound.close();
            hostFlag.close();
            remaining.close();
            kernels.close();
        }
    }

    @Benchmark
    public void bucketExecutable(Buckets state) {
        int bucket = state.nextBucket();
        state.index.copyFromAsync(state.hostIndex.segment(), state.gpu.stream);
        state.perBucket.get(bucket).launch(state.gpu.stream);
        state.gpu.stream.synchronize();
    }

    @Benchmark
    public void switchExecutable(Buckets state) {
        state.nextBucket();
        state.index.copyFromAsync(state.hostIndex.segment(), state.gpu.stream);
        state.switchExec.launch(state.gpu.stream);
        state.gpu.stream.synchronize();
    }

    @Benchmark
    public void whileLoop(Loop state) {
        state.count[0] = state.iterations;
        state.remaining.copyFrom(state.count);
        state.whileExec.launch(state.gpu.stream);
        state.gpu.stream.synchronize();
    }

    @Benchmark
    public int hostLoop(Loop state) {
        state.count[0] = state.iterations;
        state.remaining.copyFrom(state.count);
        int rounds = 0;
        int left;
        do {
            state.oneRound.launch(state.gpu.stream);
            state.remaining.copyToAsync(state.hostFlag.segment(), state.gpu.stream);
            state.gpu.stream.synchronize();
            rounds++;
            left = state.hostFlag.segment().get(ValueLayout.JAVA_INT, 0);
        } while (left > 0);
        return rounds;
    }
}
