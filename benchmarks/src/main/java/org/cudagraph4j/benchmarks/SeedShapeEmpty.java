package org.cudagraph4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
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
 * The launch-bound part of the seed layer: both of its nodes as the empty kernel at the seed's
 * launch shapes, L layers, eager against graph, each forward ending with a synchronization. At
 * 2048 x 640 x 640 the real sgemm takes about 80 µs, which hides launch costs; this keeps them
 * visible. Native twin: {@code seed_shape_empty/{eager,graph}/L}.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgs = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class SeedShapeEmpty {
    @Param({"1", "16"})
    int layers;

    private Gpu gpu;
    private LaunchConfig gemmShape;
    private LaunchConfig epilogueShape;
    private CudaGraph graph;
    private GraphExec exec;

    @Setup(Level.Trial)
    public void setUp() {
        gpu = new Gpu();
        gemmShape = LaunchConfig.of(Dim3.of(32, 20), Dim3.of(64), 19200);
        epilogueShape = LaunchConfig.of(Dim3.of(256, 2), Dim3.of(8, 32), 0);
        try (StreamCapture capture = StreamCapture.begin(gpu.stream, CaptureMode.GLOBAL)) {
            forward();
            graph = capture.end();
        }
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
        forward();
        gpu.stream.synchronize();
    }

    @Benchmark
    public void graph() {
        exec.launch(gpu.stream);
        gpu.stream.synchronize();
    }

    private void forward() {
        for (int l = 0; l < layers; l++) {
            gpu.empty.launch(gpu.stream, gemmShape, gpu.noArguments);
            gpu.empty.launch(gpu.stream, epilogueShape, gpu.noArguments);
        }
    }
}
