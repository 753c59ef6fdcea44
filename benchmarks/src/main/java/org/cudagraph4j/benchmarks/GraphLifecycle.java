package org.cudagraph4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
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
 * What a graph costs to make and change, for chains of 10, 100 and 1000 empty-kernel nodes:
 * capture, instantiation, a whole-graph update from an identical graph, and one kernel node's
 * launch shape. Only the operation is timed; the graph or executable it makes is closed in an
 * untimed teardown. Native twin: {@code graph_lifecycle/{capture,instantiate,update_whole,update_node}/n}.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgs = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class GraphLifecycle {
    @Param({"10", "100", "1000"})
    int nodes;

    private Gpu gpu;
    private CudaGraph template;
    private CudaGraph twin;
    private GraphExec exec;
    private GraphNode middle;
    private KernelLaunch[] shapes;
    private int flip;
    private CudaGraph captured;
    private GraphExec instantiated;

    @Setup(Level.Trial)
    public void setUp() {
        gpu = new Gpu();
        template = gpu.captureEmptyChain(nodes);
        twin = gpu.captureEmptyChain(nodes);
        exec = template.instantiate();
        middle = template.nodes().get(nodes / 2);
        KernelLaunch params = middle.kernelParams().orElseThrow();
        shapes = new KernelLaunch[] {params.withConfig(LaunchConfig.of(Dim3.of(2), Gpu.ONE)), params};
    }

    @TearDown(Level.Invocation)
    public void closeWhatTheOperationMade() {
        if (captured != null) {
            captured.close();
            captured = null;
        }
        if (instantiated != null) {
            instantiated.close();
            instantiated = null;
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        exec.close();
        twin.close();
        template.close();
        gpu.close();
    }

    @Benchmark
    public void capture() {
        captured = gpu.captureEmptyChain(nodes);
    }

    @Benchmark
    public void instantiate() {
        instantiated = template.instantiate();
    }

    @Benchmark
    public void updateWhole() {
        exec.update((flip++ & 1) == 0 ? twin : template);
    }

    @Benchmark
    public void updateNode() {
        exec.updateKernelNode(middle, shapes[flip++ & 1]);
    }
}
