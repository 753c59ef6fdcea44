package org.cudagraph4j.kernels;

import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.TestData;

/**
 * One random sgemm problem on the device, with its float64 references: {@code 1.5·A·op(B) − 0.75·C}
 * for linear-combination instances and {@code relu(A·op(B) + bias)} for bias+ReLU ones.
 * {@link #check} runs an instance on it and compares, with the output poisoned or reset first;
 * {@link #run} returns the output. B may be a slice that starts some floats into its allocation.
 */
final class GemmCase implements AutoCloseable {
    final long seed = TestData.newSeed();
    private final int m;
    private final int n;
    private final int k;
    private final boolean bTransposed;
    private final float[] c;
    private final float[] hostA;
    private final float[] hostB;
    private final float[] hostBias;
    private final double[] linear;
    private final double[] fused;
    /** Σ|a·b| per output, which {@link #assertClose} measures the error against; made on first use. */
    private double[] magnitude;
    private final DeviceBuffer a;
    private final DeviceBuffer bAllocation;
    private final DeviceBuffer b;
    private final DeviceBuffer bias;
    private final DeviceBuffer out;

    GemmCase(CudaDevice device, int m, int n, int k, boolean bTransposed) {
        this(device, m, n, k, bTransposed, 0);
    }

    /** As the other constructor, with B a slice {@code bOffset} floats into its allocation. */
    GemmCase(CudaDevice device, int m, int n, int k, boolean bTransposed, int bOffset) {
        this.m = m;
        this.n = n;
        this.k = k;
        this.bTransposed = bTransposed;
        this.hostA = TestData.randomFloats(m * k, seed);
        this.hostB = TestData.randomFloats(k * n, seed + 1);
        this.c = TestData.randomFloats(m * n, seed + 2);
        this.hostBias = TestData.randomFloats(n, seed + 3);
        double[] product = Reference.gemm(m, n, k, 1, hostA, hostB, bTransposed, 0, null);
        this.linear = new double[product.length];
        for (int i = 0; i < product.length; i++) {
            linear[i] = 1.5 * product[i] - 0.75 * c[i];
        }
        this.fused = Reference.biasRelu(product, m, n, hostBias);
        this.a = TestData.upload(device, hostA);
        float[] shiftedB = new float[bOffset + hostB.length];
        System.arraycopy(hostB, 0, shiftedB, bOffset, hostB.length);
        this.bAllocation = TestData.upload(device, shiftedB);
        this.b = bOffset == 0 ? bAllocation : bAllocation.slice(bOffset, hostB.length);
        this.bias = TestData.upload(device, hostBias);
        this.out = device.allocateFloats((long) m * n);
    }

    /**
     * A linear combination {@code 2·A·op(B) + 0·C} of 300×200×100 into an output poisoned with NaN,
     * against float64: with beta 0 an instance must never read the output. Runs {@code config}, or
     * the instance the sgemm chooses where it is null.
     */
    static void assertBetaZeroIgnoresThePoisonedOutput(KernelsFixture gpu, boolean bTransposed, GemmConfig config) {
        int m = 300;
        int n = 200;
        int k = 100;
        long seed = TestData.newSeed();
        float[] a = TestData.randomFloats(m * k, seed);
        float[] b = TestData.randomFloats(k * n, seed + 1);
        try (DeviceBuffer da = gpu.upload(a); DeviceBuffer db = gpu.upload(b);
                DeviceBuffer dc = gpu.allocateFloats(m * n)) {
            dc.memset(0xFF);
            GemmOperands operands = GemmOperands.linearCombination(m, n, k, 2f, da, db, bTransposed, 0f, dc);
            if (config == null) {
                gpu.sgemm().multiply(gpu.stream(), operands, null);
            } else {
                gpu.sgemm().multiply(gpu.stream(), config, operands, null);
            }
            gpu.stream().synchronize();
            Reference.assertClose(Reference.gemm(m, n, k, 2, a, b, bTransposed, 0, null), dc.toFloatArray(),
                    (config == null ? "" : config.kernelName() + " ") + TestData.seedDescription(seed));
        }
    }

    /** Runs {@code config} (through {@code workspace}, which may be null) and compares with the reference. */
    void check(ShippedKernels kernels, CudaStream stream, GemmConfig config, GemmWorkspace workspace) {
        assertClose(config.epilogue(), run(kernels, stream, config, workspace), describe(config),
                Reference.tolerance(config));
    }

    /**
     * {@code actual} finite and within {@code tolerance} of the reference, normwise, relative to the
     * sums' magnitudes ({@link Reference#assertCloseToScale}): the small shapes here cancel often.
     */
    void assertClose(GemmConfig.Epilogue epilogue, float[] actual, String what, double tolerance) {
        if (magnitude == null) {
            magnitude = Reference.gemm(m, n, k, 1, Reference.abs(hostA), Reference.abs(hostB), bTransposed, 0, null);
        }
        double[] scale = new double[magnitude.length];
        for (int i = 0; i < scale.length; i++) {
            scale[i] = epilogue == GemmConfig.Epilogue.LINEAR_COMBINATION ? 1.5 * magnitude[i] + 0.75 * Math.abs(c[i])
                    : magnitude[i] + Math.abs(hostBias[i % n]);
        }
        Reference.assertCloseToScale(expected(epilogue), scale, actual, what, tolerance);
    }

    /**
     * Runs {@code config} and returns the output: for a linear combination C reset to its random
     * values first, for bias+ReLU the output poisoned with NaN first.
     */
    float[] run(ShippedKernels kernels, CudaStream stream, GemmConfig config, GemmWorkspace workspace) {
        if (config.epilogue() == GemmConfig.Epilogue.LINEAR_COMBINATION) {
            out.copyFrom(c);
            kernels.sgemm().multiply(stream, config,
                    GemmOperands.linearCombination(m, n, k, 1.5f, a, b, bTransposed, -0.75f, out), workspace);
        } else {
            out.memset(0xFF);
            kernels.sgemm().multiply(stream, config, GemmOperands.biasRelu(m, n, k, a, b, bTransposed, bias, out),
                    workspace);
        }
        stream.synchronize();
        return out.toFloatArray();
    }

    /** The float64 reference of an instance with this epilogue. */
    double[] expected(GemmConfig.Epilogue epilogue) {
        return epilogue == GemmConfig.Epilogue.LINEAR_COMBINATION ? linear : fused;
    }

    /** B as the instances see it. */
    DeviceBuffer b() {
        return b;
    }

    String describe(GemmConfig config) {
        return config.kernelName() + (config.splitK() ? " slices=" + config.slices() : "") + " m=" + m + " n=" + n
                + " k=" + k + " " + TestData.seedDescription(seed);
    }

    @Override
    public void close() {
        try (a; bAllocation; bias) {
            out.close();
        }
    }
}
