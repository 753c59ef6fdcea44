package org.cudagraph4j.benchmarks;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.ShippedKernels;
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
 * The seed's torch.nn.Linear layer on the shipped kernels, L layers chained:
 * {@code y = relu(x Wᵀ + b)} with 2048 rows and 640 in and out features, so the sgemm launches
 * exactly as the seed diagram shows, {@code <<<{32,20},64,19200>>>}, and the unfused epilogue at
 * {@code <<<{256,2},{8,32},0>>>}. Eager launches against one graph launch, unfused (two kernels a
 * layer) and fused (one). Each forward ends with a stream synchronization. Native twin:
 * {@code seed_linear/{eager,graph,fused_eager,fused_graph}/L}.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgs = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class SeedLinear {
    static final int BATCH = 2048;
    static final int FEATURES = 640;
    static final Dim3 SEED_EPILOGUE_GRID = Dim3.of(256, 2);

    @Param({"1", "16"})
    int layers;

    private Gpu gpu;
    private ShippedKernels kernels;
    private DeviceBuffer[] activations;
    private DeviceBuffer[] weights;
    private DeviceBuffer[] biases;
    private Linear[] linears;
    private CudaGraph unfusedGraph;
    private CudaGraph fusedGraph;
    private GraphExec unfused;
    private GraphExec fused;

    @Setup(Level.Trial)
    public void setUp() {
        gpu = new Gpu();
        kernels = ShippedKernels.load(gpu.device);
        SplittableRandom random = new SplittableRandom(42);
        activations = new DeviceBuffer[layers + 1];
        weights = new DeviceBuffer[layers];
        biases = new DeviceBuffer[layers];
        linears = new Linear[layers];
        activations[0] = random(BATCH * FEATURES, 1.0, random);
        double heBound = Math.sqrt(6.0 / FEATURES);
        for (int l = 0; l < layers; l++) {
            weights[l] = random(FEATURES * FEATURES, heBound, random);
            biases[l] = random(FEATURES, 0.1, random);
            activations[l + 1] = gpu.device.allocateFloats((long) BATCH * FEATURES);
            linears[l] = new Linear(kernels, weights[l], biases[l], FEATURES, FEATURES)
                    .withEpilogueGrid(SEED_EPILOGUE_GRID);
        }
        unfusedGraph = capture(Linear.Mode.UNFUSED);
        fusedGraph = capture(Linear.Mode.FUSED);
        unfused = gpu.ready(unfusedGraph);
        fused = gpu.ready(fusedGraph);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        gpu.stream.synchronize();
        unfused.close();
        fused.close();
        unfusedGraph.close();
        fusedGraph.close();
        for (DeviceBuffer buffer : activations) {
            buffer.close();
        }
        for (int l = 0; l < layers; l++) {
            weights[l].close();
            biases[l].close();
        }
        kernels.close();
        gpu.close();
    }

    @Benchmark
    public void eager() {
        forward(gpu.stream, Linear.Mode.UNFUSED);
        gpu.stream.synchronize();
    }

    @Benchmark
    public void graph() {
        unfused.launch(gpu.stream);
        gpu.stream.synchronize();
    }

    @Benchmark
    public void fusedEager() {
        forward(gpu.stream, Linear.Mode.FUSED);
        gpu.stream.synchronize();
    }

    @Benchmark
    public void fusedGraph() {
        fused.launch(gpu.stream);
        gpu.stream.synchronize();
    }

    private void forward(CudaStream stream, Linear.Mode mode) {
        for (int l = 0; l < layers; l++) {
            linears[l].forward(stream, BATCH, activations[l], activations[l + 1], mode);
        }
    }

    private CudaGraph capture(Linear.Mode mode) {
        try (StreamCapture capture = StreamCapture.begin(gpu.stream, CaptureMode.GLOBAL)) {
            forward(gpu.stream, mode);
            return capture.end();
        }
    }

    private DeviceBuffer random(int length, double bound, SplittableRandom random) {
        return gpu.uniform(length, bound, random);
    }
}
