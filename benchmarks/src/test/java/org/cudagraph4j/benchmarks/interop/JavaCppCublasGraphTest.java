package org.cudagraph4j.benchmarks.interop;

import static org.bytedeco.cuda.global.cudart.cudaStreamCreateWithFlags;
import static org.bytedeco.cuda.global.cudart.cudaStreamDestroy;
import static org.bytedeco.cuda.global.cudart.cudaStreamNonBlocking;
import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.GraphNodeType;
import org.cudagraph4j.graph.KernelNodeInfo;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.ShippedKernels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * cudagraph4j beside a library its users already have: JavaCPP's CUDA presets. The glossary
 * page's {@code torch.nn.Linear} + ReLU, {@code y = relu(x·Wᵀ + b)}, captured as JavaCPP's cuBLAS
 * GEMM followed by the library's bias+ReLU kernel: on a stream of the library handed to JavaCPP,
 * and on a JavaCPP stream and JavaCPP memory borrowed by the library. Every result is checked
 * against float64 on the host, outputs poisoned with NaN before each run.
 *
 * <p>Runs from the GPU bundle ({@code bin/run-tests --benchmarks}); fails, rather than skips, where
 * no device is present. Each test also fails if it leaves more of the library's resources alive
 * than it found.
 */
@Tag("gpu")
class JavaCppCublasGraphTest {
    private static final int BATCH = 300;
    private static final int IN = 512;
    private static final int OUT = 640;
    /** The second layer's outputs, in the borrowed-handles test. */
    private static final int OUT2 = 384;
    private static final int REPLAYS = 20;
    /** What cuBLAS asks for on Hopper; 4 MiB would do on older GPUs. */
    private static final long WORKSPACE_BYTES = 32L << 20;
    private static final double MAX_RELATIVE_ERROR = 1e-5;

    private static CudaDevice device;
    private static ShippedKernels kernels;
    private LiveResources before;

    @BeforeAll
    static void requireDevice() {
        if (!Cuda.isAvailable()) {
            fail("gpu test JavaCppCublasGraphTest needs a CUDA device: "
                    + Cuda.unavailableReason().orElse("none is present"));
        }
        try {
            Loader.load(cudart.class);
            Loader.load(cublas.class);
        } catch (UnsatisfiedLinkError e) {
            fail("JavaCPP cannot load cuBLAS: it needs libcublas.so.13 and libcublasLt.so.13 of the CUDA toolkit "
                    + "(in /usr/local/cuda/lib64, $CUDA_HOME/lib64 or on LD_LIBRARY_PATH): " + e.getMessage(), e);
        }
        // bin/run-tests --device N names the device under test.
        device = Cuda.device(Integer.getInteger("org.cudagraph4j.test.device", 0));
        kernels = ShippedKernels.load(device);
    }

    @AfterAll
    static void closeKernels() {
        if (kernels != null) {
            kernels.close();
        }
    }

    @BeforeEach
    void countLiveResources() {
        before = Cuda.liveResources();
    }

    @AfterEach
    void failOnLeaks() {
        String growth = Cuda.liveResources().growthSince(before);
        assertTrue(growth.isEmpty(), "leaked: " + growth);
    }

    @Test
    void aJavaCppCublasGemmAndTheLibrarysBiasReluReplayFromOneCapture() {
        try (Layer layer = new Layer(1); CudaGraph graph = layer.capture(layer.x, layer.c, layer.y);
                GraphExec exec = graph.instantiate()) {
            for (int replay = 0; replay < REPLAYS; replay++) {
                float[] input = layer.newInput(layer.x);
                layer.poison(layer.c, layer.y);
                exec.launch(layer.stream);
                layer.stream.synchronize();
                assertClose(linearRelu(input, layer.weights, layer.biases, IN, OUT), layer.y.toFloatArray(),
                        "replay " + replay);
            }
        }
    }

    @Test
    void theGraphNamesCublasKernelsFromTheDriverAndTheLibrarysBiasRelu() {
        try (Layer layer = new Layer(2); CudaGraph graph = layer.capture(layer.x, layer.c, layer.y)) {
            List<GraphNode> kernelNodes = graph.nodes().stream().filter(n -> n.type() == GraphNodeType.KERNEL).toList();
            String biasReluName = kernels.biasRelu().kernel().name();
            List<GraphNode> library = kernelNodes.stream().filter(n -> n.kernelParams().isPresent()).toList();
            List<GraphNode> cublas = kernelNodes.stream().filter(n -> n.kernelParams().isEmpty()).toList();
            assertEquals(1, library.size(), "one kernel node launched through cudagraph4j: " + kernelNodes);
            GraphNode biasRelu = library.getFirst();
            assertEquals(biasReluName, biasRelu.kernelInfo().mangledName());
            assertEquals(biasRelu, graph.topologicalOrder().getLast(), "bias+ReLU runs after cuBLAS's kernels");
            assertFalse(cublas.isEmpty(), "cuBLAS queued its GEMM as kernel nodes the library did not launch");

            String drawing = graph.describe();
            String dot = graph.toDot();
            for (GraphNode node : kernelNodes) {
                KernelNodeInfo info = node.kernelInfo();
                assertFalse(info.name().isBlank() || info.mangledName().startsWith("function 0x"),
                        "the driver names every kernel: " + info);
                assertTrue(info.functionHandle() != 0 && info.grid().x() >= 1 && info.block().x() >= 1, info.toString());
                assertTrue(unframed(drawing).contains(unframed(info.name())),
                        "describe() draws " + info.name() + ":\n" + drawing);
                assertTrue(dot.contains(info.name().replace("\\", "\\\\").replace("\"", "\\\"")),
                        "toDot() labels " + info.name() + ":\n" + dot);
            }
            List<String> cublasNames = cublas.stream().map(n -> n.kernelInfo().name()).toList();
            assertTrue(cublasNames.stream().anyMatch(name -> name.toLowerCase(Locale.ROOT)
                    .matches("(?s).*(gemm|cublas|cutlass|xmma).*")), "a GEMM kernel among " + cublasNames);
            assertTrue(unframed(drawing).contains(unframed(biasReluName)), drawing);
            assertTrue(dot.contains(" -> "), dot);
        }
    }

    @Test
    void anExecutableUpdatesToTheSameWorkCapturedOnOtherBuffers() {
        try (Layer layer = new Layer(3);
                DeviceBuffer x2 = device.allocateFloats((long) BATCH * IN);
                DeviceBuffer c2 = device.allocateFloats((long) BATCH * OUT);
                DeviceBuffer y2 = device.allocateFloats((long) BATCH * OUT);
                CudaGraph first = layer.capture(layer.x, layer.c, layer.y);
                CudaGraph second = layer.capture(x2, c2, y2);
                GraphExec exec = first.instantiate()) {
            exec.update(second);
            for (int replay = 0; replay < 3; replay++) {
                layer.newInput(layer.x);
                float[] input = layer.newInput(x2);
                layer.poison(layer.c, layer.y, c2, y2);
                exec.launch(layer.stream);
                layer.stream.synchronize();
                assertClose(linearRelu(input, layer.weights, layer.biases, IN, OUT), y2.toFloatArray(),
                        "replay " + replay + " after the update");
                assertTrue(Float.isNaN(layer.y.toFloatArray()[0]) && Float.isNaN(layer.c.toFloatArray()[0]),
                        "the first capture's buffers are no longer written");
            }
        }
    }

    @Test
    void aJavaCppStreamAndJavaCppMemoryBorrowedByTheLibraryCaptureAndReplay() {
        SplittableRandom random = new SplittableRandom(4);
        float[] w1 = randomNonZero(OUT * IN, random);
        float[] b1 = randomNonZero(OUT, random);
        float[] w2 = randomNonZero(OUT2 * OUT, random);
        float[] b2 = randomNonZero(OUT2, random);
        JavaCpp.useDevice(device.ordinal());
        CUstream_st lentStream = new CUstream_st();
        JavaCpp.checkCuda(cudaStreamCreateWithFlags(lentStream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        boolean destroyed = false;
        try (JavaCpp.Allocations lent = new JavaCpp.Allocations()) {
            Pointer xLent = lent.malloc(4L * BATCH * IN);
            Pointer w1Lent = lent.malloc(4L * OUT * IN);
            Pointer b1Lent = lent.malloc(4L * OUT);
            Pointer cLent = lent.malloc(4L * BATCH * OUT);
            Pointer hLent = lent.malloc(4L * BATCH * OUT);
            Pointer w2Lent = lent.malloc(4L * OUT2 * OUT);
            Pointer b2Lent = lent.malloc(4L * OUT2);
            Pointer yLent = lent.malloc(4L * BATCH * OUT2);
            Pointer workspace = lent.malloc(WORKSPACE_BYTES);
            JavaCpp.upload(w1Lent, w1);
            JavaCpp.upload(b1Lent, b1);
            JavaCpp.upload(w2Lent, w2);
            JavaCpp.upload(b2Lent, b2);
            float[] last;
            try (CudaStream stream = CudaStream.borrow(device, JavaCpp.handle(lentStream));
                    DeviceBuffer x = borrow(xLent, BATCH * IN);
                    DeviceBuffer w1Buffer = borrow(w1Lent, OUT * IN);
                    DeviceBuffer b1Buffer = borrow(b1Lent, OUT);
                    DeviceBuffer c = borrow(cLent, BATCH * OUT);
                    DeviceBuffer h = borrow(hLent, BATCH * OUT);
                    DeviceBuffer w2Buffer = borrow(w2Lent, OUT2 * OUT);
                    DeviceBuffer b2Buffer = borrow(b2Lent, OUT2);
                    DeviceBuffer y = borrow(yLent, BATCH * OUT2);
                    JavaCpp.Cublas cublas = new JavaCpp.Cublas(lentStream, workspace.address(), WORKSPACE_BYTES)) {
                assertTrue(stream.isBorrowed() && x.isBorrowed() && y.isBorrowed());
                // Layer 1 as cuBLAS and the library's bias+ReLU; layer 2 the library's fused Linear.
                Linear second = new Linear(kernels, w2Buffer, b2Buffer, OUT, OUT2);
                x.copyFrom(randomNonZero(BATCH * IN, random));
                cublas.linear(BATCH, IN, OUT, x.address(), w1Buffer.address(), c.address()); // loads cuBLAS's kernel
                JavaCpp.checkCuda(cudaStreamSynchronize(lentStream), "cudaStreamSynchronize");
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    cublas.linear(BATCH, IN, OUT, x.address(), w1Buffer.address(), c.address());
                    kernels.biasRelu().apply(stream, BATCH, OUT, c, b1Buffer, h);
                    second.forward(stream, BATCH, h, y, Linear.Mode.FUSED);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    for (int replay = 0; replay < REPLAYS; replay++) {
                        float[] input = randomNonZero(BATCH * IN, random);
                        x.copyFrom(input);
                        c.copyFrom(nans(BATCH * OUT));
                        h.copyFrom(nans(BATCH * OUT));
                        y.copyFrom(nans(BATCH * OUT2));
                        exec.launch(stream);
                        // The lender's own call waits for the library's launch on the lender's stream.
                        JavaCpp.checkCuda(cudaStreamSynchronize(lentStream), "cudaStreamSynchronize");
                        double[] hidden = linearRelu(input, w1, b1, IN, OUT);
                        assertClose(linearRelu(hidden, w2, b2, OUT, OUT2), y.toFloatArray(), "replay " + replay);
                    }
                    last = y.toFloatArray();
                }
            }
            // Every wrapper is closed, and none freed what it borrowed: the lender still reads it and frees it.
            assertArrayEquals(last, JavaCpp.download(yLent, BATCH * OUT2), "read through JavaCPP after the wrappers closed");
            destroyed = true;
            JavaCpp.checkCuda(cudaStreamDestroy(lentStream), "cudaStreamDestroy");
            lent.free();
        } finally {
            if (!destroyed) {
                cudaStreamDestroy(lentStream);
            }
        }
    }

    private static DeviceBuffer borrow(Pointer lent, int floats) {
        return DeviceBuffer.borrow(device, lent.address(), ElementType.FLOAT32, floats);
    }

    /**
     * One {@code torch.nn.Linear} + ReLU on a stream of the library: its weight, bias and cuBLAS
     * workspace in buffers of the library, and JavaCPP's cuBLAS handle queuing on the library's
     * stream, wrapped as JavaCPP's {@code cudaStream_t}.
     */
    private static final class Layer implements AutoCloseable {
        final SplittableRandom random;
        final float[] weights;
        final float[] biases;
        CudaStream stream;
        DeviceBuffer workspace;
        DeviceBuffer weight;
        DeviceBuffer bias;
        DeviceBuffer x;
        DeviceBuffer c;
        DeviceBuffer y;
        JavaCpp.Cublas cublas;

        Layer(long seed) {
            random = new SplittableRandom(seed);
            weights = randomNonZero(OUT * IN, random);
            biases = randomNonZero(OUT, random);
            try {
                stream = device.createStream();
                workspace = device.allocate(ElementType.INT8, WORKSPACE_BYTES);
                weight = device.allocateFloats((long) OUT * IN);
                bias = device.allocateFloats(OUT);
                x = device.allocateFloats((long) BATCH * IN);
                c = device.allocateFloats((long) BATCH * OUT);
                y = device.allocateFloats((long) BATCH * OUT);
                weight.copyFrom(weights);
                bias.copyFrom(biases);
                JavaCpp.useDevice(device.ordinal());
                cublas = new JavaCpp.Cublas(JavaCpp.stream(stream.handle()), workspace.address(), WORKSPACE_BYTES);
                // Eagerly once, so that cuBLAS picks and loads its kernel before any capture.
                newInput(x);
                cublas.linear(BATCH, IN, OUT, x.address(), weight.address(), c.address());
                stream.synchronize();
            } catch (RuntimeException | Error e) {
                close();
                throw e;
            }
        }

        /** The layer from {@code input} into {@code output}, through {@code product}, as a graph. */
        CudaGraph capture(DeviceBuffer input, DeviceBuffer product, DeviceBuffer output) {
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                cublas.linear(BATCH, IN, OUT, input.address(), weight.address(), product.address());
                kernels.biasRelu().apply(stream, BATCH, OUT, product, bias, output);
                return capture.end();
            }
        }

        /** Fresh random input in {@code input}; returns it. */
        float[] newInput(DeviceBuffer input) {
            float[] values = randomNonZero(BATCH * IN, random);
            input.copyFrom(values);
            return values;
        }

        void poison(DeviceBuffer... buffers) {
            for (DeviceBuffer buffer : buffers) {
                buffer.copyFrom(nans((int) buffer.length()));
            }
        }

        @Override
        public void close() {
            // In reverse order of making; those not made (a failed constructor) are null, which
            // try-with-resources skips.
            try (CudaStream s = stream; DeviceBuffer ws = workspace; DeviceBuffer w = weight; DeviceBuffer b = bias;
                    DeviceBuffer in = x; DeviceBuffer product = c; DeviceBuffer out = y; JavaCpp.Cublas handle = cublas) {
                // only closing
            }
        }
    }

    /** Values of magnitude 0.25 to 1, either sign: never 0, so that no product is 0 by chance. */
    private static float[] randomNonZero(int length, SplittableRandom random) {
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            float magnitude = 0.25f + 0.75f * (float) random.nextDouble();
            values[i] = random.nextBoolean() ? magnitude : -magnitude;
        }
        return values;
    }

    private static float[] nans(int length) {
        float[] values = new float[length];
        Arrays.fill(values, Float.NaN);
        return values;
    }

    /** {@code relu(x·Wᵀ + b)} in float64: x [BATCH, in], W [out, in], row-major. */
    private static double[] linearRelu(float[] x, float[] w, float[] b, int in, int out) {
        double[] wide = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            wide[i] = x[i];
        }
        return linearRelu(wide, w, b, in, out);
    }

    private static double[] linearRelu(double[] x, float[] w, float[] b, int in, int out) {
        int rows = x.length / in;
        double[] y = new double[rows * out];
        for (int row = 0; row < rows; row++) {
            for (int col = 0; col < out; col++) {
                double sum = b[col];
                for (int k = 0; k < in; k++) {
                    sum += x[row * in + k] * w[col * in + k];
                }
                y[row * out + col] = Math.max(0, sum);
            }
        }
        return y;
    }

    /** Every element written (no NaN left), and ‖actual − expected‖ / ‖expected‖ below 1e-5. */
    private static void assertClose(double[] expected, float[] actual, String what) {
        assertEquals(expected.length, actual.length, what);
        double error = 0;
        double norm = 0;
        for (int i = 0; i < actual.length; i++) {
            if (Float.isNaN(actual[i])) {
                fail(what + ": element " + i + " was not written (still NaN)");
            }
            double difference = actual[i] - expected[i];
            error += difference * difference;
            norm += expected[i] * expected[i];
        }
        double relative = Math.sqrt(error / norm);
        assertTrue(relative < MAX_RELATIVE_ERROR, what + ": relative error " + relative + " against float64");
    }

    /** The diagram without its frames and line breaks, where a wrapped name reads whole again. */
    private static String unframed(String text) {
        return text.replaceAll("[│\\s]", "");
    }
}
