package org.cudagraph4j.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.blas.CublasLt;
import org.cudagraph4j.blas.Matmul;
import org.cudagraph4j.blas.MatmulEpilogue;
import org.cudagraph4j.blas.MatmulPlan;
import org.cudagraph4j.blas.MatrixLayout;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * BF16 through the library on cuBLASLt, timed as its PyTorch twin ({@code native/half_torch.py})
 * times the same work, so that one run on one GPU gives both sides:
 * <ul>
 *   <li>GEMM: {@code D = A B} at 4096³, and the glossary page's Linear ({@code relu(x Wᵀ + b)},
 *       2048 x 640 x 512) in one matmul with cuBLASLt's RELU_BIAS epilogue; median TFLOP/s of trials
 *       of back-to-back matmuls timed with CUDA events;</li>
 *   <li>the 16-layer MLP ({@code Linear(width, width)} + ReLU, BF16) as one graph: microseconds per
 *       forward, with a synchronize after each (median of 200) and pipelined (200 launches, one
 *       synchronize); at batches of 8 or less also the other choice of kernel: every layer on
 *       cuBLASLt where the shipped GEMV is the default, the GEMV where it is not.</li>
 * </ul>
 * Inputs are random and never zero; each graph's output is checked against an eager forward pass.
 * Prints lines in the twin's format: {@code GEMM bf16 cg4j: ...} and {@code MLP16 bf16 cg4j graph: ...}.
 */
public final class HalfPrecision {
    static final int LAYERS = 16;
    private static final int TRIALS = 15;
    private static final int GEMMS_PER_TRIAL = 20;
    private static final int FORWARDS = 200;
    /** The most rows the shipped GEMV takes, up to which both kernel choices are measured. */
    private static final int GEMV_BATCHES = 8;

    private HalfPrecision() {}

    public static void main(String[] args) {
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line. */
    @Command(name = "HalfPrecision", mixinStandardHelpOptions = true,
            description = "BF16 GEMM and the 16-layer BF16 MLP graph through cuBLASLt, in the PyTorch twin's format.")
    static final class Main implements Callable<Integer> {
        @Option(names = "--widths", split = ",", description = "MLP widths (default: ${DEFAULT-VALUE})")
        int[] widths = {512, 1024, 4096};

        @Option(names = "--batches", split = ",", description = "MLP batches (default: ${DEFAULT-VALUE})")
        int[] batches = {1, 8, 32, 128, 256};

        @Override
        public Integer call() {
            CudaDevice device = Cuda.device(0);
            System.out.println("cudagraph4j on " + device.properties().name() + ", cuBLASLt " + CublasLt.version());
            try (ShippedKernels kernels = ShippedKernels.load(device); CublasLt lt = CublasLt.create(device);
                    CudaStream stream = device.createStream()) {
                SplittableRandom random = new SplittableRandom(42);
                long warm = System.nanoTime();
                gemm(lt, stream, 8192, 8192, 8192, MatmulEpilogue.NONE, random, 3.0);
                System.out.printf("clock warm-up: %.1f s of 8192^3 BF16 GEMMs before the first measurement%n",
                        (System.nanoTime() - warm) / 1e9);
                double square = gemm(lt, stream, 4096, 4096, 4096, MatmulEpilogue.NONE, random, 0);
                System.out.printf("GEMM bf16 cg4j: 4096x4096x4096: %.1f TFLOP/s%n", square);
                double linear = gemm(lt, stream, 2048, 640, 512, MatmulEpilogue.RELU_BIAS, random, 0);
                System.out.printf("GEMM bf16 cg4j: linear 2048x640x512 relu_bias: %.1f TFLOP/s, %.2f us%n", linear,
                        2.0 * 2048 * 640 * 512 / (linear * 1e12) * 1e6);
                for (int width : widths) {
                    for (int batch : batches) {
                        double[] times = mlp(kernels, lt, stream, width, batch, random,
                                Linear.DEFAULT_HALF_GEMV_MAX_BATCH);
                        System.out.printf("MLP16 bf16 cg4j graph: width %d batch %d: %.1f us sync each, %.1f us"
                                + " pipelined%n", width, batch, times[0], times[1]);
                        if (batch <= GEMV_BATCHES) {
                            // The other choice: cuBLASLt where the GEMV is the default, the GEMV where it is not.
                            int other = batch <= Linear.DEFAULT_HALF_GEMV_MAX_BATCH ? 0 : GEMV_BATCHES;
                            double[] alternative = mlp(kernels, lt, stream, width, batch, random, other);
                            System.out.printf("MLP16 bf16 cg4j graph, %s: width %d batch %d: %.1f us sync each, %.1f us"
                                    + " pipelined%n", other == 0 ? "cuBLASLt only" : "shipped GEMV", width, batch,
                                    alternative[0], alternative[1]);
                        }
                    }
                }
            }
            return 0;
        }
    }

    /**
     * The median TFLOP/s of {@value #TRIALS} trials of {@value #GEMMS_PER_TRIAL} back-to-back
     * matmuls of row-major {@code [m, k] x [n, k]ᵀ}, as {@code torch.nn.functional.linear} lays them
     * out; or, with {@code warmSeconds} above 0, matmuls for that long, unmeasured.
     */
    static double gemm(CublasLt lt, CudaStream stream, int m, int n, int k, MatmulEpilogue epilogue,
            SplittableRandom random, double warmSeconds) {
        CudaDevice device = lt.device();
        Matmul matmul = Matmul.of(MatrixLayout.rowMajor(ElementType.BFLOAT16, m, k), Matmul.Op.NONE,
                MatrixLayout.rowMajor(ElementType.BFLOAT16, n, k), Matmul.Op.TRANSPOSE,
                MatrixLayout.rowMajor(ElementType.BFLOAT16, m, n)).withEpilogue(epilogue);
        List<DeviceBuffer> buffers = new ArrayList<>();
        try (MatmulPlan plan = lt.plan(matmul); CudaEvent start = device.createEvent();
                CudaEvent end = device.createEvent()) {
            DeviceBuffer a = keep(buffers, bf16(device, (long) m * k, 1, random));
            DeviceBuffer b = keep(buffers, bf16(device, (long) n * k, 1, random));
            DeviceBuffer d = keep(buffers, device.allocate(ElementType.BFLOAT16, (long) m * n));
            DeviceBuffer bias = epilogue.hasBias() ? keep(buffers, bf16(device, n, 1, random)) : null;
            if (warmSeconds > 0) {
                long until = System.nanoTime() + (long) (warmSeconds * 1e9);
                while (System.nanoTime() < until) {
                    plan.run(stream, a, b, d, bias);
                    stream.synchronize();
                }
                return 0;
            }
            for (int i = 0; i < 5; i++) {
                plan.run(stream, a, b, d, bias);
            }
            double[] tflops = new double[TRIALS];
            for (int trial = 0; trial < TRIALS; trial++) {
                start.record(stream);
                for (int i = 0; i < GEMMS_PER_TRIAL; i++) {
                    plan.run(stream, a, b, d, bias);
                }
                end.record(stream);
                end.synchronize();
                tflops[trial] = matmul.flops() * GEMMS_PER_TRIAL / (end.elapsedMillisSince(start) * 1e-3) / 1e12;
            }
            requireFinite(d, "GEMM " + matmul);
            Arrays.sort(tflops);
            return tflops[TRIALS / 2];
        } finally {
            buffers.forEach(DeviceBuffer::close);
        }
    }

    /**
     * {@code {median µs with a synchronize after each forward, µs per forward pipelined}} of the MLP's
     * graph, whose layers give the shipped GEMV forward passes of up to {@code gemvUpTo} rows.
     */
    static double[] mlp(ShippedKernels kernels, CublasLt lt, CudaStream stream, int width, int batch,
            SplittableRandom random, int gemvUpTo) {
        CudaDevice device = lt.device();
        List<DeviceBuffer> buffers = new ArrayList<>();
        try {
            List<Linear> layers = new ArrayList<>();
            double heBound = Math.sqrt(6.0 / width);
            for (int l = 0; l < LAYERS; l++) {
                Linear layer = new Linear(kernels, keep(buffers, bf16(device, (long) width * width, heBound, random)),
                        keep(buffers, bf16(device, width, 0.1, random)), width, width).withCublasLt(lt);
                layers.add(layer.withHalfGemvUpTo(gemvUpTo));
            }
            DeviceBuffer x = keep(buffers, bf16(device, (long) batch * width, 1, random));
            DeviceBuffer eager = keep(buffers, device.allocate(ElementType.BFLOAT16, (long) batch * width));
            DeviceBuffer y = keep(buffers, device.allocate(ElementType.BFLOAT16, (long) batch * width));
            try (Mlp mlp = new Mlp(kernels, layers, batch)) {
                mlp.forward(stream, batch, x, eager, Linear.Mode.FUSED);
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    mlp.forward(stream, batch, x, y, Linear.Mode.FUSED);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    y.copyFromRounded(nans(batch * width));
                    exec.launch(stream);
                    stream.synchronize();
                    float[] expected = eager.toFloatArray();
                    float[] replayed = y.toFloatArray();
                    requireFinite(y, "MLP width " + width + " batch " + batch);
                    if (!Arrays.equals(expected, replayed)) {
                        throw new IllegalStateException("MLP width " + width + " batch " + batch
                                + ": the graph's output differs from the eager forward pass");
                    }
                    for (int i = 0; i < 20; i++) {
                        exec.launch(stream);
                    }
                    stream.synchronize();
                    double[] syncEach = new double[FORWARDS];
                    for (int i = 0; i < FORWARDS; i++) {
                        long t0 = System.nanoTime();
                        exec.launch(stream);
                        stream.synchronize();
                        syncEach[i] = (System.nanoTime() - t0) / 1e3;
                    }
                    long t0 = System.nanoTime();
                    for (int i = 0; i < FORWARDS; i++) {
                        exec.launch(stream);
                    }
                    stream.synchronize();
                    double pipelined = (System.nanoTime() - t0) / 1e3 / FORWARDS;
                    Arrays.sort(syncEach);
                    return new double[] {syncEach[FORWARDS / 2], pipelined};
                }
            }
        } finally {
            buffers.forEach(DeviceBuffer::close);
        }
    }

    private static DeviceBuffer bf16(CudaDevice device, long length, double bound, SplittableRandom random) {
        float[] values = new float[Math.toIntExact(length)];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
        }
        DeviceBuffer buffer = device.allocate(ElementType.BFLOAT16, length);
        buffer.copyFromRounded(values);
        return buffer;
    }

    private static float[] nans(int length) {
        float[] values = new float[length];
        Arrays.fill(values, Float.NaN);
        return values;
    }

    private static void requireFinite(DeviceBuffer buffer, String what) {
        for (float value : buffer.toFloatArray()) {
            if (!Float.isFinite(value)) {
                throw new IllegalStateException(what + ": the output holds " + value);
            }
        }
    }

    private static DeviceBuffer keep(List<DeviceBuffer> buffers, DeviceBuffer buffer) {
        buffers.add(buffer);
        return buffer;
    }
}
