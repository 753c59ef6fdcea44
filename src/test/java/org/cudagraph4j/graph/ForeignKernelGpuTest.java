package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.TestData;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.kernels.BiasRelu;
import org.cudagraph4j.kernels.ShippedKernels;
import org.cudagraph4j.serving.BucketLadder;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;
import org.cudagraph4j.serving.ServingOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Graphs that hold another library's kernels: the glossary page's {@code torch.nn.Linear} graph,
 * captured as a cuBLAS GEMM followed by the library's bias+ReLU, drawn, inspected, replayed,
 * updated, switched off node by node, and nested in child graphs and conditional bodies. cuBLAS
 * loads its kernels through the driver, so the runtime cannot read their nodes; the driver can.
 */
@GpuTest
class ForeignKernelGpuTest {
    private static final int IN = 512;
    private static final int OUT = 640;
    /** The page's 2048 rows; fewer under a sanitizer, which checks every access. */
    private static final int BATCH = TestData.underSanitizer() ? 128 : 2048;
    /** Every row is checked for NaN; every 8th against float64, which is 0.7 G multiply-adds for all. */
    private static final int CHECKED_ROW_STRIDE = 8;

    private static ShippedKernels kernels;

    @BeforeAll
    static void loadKernels() {
        Assumptions.assumeTrue(Cublas.isAvailable(), "cuBLAS not found; looked in " + Cublas.searched());
        kernels = ShippedKernels.load(TestData.device());
    }

    @AfterAll
    static void closeKernels() {
        if (kernels != null) {
            kernels.close();
        }
    }

    @Test
    void theGlossaryGraphIsDrawnWithTheCublasGemmAndTheLibrarysBiasReluNamed() {
        try (Linear linear = new Linear(TestData.device()); CudaGraph graph = linear.capture(linear.x, linear.y)) {
            List<GraphNode> kernelNodes = kernelNodes(graph);
            GraphNode bias = kernelNodes.getLast();
            assertTrue(bias.kernelParams().isPresent(), "the library's launch is matched to its node past cuBLAS's");
            assertEquals(kernels.biasRelu().kernel().name(), bias.kernelInfo().mangledName());
            List<GraphNode> foreign = kernelNodes.subList(0, kernelNodes.size() - 1);
            assertFalse(foreign.isEmpty(), "cuBLAS queued its GEMM");
            for (GraphNode node : foreign) {
                KernelNodeInfo info = node.kernelInfo();
                assertTrue(node.kernelParams().isEmpty(), "cuBLAS's arguments are not known to the library");
                assertFalse(info.mangledName().isBlank() || info.mangledName().startsWith("function 0x"),
                        "the driver names cuBLAS's kernel: " + info);
                assertTrue(info.functionHandle() != 0 && info.grid().x() >= 1 && info.block().x() >= 1, info.toString());
            }
            Map<String, String> drawn = graph.snapshot().nodes().stream()
                    .filter(node -> node.type() == GraphNodeType.KERNEL)
                    .collect(java.util.stream.Collectors.toMap(node -> node.fields().get(0).value(),
                            node -> node.fields().get(1).value(), (a, b) -> a));
            assertEquals(bias.kernelInfo().shape(), drawn.get(bias.kernelInfo().name()));
            String gemmName = foreign.getFirst().kernelInfo().name();
            assertEquals(foreign.getFirst().kernelInfo().shape(), drawn.get(gemmName));
            String drawing = graph.describe();
            assertTrue(drawing.contains("NODE 0: KERNEL") && drawing.contains("NODE " + bias.id() + ": KERNEL"), drawing);
            assertTrue(drawing.contains(gemmName.substring(0, Math.min(20, gemmName.length()))), drawing);
            String dot = graph.toDot();
            assertTrue(dot.contains(kernels.biasRelu().kernel().name()) || dot.contains(bias.kernelInfo().name()), dot);
            assertTrue(dot.contains(gemmName.substring(0, Math.min(20, gemmName.length()))), dot);
            assertEquals(List.of(kernelNodes.get(kernelNodes.size() - 2)),
                    bias.dependencies().stream().filter(n -> n.type() == GraphNodeType.KERNEL).toList(),
                    "the bias kernel runs after the GEMM");
            try (GraphExec exec = graph.instantiate()) {
                for (int replay = 0; replay < 3; replay++) {
                    linear.newInput();
                    exec.launch(linear.stream);
                    linear.stream.synchronize();
                    linear.check(linear.y, linear.bias);
                }
            }
        }
    }

    @Test
    void anExecutableOfTheForeignGraphUpdatesToACaptureOnOtherBuffers() {
        try (Linear linear = new Linear(TestData.device());
                DeviceBuffer otherY = linear.device.allocateFloats((long) BATCH * OUT);
                CudaGraph first = linear.capture(linear.x, linear.y);
                CudaGraph second = linear.capture(linear.x, otherY);
                GraphExec exec = first.instantiate()) {
            exec.update(second);
            linear.newInput();
            linear.y.copyFrom(TestData.nans(BATCH * OUT));
            exec.launch(linear.stream);
            linear.stream.synchronize();
            linear.check(otherY, linear.bias);
            assertTrue(Float.isNaN(linear.y.toFloatArray()[0]), "the first capture's output is no longer written");
        }
    }

    @Test
    void updateKernelNodeRefusesTheForeignNodeByNameAndTakesTheLibrarysNode() {
        try (Linear linear = new Linear(TestData.device());
                DeviceBuffer otherBias = TestData.upload(linear.device, TestData.randomFloats(OUT, TestData.newSeed()));
                CudaGraph graph = linear.capture(linear.x, linear.y);
                GraphExec exec = graph.instantiate()) {
            List<GraphNode> kernelNodes = kernelNodes(graph);
            GraphNode gemm = kernelNodes.getFirst();
            GraphNode bias = kernelNodes.getLast();
            KernelLaunch launch = bias.kernelParams().orElseThrow();
            KernelLaunch withOtherBias = launch.withArguments(BATCH, OUT, linear.c, OUT, otherBias, linear.y, OUT);
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> exec.updateKernelNode(gemm, withOtherBias));
            assertTrue(refused.getMessage().contains("node " + gemm.id() + " (" + gemm.kernelInfo().name() + ")")
                    && refused.getMessage().contains("not launched through cudagraph4j"), refused.getMessage());
            exec.updateKernelNode(bias, withOtherBias);
            linear.newInput();
            exec.launch(linear.stream);
            linear.stream.synchronize();
            linear.check(linear.y, otherBias);
        }
    }

    @Test
    void disablingTheForeignGemmLeavesItsOutputAsItWas() {
        try (Linear linear = new Linear(TestData.device()); CudaGraph graph = linear.capture(linear.x, linear.y);
                GraphExec exec = graph.instantiate()) {
            List<GraphNode> kernelNodes = kernelNodes(graph);
            List<GraphNode> gemm = kernelNodes.subList(0, kernelNodes.size() - 1); // split-K: a GEMM and a reduction
            for (GraphNode node : gemm) {
                exec.setEnabled(node, false);
                assertFalse(exec.isEnabled(node));
            }
            float[] stale = TestData.randomFloats(BATCH * OUT, TestData.newSeed());
            linear.c.copyFrom(stale);
            linear.y.copyFrom(TestData.nans(BATCH * OUT));
            exec.launch(linear.stream);
            linear.stream.synchronize();
            float[] y = linear.y.toFloatArray();
            for (int i = 0; i < y.length; i++) {
                assertEquals(Math.max(0f, stale[i] + linear.biasValues[i % OUT]), y[i], 1e-6f, "element " + i);
            }
            for (GraphNode node : gemm) {
                exec.setEnabled(node, true);
            }
            linear.newInput();
            exec.launch(linear.stream);
            linear.stream.synchronize();
            linear.check(linear.y, linear.bias);
        }
    }

    @Test
    void aChildGraphAndAnIfBodyTakeTheForeignGraph() {
        try (Linear linear = new Linear(TestData.device()); CudaGraph captured = linear.capture(linear.x, linear.y);
                CudaGraph parent = graphOn(linear.device); CudaGraph skipped = graphOn(linear.device)) {
            ConditionalNode branch = parent.ifThen(parent.conditionalHandle(1, true));
            branch.body().addChildGraph(captured);
            ConditionalNode never = skipped.ifThen(skipped.conditionalHandle(0, true));
            never.body().addChildGraph(captured);
            GraphNode child = branch.body().nodes().getFirst();
            assertEquals(GraphNodeType.GRAPH, child.type());
            assertTrue(parent.describe().contains("Child nodes"), parent.describe());
            try (GraphExec runs = parent.instantiate(); GraphExec doesNotRun = skipped.instantiate()) {
                linear.newInput();
                runs.launch(linear.stream);
                linear.stream.synchronize();
                linear.check(linear.y, linear.bias);
                linear.y.copyFrom(TestData.nans(BATCH * OUT));
                doesNotRun.launch(linear.stream);
                linear.stream.synchronize();
                assertTrue(Float.isNaN(linear.y.toFloatArray()[0]), "a false IF leaves the foreign GEMM unrun");
            }
        }
    }

    @Test
    void anArchiveRefusesTheForeignKernelByName() {
        try (Linear linear = new Linear(TestData.device()); CudaGraph graph = linear.capture(linear.x, linear.y)) {
            GraphNode gemm = kernelNodes(graph).getFirst();
            GraphArchiveException refused = assertThrows(GraphArchiveException.class, () -> GraphArchive.save(graph,
                    new GraphBindings().buffer("x", linear.x).buffer("c", linear.c).buffer("y", linear.y)
                            .buffer("w", linear.weight).buffer("bias", linear.bias)
                            .buffer("workspace", linear.workspace)));
            assertTrue(refused.getMessage().contains("(" + gemm.kernelInfo().name() + ") is a kernel node whose launch "
                    + "this library did not record"), refused.getMessage());
        }
    }

    @Test
    void anInferenceEngineServesAModelOfCublasOnBorrowedWeights() {
        CudaDevice device = TestData.device();
        float[] weights = TestData.randomFloats(OUT * IN, TestData.newSeed());
        float[] biases = TestData.randomFloats(OUT, TestData.newSeed());
        Devices.use(device.ordinal());
        long lentWeight = Memory.malloc(4L * OUT * IN); // another library's allocations
        long lentBias = Memory.malloc(4L * OUT);
        BucketLadder ladder = BucketLadder.of(1, 8, 32);
        try (DeviceBuffer weight = DeviceBuffer.borrow(device, lentWeight, ElementType.FLOAT32, OUT * IN);
                DeviceBuffer bias = DeviceBuffer.borrow(device, lentBias, ElementType.FLOAT32, OUT)) {
            weight.copyFrom(weights);
            bias.copyFrom(biases);
            LaneModel.Factory models = laneDevice -> new CublasLinearModel(laneDevice, weight, bias, ladder.largest());
            try (InferenceEngine engine = InferenceEngine.start(device, IN, OUT, models,
                    ServingOptions.defaults().withLadder(ladder).withLanes(2))) {
                for (int request = 0; request < 24; request++) {
                    int rows = 1 + request % ladder.largest();
                    float[] input = TestData.randomFloats(rows * IN, TestData.newSeed());
                    float[] answer = engine.submit(input).join();
                    for (int row = 0; row < rows; row++) {
                        for (int col = 0; col < OUT; col++) {
                            double sum = biases[col];
                            for (int k = 0; k < IN; k++) {
                                sum += (double) input[row * IN + k] * weights[col * IN + k];
                            }
                            assertEquals(Math.max(0, sum), answer[row * OUT + col], 1e-4, "row " + row + ", col " + col);
                        }
                    }
                }
                assertTrue(engine.metrics().graphLaunches() > 0, "the answers came from captured graphs");
            }
        } finally {
            Memory.free(lentWeight);
            Memory.free(lentBias);
        }
    }

    /** A lane's {@code torch.nn.Linear} + ReLU: cuBLAS's GEMM, then the library's bias+ReLU. */
    private static final class CublasLinearModel implements LaneModel {
        private final DeviceBuffer weight;
        private final DeviceBuffer bias;
        private final DeviceBuffer workspace;
        private final DeviceBuffer product;
        private final Cublas cublas;

        CublasLinearModel(CudaDevice device, DeviceBuffer weight, DeviceBuffer bias, int maxBatch) {
            this.weight = weight;
            this.bias = bias;
            workspace = device.allocate(ElementType.INT8, 32L << 20);
            product = device.allocateFloats((long) maxBatch * OUT);
            try (CudaStream creation = device.createStream()) {
                cublas = Cublas.create(creation, workspace);
            }
        }

        @Override
        public void forward(CudaStream stream, int batch, DeviceBuffer input, DeviceBuffer output) {
            cublas.setStream(stream.handle());
            cublas.linear(batch, IN, OUT, input, weight, product);
            kernels.biasRelu().apply(stream, batch, OUT, product, bias, output);
        }

        @Override
        public void close() {
            try (workspace; product) {
                cublas.close();
            }
        }
    }

    private static CudaGraph graphOn(CudaDevice device) {
        device.makeCurrent();
        return CudaGraph.create();
    }

    private static List<GraphNode> kernelNodes(CudaGraph graph) {
        return graph.topologicalOrder().stream().filter(node -> node.type() == GraphNodeType.KERNEL).toList();
    }

    /**
     * {@code torch.nn.Linear} with ReLU as the page captures it: cuBLAS's GEMM into {@code c}, then
     * the library's bias+ReLU from {@code c} into the output, on one stream.
     */
    private static final class Linear implements AutoCloseable {
        final CudaDevice device;
        final CudaStream stream;
        final DeviceBuffer workspace;
        final Cublas cublas;
        final float[] weightValues = TestData.randomFloats(OUT * IN, TestData.newSeed());
        final float[] biasValues = TestData.randomFloats(OUT, TestData.newSeed());
        final DeviceBuffer weight;
        final DeviceBuffer bias;
        final DeviceBuffer x;
        final DeviceBuffer c;
        final DeviceBuffer y;
        float[] input;

        Linear(CudaDevice device) {
            this.device = device;
            stream = device.createStream();
            workspace = device.allocate(ElementType.INT8, 32L << 20);
            cublas = Cublas.create(stream, workspace);
            weight = TestData.upload(device, weightValues);
            bias = TestData.upload(device, biasValues);
            x = device.allocateFloats((long) BATCH * IN);
            c = device.allocateFloats((long) BATCH * OUT);
            y = device.allocateFloats((long) BATCH * OUT);
            newInput();
            cublas.linear(BATCH, IN, OUT, x, weight, c); // cuBLAS picks and loads its kernel outside the capture
            stream.synchronize();
        }

        CudaGraph capture(DeviceBuffer input, DeviceBuffer output) {
            BiasRelu biasRelu = kernels.biasRelu();
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                cublas.linear(BATCH, IN, OUT, input, weight, c);
                biasRelu.apply(stream, BATCH, OUT, c, bias, output, Dim3.of(256, 2), Dim3.of(8, 32));
                return capture.end();
            }
        }

        /** Fresh random input, and poisoned outputs. */
        void newInput() {
            input = TestData.randomFloats(BATCH * IN, TestData.newSeed());
            x.copyFrom(input);
            c.copyFrom(TestData.nans(BATCH * OUT));
            y.copyFrom(TestData.nans(BATCH * OUT));
        }

        /** {@code output} against {@code relu(x·Wᵀ + b)} in float64. */
        void check(DeviceBuffer output, DeviceBuffer biasUsed) {
            float[] b = biasUsed.toFloatArray();
            float[] actual = output.toFloatArray();
            double error = 0;
            double norm = 0;
            for (int i = 0; i < actual.length; i++) {
                assertFalse(Float.isNaN(actual[i]), "element " + i + " was not written");
            }
            for (int row = 0; row < BATCH; row += CHECKED_ROW_STRIDE) {
                for (int col = 0; col < OUT; col++) {
                    double sum = b[col];
                    for (int k = 0; k < IN; k++) {
                        sum += (double) input[row * IN + k] * weightValues[col * IN + k];
                    }
                    double expected = Math.max(0, sum);
                    double got = actual[row * OUT + col];
                    error += (got - expected) * (got - expected);
                    norm += expected * expected;
                }
            }
            assertTrue(Math.sqrt(error / norm) < 1e-5, "relative error " + Math.sqrt(error / norm));
        }

        @Override
        public void close() {
            try (stream; workspace; weight; bias; x; c; y) {
                cublas.close();
            }
        }
    }
}
