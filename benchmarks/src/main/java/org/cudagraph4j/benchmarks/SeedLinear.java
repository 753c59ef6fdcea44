package org.cudagraph4j.benchmarks;

import java.util.SplittableRandom;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.ShippedKernels;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;

/**
 * The seed's torch.nn.Linear layer on the shipped kernels, L layers chained:
 * {@code y = relu(x Wᵀ + b)} with 2048 rows and 640 in and out features, so the sgemm launches
 * exactly as the seed diagram shows, {@code <<<{32,20},64,19200>>>}, and the unfused epilogue at
 * {@code <<<{256,2},{8,32},0>>>}. Eager launches against one graph launch, unfused (two kernels a
 * layer) and fused (one). Each forward ends with a stream synchronization. Native twin:
 * {@code seed_linear/{eager,graph,fused_eager,fused_graph}/L}.
 */
public class SeedLinear extends GpuBenchmark {
    static final int BATCH = 2048;
    static final int FEATURES = 640;
    static final Dim3 SEED_EPILOGUE_GRID = Dim3.of(256, 2);

    @Param({"1", "16"})
    int layers;

    private ShippedKernels kernels;
    private DeviceBuffer[] activations;
    private DeviceBuffer[] weights;
    private DeviceBuffer[] biases;
    private Linear[] linears;
    private CudaGraph unfusedGraph;
    private CudaGraph fusedGraph;
    private GraphExec unfused;
    private GraphExec fused;

    @Override
    void setUp() {
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

    @Override
    void tearDown() {
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
    }

    @Benchmark
    public void eager() {
        forward(gpu.stream, Linear.Mode.UNFUSED);
        gpu.stream.synchronize();
    }

    @Benchmark
    public void graph() {
        gpu.launchAndWait(unfused);
    }

    @Benchmark
    public void fusedEager() {
        forward(gpu.stream, Linear.Mode.FUSED);
        gpu.stream.synchronize();
    }

    @Benchmark
    public void fusedGraph() {
        gpu.launchAndWait(fused);
    }

    private void forward(CudaStream stream, Linear.Mode mode) {
        for (int l = 0; l < layers; l++) {
            linears[l].forward(stream, BATCH, activations[l], activations[l + 1], mode);
        }
    }

    private CudaGraph capture(Linear.Mode mode) {
        return gpu.capture(() -> forward(gpu.stream, mode));
    }

    private DeviceBuffer random(int length, double bound, SplittableRandom random) {
        return gpu.uniform(length, bound, random);
    }
}
