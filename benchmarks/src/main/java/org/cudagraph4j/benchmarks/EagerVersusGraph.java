package org.cudagraph4j.benchmarks;

import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.openjdk.jmh.annotations.Benchmark;

/**
 * One forward launched kernel by kernel ({@code eager}) against one launch of the graph captured
 * from it ({@code graph}), each followed by a stream synchronization, so the device's work and the
 * wake-up are counted.
 */
public abstract class EagerVersusGraph extends GpuBenchmark {
    CudaGraph graph;
    GraphExec exec;

    @Override
    final void setUp() {
        prepare();
        graph = gpu.capture(this::forward);
        exec = gpu.ready(graph);
    }

    @Override
    final void tearDown() {
        exec.close();
        graph.close();
        release();
    }

    /** Makes what {@link #forward()} launches, on {@link #gpu}; nothing by default. */
    void prepare() {}

    /** Launches one forward on {@code gpu.stream}. */
    abstract void forward();

    /** Closes what {@link #prepare()} made, after the graph; nothing by default. */
    void release() {}

    @Benchmark
    public void eager() {
        forward();
        gpu.stream.synchronize();
    }

    @Benchmark
    public void graph() {
        gpu.launchAndWait(exec);
    }
}
