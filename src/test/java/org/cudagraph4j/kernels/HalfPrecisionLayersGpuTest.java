package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.HalfFloats;
import org.cudagraph4j.TestData;
import org.cudagraph4j.blas.CublasLt;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.GraphNodeType;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * BF16 and FP16 through the shipped layers: the half-precision bias+ReLU kernels bit for bit
 * against Java's FP32 sum rounded once, {@link Linear} and {@link Mlp} on cuBLASLt against float64,
 * eagerly and replayed from one graph, and the glossary page's graph with cuBLASLt's GEMM.
 *
 * <p>The layers' bound: products of BF16 or FP16 values are exact in FP32, so a layer's result
 * differs from float64 rounded to the format only where the FP32 sum lands on the other side of a
 * rounding midpoint: one unit in the last place, 2u of the value (u = 2⁻⁸ for BF16, 2⁻¹¹ for FP16).
 * A stack carries such a step into the next layer, where it moves an output by at most 2u of its
 * sum of magnitudes Σ|w·x|; the bound is 2u(|y| + Σ|w·x|) per element of the last layer.
 */
@GpuTest
class HalfPrecisionLayersGpuTest {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();
    private static final ElementType[] HALVES = {ElementType.BFLOAT16, ElementType.FLOAT16};

    private static CublasLt lt;

    @BeforeAll
    static void openCublasLt() {
        lt = CublasLt.create(TestData.device());
    }

    @AfterAll
    static void closeCublasLt() {
        if (lt != null) {
            lt.close();
        }
    }

    @Test
    void halfBiasReluRoundsTheFp32SumOnceAndKeepsNaN() {
        int m = 37;
        int n = 300;
        for (ElementType type : HALVES) {
            long seed = TestData.newSeed();
            float[] x = halves(TestData.randomFloats(m * n, seed), type, 4);
            x[5] = Float.NaN;
            float[] bias = halves(TestData.randomFloats(n, seed + 1), type, 1);
            float[] expected = new float[m * n];
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    float sum = x[i * n + j] + bias[j];
                    expected[i * n + j] = sum < 0 ? 0 : sum;
                }
            }
            short[] expectedBits = HalfFloats.fromFloats(expected, type);
            BiasRelu biasRelu = gpu.kernels().biasRelu(type);
            assertEquals(type, biasRelu.elementType());
            try (DeviceBuffer dx = gpu.device().allocate(type, m * n); DeviceBuffer db = gpu.device().allocate(type, n);
                    DeviceBuffer dy = gpu.device().allocate(type, m * n); DeviceBuffer floatBias = gpu.allocateFloats(n)) {
                dx.copyFromRounded(x);
                db.copyFromRounded(bias);
                dy.copyFromRounded(TestData.nans(m * n));
                biasRelu.apply(gpu.stream(), m, n, dx, db, dy);
                biasRelu.apply(gpu.stream(), m, n, dx, db, dx, Dim3.of(3, 1), Dim3.of(32, 4)); // in place, any shape
                gpu.stream().synchronize();
                short[] out = new short[m * n];
                dy.copyTo(out);
                assertTrue(Float.isNaN(dy.toFloatArray()[5]), "NaN stays NaN, as torch.relu keeps it");
                // The device writes NaN as 0x7FFF in both formats, Java as the canonical quiet NaN: compare the rest.
                out[5] = expectedBits[5];
                assertArrayEquals(expectedBits, out, type + " " + TestData.seedDescription(seed));
                dx.copyTo(out);
                out[5] = expectedBits[5];
                assertArrayEquals(expectedBits, out, type + " in place " + TestData.seedDescription(seed));
                assertEquals("bias must hold " + type + ", not FLOAT32", assertThrows(IllegalArgumentException.class,
                        () -> biasRelu.apply(gpu.stream(), m, n, dx, floatBias, dy)).getMessage());
            }
        }
        assertThrows(IllegalArgumentException.class, () -> gpu.kernels().biasRelu(ElementType.INT32));
    }

    @Test
    void halfLinearOnCublasLtMatchesFloat64FusedAndUnfused() {
        int batch = 33;
        int in = 512;
        int out = 200;
        for (ElementType type : HALVES) {
            long seed = TestData.newSeed();
            float[] x = halves(TestData.randomFloats(batch * in, seed), type, 1);
            float[] w = halves(TestData.randomFloats(out * in, seed + 1), type, 1);
            float[] b = halves(TestData.randomFloats(out, seed + 2), type, 1);
            double[][] reference = layer(x, w, b, batch, in, out);
            try (DeviceBuffer dx = upload(type, x); DeviceBuffer dw = upload(type, w); DeviceBuffer db = upload(type, b);
                    DeviceBuffer dy = gpu.device().allocate(type, (long) batch * out)) {
                Linear layer = new Linear(gpu.kernels(), dw, db, in, out).withCublasLt(lt);
                assertEquals(type, layer.elementType());
                for (Linear.Mode mode : Linear.Mode.values()) {
                    dy.copyFromRounded(TestData.nans(batch * out));
                    layer.forward(gpu.stream(), batch, dx, dy, mode);
                    gpu.stream().synchronize();
                    // Unfused rounds twice: the product into the format, then the sum with the bias.
                    assertWithin(reference, dy.toFloatArray(), type, mode == Linear.Mode.UNFUSED ? 2 : 1,
                            type + " " + mode + " " + TestData.seedDescription(seed));
                }
            }
        }
    }

    @Test
    void smallBatchesRunTheShippedGemvAndAgreeWithCublasLtWithinTheFormatsRounding() {
        int out = 203; // not a multiple of a block's four outputs
        for (ElementType type : HALVES) {
            for (int in : new int[] {512, 100}) { // 100 is no multiple of the GEMV's 8: cuBLASLt takes it
                long seed = TestData.newSeed();
                int rows = 8;
                float[] x = halves(TestData.randomFloats(rows * in, seed), type, 1);
                float[] w = halves(TestData.randomFloats(out * in, seed + 1), type, 1);
                float[] b = halves(TestData.randomFloats(out, seed + 2), type, 1);
                try (DeviceBuffer dx = upload(type, x); DeviceBuffer dw = upload(type, w);
                        DeviceBuffer db = upload(type, b); DeviceBuffer dy = gpu.device().allocate(type, (long) rows * out)) {
                    Linear layer1 = new Linear(gpu.kernels(), dw, db, in, out).withCublasLt(lt);
                    assertEquals(Linear.DEFAULT_HALF_GEMV_MAX_BATCH, layer1.halfGemvMaxBatch());
                    Linear gemv = layer1.withHalfGemvUpTo(8);
                    Linear cublasLt = gemv.withHalfGemvUpTo(0);
                    for (int batch = 1; batch <= rows; batch++) {
                        double[][] reference = layer(x, w, b, batch, in, out);
                        for (Linear layer : List.of(gemv, cublasLt)) {
                            dy.copyFromRounded(TestData.nans(rows * out));
                            layer.forward(gpu.stream(), batch, dx, dy, Linear.Mode.FUSED);
                            gpu.stream().synchronize();
                            float[] got = java.util.Arrays.copyOf(dy.toFloatArray(), batch * out);
                            assertWithin(reference, got, type, 1, type + " in " + in + " batch " + batch + " GEMV up to "
                                    + layer.halfGemvMaxBatch() + " " + TestData.seedDescription(seed));
                            assertTrue(batch == rows || Float.isNaN(dy.toFloatArray()[batch * out]),
                                    "rows past the batch are not written");
                        }
                    }
                }
            }
        }
        try (DeviceBuffer fw = gpu.allocateFloats(16); DeviceBuffer fb = gpu.allocateFloats(4)) {
            assertThrows(IllegalArgumentException.class,
                    () -> new Linear(gpu.kernels(), fw, fb, 4, 4).withHalfGemvUpTo(4));
        }
    }

    @Test
    void aBf16MlpCapturedOnCublasLtReplaysFromOneGraphAgainstFloat64() {
        int width = 256;
        int layers = 6;
        int batch = 16;
        ElementType type = ElementType.BFLOAT16;
        long seed = TestData.newSeed();
        List<float[]> weights = new ArrayList<>();
        List<float[]> biases = new ArrayList<>();
        List<DeviceBuffer> buffers = new ArrayList<>();
        try {
            List<Linear> stack = new ArrayList<>();
            for (int i = 0; i < layers; i++) {
                // Weights of scale 2/sqrt(width) keep the activations near 1 through the stack.
                float[] w = halves(TestData.randomFloats(width * width, seed + 2 * i), type, 2 / Math.sqrt(width));
                float[] b = halves(TestData.randomFloats(width, seed + 2 * i + 1), type, 0.1);
                weights.add(w);
                biases.add(b);
                DeviceBuffer dw = keep(buffers, upload(type, w));
                DeviceBuffer db = keep(buffers, upload(type, b));
                stack.add(new Linear(gpu.kernels(), dw, db, width, width).withCublasLt(lt));
            }
            DeviceBuffer dx = keep(buffers, gpu.device().allocate(type, (long) batch * width));
            DeviceBuffer dy = keep(buffers, gpu.device().allocate(type, (long) batch * width));
            try (Mlp mlp = new Mlp(gpu.kernels(), stack, batch)) {
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                    mlp.forward(gpu.stream(), batch, dx, dy, Linear.Mode.FUSED);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    long kernelNodes = graph.nodes().stream().filter(node -> node.type() == GraphNodeType.KERNEL).count();
                    assertTrue(kernelNodes >= layers, "one cuBLASLt kernel or more per layer: " + graph.describe());
                    for (int replay = 0; replay < 3; replay++) {
                        float[] x = halves(TestData.randomFloats(batch * width, seed + 100 + replay), type, 1);
                        dx.copyFromRounded(x);
                        dy.copyFromRounded(TestData.nans(batch * width));
                        exec.launch(gpu.stream());
                        gpu.stream().synchronize();
                        double[][] reference = null;
                        float[] activation = x;
                        for (int i = 0; i < layers; i++) {
                            reference = layer(activation, weights.get(i), biases.get(i), batch, width, width);
                            activation = halves(toFloats(reference[0]), type, 1);
                        }
                        assertWithin(reference, dy.toFloatArray(), type, 1, "replay " + replay + " "
                                + TestData.seedDescription(seed));
                    }
                }
            }
        } finally {
            buffers.forEach(DeviceBuffer::close);
        }
    }

    @Test
    void theGlossaryGraphWithACublasLtGemmIsCapturedDrawnAndReplayedAfterItsHandleCloses() {
        int batch = TestData.underSanitizer() ? 128 : 2048;
        int in = 512;
        int out = 640;
        try (LinearCase problem = new LinearCase(gpu, batch, in, out)) {
            CudaGraph graph;
            try (CublasLt own = CublasLt.create(gpu.device())) {
                // torch.nn.Linear on the page: cuBLASLt's GEMM, then the epilogue <<<{256,2},{8,32}>>>.
                Linear linear = new Linear(gpu.kernels(), problem.w, problem.b, in, out).withCublasLt(own)
                        .withEpilogueGrid(Dim3.of(256, 2));
                try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                    linear.forward(gpu.stream(), batch, problem.x, problem.y, Linear.Mode.UNFUSED);
                    graph = capture.end();
                }
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                List<GraphNode> kernels = graph.nodes().stream().filter(node -> node.type() == GraphNodeType.KERNEL)
                        .toList();
                GraphNode epilogue = kernels.getLast();
                assertEquals("<<<{256,2},{8,32},0>>>", epilogue.kernelInfo().shape());
                assertEquals("cg4j_epilogue_f32_bias_f32_relu", epilogue.kernelInfo().name());
                assertTrue(epilogue.kernelParams().isPresent(), "the library's launch is matched past cuBLASLt's");
                String drawing = graph.describe();
                for (GraphNode gemm : kernels.subList(0, kernels.size() - 1)) {
                    String name = gemm.kernelInfo().name();
                    assertFalse(name.isBlank() || name.startsWith("function 0x"), "the driver names it: " + name);
                    assertTrue(drawing.contains(gemm.kernelInfo().shape()), drawing);
                }
                assertFalse(drawing.contains("(not readable)"), drawing);
                for (int replay = 0; replay < 2; replay++) {
                    problem.y.copyFrom(TestData.nans(batch * out));
                    exec.launch(gpu.stream());
                    gpu.stream().synchronize();
                    Reference.assertClose(problem.expected, problem.y.toFloatArray(), "replay " + replay + " "
                            + problem.seedDescription());
                }
            }
        }
    }

    @Test
    void halfLayersNameWhatTheyNeed() {
        try (DeviceBuffer w = gpu.device().allocate(ElementType.BFLOAT16, 12);
                DeviceBuffer b = gpu.device().allocate(ElementType.BFLOAT16, 3);
                DeviceBuffer floatBias = gpu.allocateFloats(3);
                DeviceBuffer x = gpu.device().allocate(ElementType.BFLOAT16, 8);
                DeviceBuffer y = gpu.device().allocate(ElementType.BFLOAT16, 6);
                DeviceBuffer fw = gpu.allocateFloats(16);
                DeviceBuffer fb = gpu.allocateFloats(4)) {
            assertEquals("bias must hold BFLOAT16, not FLOAT32", assertThrows(IllegalArgumentException.class,
                    () -> new Linear(gpu.kernels(), w, floatBias, 4, 3)).getMessage());
            Linear layer = new Linear(gpu.kernels(), w, b, 4, 3);
            assertEquals("a BFLOAT16 layer multiplies on cuBLASLt: use withCublasLt(lt)",
                    assertThrows(IllegalStateException.class,
                            () -> layer.forward(gpu.stream(), 2, x, y, Linear.Mode.FUSED)).getMessage());
            Linear floats = new Linear(gpu.kernels(), fw, fb, 4, 4);
            assertTrue(assertThrows(IllegalArgumentException.class,
                    () -> new Mlp(gpu.kernels(), List.of(floats, new Linear(gpu.kernels(), w, b, 4, 3)), 2))
                    .getMessage().contains("a stack holds one element type"));
        }
    }

    /** {@code values} times {@code scale}, rounded to {@code type}. */
    private static float[] halves(float[] values, ElementType type, double scale) {
        float[] scaled = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            scaled[i] = (float) (values[i] * scale);
        }
        return HalfFloats.toFloats(HalfFloats.fromFloats(scaled, type), type);
    }

    private static float[] toFloats(double[] values) {
        float[] floats = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            floats[i] = (float) values[i];
        }
        return floats;
    }

    private static DeviceBuffer upload(ElementType type, float[] values) {
        DeviceBuffer buffer = gpu.device().allocate(type, values.length);
        buffer.copyFromRounded(values);
        return buffer;
    }

    private static DeviceBuffer keep(List<DeviceBuffer> buffers, DeviceBuffer buffer) {
        buffers.add(buffer);
        return buffer;
    }

    /** relu(x Wᵀ + b) in float64, and each element's Σ|w·x| + |b|. */
    private static double[][] layer(float[] x, float[] w, float[] b, int batch, int in, int out) {
        double[] y = new double[batch * out];
        double[] magnitude = new double[batch * out];
        for (int i = 0; i < batch; i++) {
            for (int j = 0; j < out; j++) {
                double sum = b[j];
                double abs = Math.abs(b[j]);
                for (int p = 0; p < in; p++) {
                    double term = (double) x[i * in + p] * w[j * in + p];
                    sum += term;
                    abs += Math.abs(term);
                }
                y[i * out + j] = Math.max(sum, 0);
                magnitude[i * out + j] = abs;
            }
        }
        return new double[][] {y, magnitude};
    }

    /** |got − y| ≤ 2u·roundings·(|y| + Σ|w·x|) per element; NaN fails. */
    private static void assertWithin(double[][] reference, float[] got, ElementType type, int roundings, String what) {
        double unit = type == ElementType.BFLOAT16 ? 0x1p-8 : 0x1p-11;
        for (int i = 0; i < got.length; i++) {
            double bound = 2 * unit * roundings * (Math.abs(reference[0][i]) + reference[1][i]);
            if (!(Math.abs(got[i] - reference[0][i]) <= bound)) {
                fail(what + ": element " + i + " is " + got[i] + ", float64 gives " + reference[0][i] + ", bound " + bound);
            }
        }
    }
}
