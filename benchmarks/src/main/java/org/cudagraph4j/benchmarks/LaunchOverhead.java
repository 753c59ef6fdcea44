package org.cudagraph4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * N empty-kernel launches against one graph of N nodes, each followed by a stream
 * synchronization, so the device's work and the wake-up are counted. Native twin:
 * {@code launch_overhead/{eager,graph}/N}.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgs = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class LaunchOverhead {
    @Param({"1", "2", "8", "32", "128"})
    int n;

    private Gpu gpu;
    private CudaGraph graph;
    private GraphExec exec;

    @Setup(Level.Trial)
    public void setUp() {
        gpu = new Gpu();
        graph = gpu.captureEmptyChain(n);
        exec = gpu.ready(graph);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        exec.close();
        graph.close();
        gpu.close();
    }

    @Benchmark
    public void eager() {
        for (int i = 0; i < n; i++) {
            gpu.empty.launch(gpu.stream, gpu.emptyLaunch, gpu.noArguments);
        }
        gpu.stream.synchronize();
    }

    @Benchmark
    public void graph() {
        exec.launch(gpu.stream);
        gpu.stream.synchronize();
    }
}
