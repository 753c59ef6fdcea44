package org.cudagraph4j.benchmarks;

import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What a graph costs to make and change, for chains of 10, 100 and 1000 empty-kernel nodes:
 * capture, instantiation, a whole-graph update from an identical graph, and one kernel node's
 * launch shape. Only the operation is timed; the graph or executable it makes is closed in an
 * untimed teardown. Native twin: {@code graph_lifecycle/{capture,instantiate,update_whole,update_node}/n}.
 */
public class GraphLifecycle extends GpuBenchmark {
    @Param({"10", "100", "1000"})
    int nodes;

    private CudaGraph template;
    private CudaGraph twin;
    private GraphExec exec;
    private GraphNode middle;
    private KernelLaunch[] shapes;
    private int flip;
    private CudaGraph captured;
    private GraphExec instantiated;

    @Override
    void setUp() {
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

    @Override
    void tearDown() {
        exec.close();
        twin.close();
        template.close();
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
