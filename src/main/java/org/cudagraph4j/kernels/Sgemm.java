package org.cudagraph4j.kernels;

import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.LaunchConfig;

/**
 * Single-precision matrix product on the shipped SIMT kernels, for row-major matrices:
 * {@code C = alpha * A * B + beta * C}, with A [m, k], B [k, n] (or B stored transposed, [n, k])
 * and C [m, n], all dense. Any m, n, k of at least 1.
 *
 * <p>The instance is chosen by problem size (the large 128x128 tile once it fills every SM, the
 * seed's 64x32 tile below that), or pinned with {@link #multiply(CudaStream, GemmConfig, int, int,
 * int, float, DeviceBuffer, DeviceBuffer, float, DeviceBuffer, DeviceBuffer)}. With
 * {@code beta == 0}, C is not read, so it may hold anything, NaN included.
 *
 * <p>Thread safety: immutable; safe to share.
 */
public final class Sgemm {
    private static final int MAX_GRID_Y = 65535;

    private final ShippedKernels kernels;

    Sgemm(ShippedKernels kernels) {
        this.kernels = kernels;
    }

    /**
     * Computes {@code C = alpha * A * op(B) + beta * C}, where op(B) is B or, if {@code bTransposed}, Bᵀ, on
     * the instance {@link #choose} picks.
     *
     * @param stream the stream to launch on
     * @param m rows of A and of the output, at least 1
     * @param n columns of op(B) and of the output, at least 1
     * @param k columns of A and rows of op(B), at least 1
     * @param alpha the factor of the product
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] if {@code bTransposed}
     * @param bTransposed whether B is stored [n, k] (as {@code torch.nn.Linear} stores its weight)
     * @param beta the factor of C's old value; with 0, C is not read
     * @param c C, [m, n] floats; must not overlap A or B
     * @throws IllegalArgumentException if a dimension is below 1, a buffer does not hold FLOAT32 or is shorter
     *     than its matrix, C overlaps A or B, or n needs more than 65535 tiles
     * @throws NullPointerException if a buffer is null
     * @throws IllegalStateException if the stream, a buffer or the kernels are closed
     */
    public void multiply(CudaStream stream, int m, int n, int k, float alpha, DeviceBuffer a, DeviceBuffer b,
            boolean bTransposed, float beta, DeviceBuffer c) {
        checkDimensions(m, n, k);
        GemmConfig config = choose(m, n, k, bTransposed, GemmConfig.Epilogue.LINEAR_COMBINATION, b);
        multiply(stream, config, m, n, k, alpha, a, b, beta, c, null);
    }

    /**
     * Computes {@code D = max(A * op(B) + bias[column], 0)} in one kernel: the fused Linear.
     *
     * @param stream the stream to launch on
     * @param m rows of A and of the output, at least 1
     * @param n columns of op(B) and of the output, at least 1
     * @param k columns of A and rows of op(B), at least 1
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] if {@code bTransposed}
     * @param bTransposed whether B is stored [n, k] (as {@code torch.nn.Linear} stores its weight)
     * @param bias n floats, one per column
     * @param d D, [m, n] floats, only written; must not overlap A or B
     * @throws IllegalArgumentException if a dimension is below 1, a buffer does not hold FLOAT32 or is shorter
     *     than its matrix, D overlaps A or B, or n needs more than 65535 tiles
     * @throws NullPointerException if a buffer is null
     * @throws IllegalStateException if the stream, a buffer or the kernels are closed
     */
    public void multiplyBiasRelu(CudaStream stream, int m, int n, int k, DeviceBuffer a, DeviceBuffer b,
            boolean bTransposed, DeviceBuffer bias, DeviceBuffer d) {
        checkDimensions(m, n, k);
        GemmConfig config = choose(m, n, k, bTransposed, GemmConfig.Epilogue.BIAS_RELU, b);
        multiply(stream, config, m, n, k, 1f, a, b, 0f, d, bias);
    }

    /**
     * Runs a pinned instance. {@code bias} is required by, and only by, bias+ReLU instances;
     * {@code alpha} and {@code beta} apply only to linear-combination ones.
     *
     * @param stream the stream to launch on
     * @param config the instance, one of {@link ShippedKernels#gemmConfigs()}; it fixes the epilogue and B's layout
     * @param m rows of A and of the output, at least 1
     * @param n columns of op(B) and of the output, at least 1
     * @param k columns of A and rows of op(B), at least 1
     * @param alpha the factor of the product
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] if the instance takes B transposed
     * @param beta the factor of C's old value; with 0, C is not read
     * @param c the output, [m, n] floats; must not overlap A or B
     * @param bias n floats for a bias+ReLU instance, else {@code null}
     * @throws IllegalArgumentException if a dimension is below 1, a buffer does not hold FLOAT32 or is shorter
     *     than its matrix, the output overlaps A or B, n needs more than 65535 tiles, a linear-combination instance
     *     is given a bias, or B's leading dimension or offset is not a multiple of the instance's alignment
     * @throws NullPointerException if {@code config}, a matrix, or the bias a bias+ReLU instance needs is null
     * @throws IllegalStateException if the stream, a buffer or the kernels are closed
     */
    public void multiply(CudaStream stream, GemmConfig config, int m, int n, int k, float alpha, DeviceBuffer a,
            DeviceBuffer b, float beta, DeviceBuffer c, DeviceBuffer bias) {
        Objects.requireNonNull(config, "config");
        check(config, m, n, k, a, b, c, bias);
        CudaKernel kernel = kernels.library().kernel(config.kernelName());
        int ldb = config.bTransposed() ? k : n;
        LaunchConfig launch = LaunchConfig.of(config.grid(m, n), Dim3.of(config.threads()), config.sharedMemBytes(),
                stream);
        if (config.epilogue() == GemmConfig.Epilogue.BIAS_RELU) {
            kernel.launch(launch, m, n, k, a, k, b, ldb, bias, c, n);
        } else {
            kernel.launch(launch, m, n, k, alpha, a, k, b, ldb, beta, c, n);
        }
    }

    /**
     * The instance {@link #multiply} would use: among those with the right epilogue and B layout
     * (and B aligned for vector loads where the instance needs it), the large tile when its grid
     * fills every multiprocessor, else the smallest tile.
     *
     * @param m rows of A and of the output, at least 1
     * @param n columns of op(B) and of the output, at least 1
     * @param k columns of A and rows of op(B)
     * @param bTransposed whether B is stored [n, k]
     * @param epilogue the epilogue wanted
     * @param b B, whose offset decides whether instances with vector loads fit
     * @return one of {@link ShippedKernels#gemmConfigs()}
     * @throws IllegalArgumentException if m or n is below 1
     * @throws IllegalStateException if no shipped instance has this epilogue and B layout
     */
    public GemmConfig choose(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue, DeviceBuffer b) {
        int multiprocessors = kernels.multiprocessorCount();
        int ldb = bTransposed ? k : n;
        List<GemmConfig> candidates = kernels.gemmConfigs().stream()
                .filter(c -> c.epilogue() == epilogue && c.bTransposed() == bTransposed)
                .filter(c -> fitsAlignment(c, ldb, b))
                .toList();
        if (candidates.isEmpty()) {
            throw new IllegalStateException("no shipped sgemm instance for epilogue " + epilogue
                    + (bTransposed ? " with B transposed" : ""));
        }
        Comparator<GemmConfig> byArea = Comparator.comparingInt(c -> c.tileM() * c.tileN());
        GemmConfig largest = candidates.stream().max(byArea.thenComparingInt(GemmConfig::alignment)).orElseThrow();
        if (largest.grid(m, n).volume() >= multiprocessors) {
            return largest;
        }
        return candidates.stream().min(byArea).orElseThrow();
    }

    private static void checkDimensions(int m, int n, int k) {
        if (m < 1 || n < 1 || k < 1) {
            throw new IllegalArgumentException("sgemm needs m, n, k >= 1, got m=" + m + ", n=" + n + ", k=" + k);
        }
    }

    private static void check(GemmConfig config, int m, int n, int k, DeviceBuffer a, DeviceBuffer b, DeviceBuffer c,
            DeviceBuffer bias) {
        checkDimensions(m, n, k);
        checkMatrix("A", a, (long) m * k);
        checkMatrix("B", b, (long) k * n);
        checkMatrix("C", c, (long) m * n);
        boolean fused = config.epilogue() == GemmConfig.Epilogue.BIAS_RELU;
        if (fused) {
            Objects.requireNonNull(bias, config.kernelName() + " needs a bias");
            checkMatrix("bias", bias, n);
        } else if (bias != null) {
            throw new IllegalArgumentException(config.kernelName() + " takes no bias");
        }
        if (config.grid(m, n).y() > MAX_GRID_Y) {
            throw new IllegalArgumentException("n=" + n + " needs more than " + MAX_GRID_Y + " tiles of "
                    + config.tileN() + " columns");
        }
        if (overlaps(c, a) || overlaps(c, b)) {
            throw new IllegalArgumentException("the output of sgemm must not overlap its inputs");
        }
        int ldb = config.bTransposed() ? k : n;
        if (!fitsAlignment(config, ldb, b)) {
            throw new IllegalArgumentException(config.kernelName() + " needs B's leading dimension (" + ldb
                    + ") and offset to be multiples of " + config.alignment() + " floats");
        }
    }

    /** Whether B's leading dimension and offset allow {@code config}'s vector loads. */
    private static boolean fitsAlignment(GemmConfig config, int ldb, DeviceBuffer b) {
        int alignment = config.alignment();
        return alignment == 1 || (ldb % alignment == 0 && b.byteOffset() % (Float.BYTES * (long) alignment) == 0);
    }

    static void checkMatrix(String name, DeviceBuffer buffer, long elements) {
        Objects.requireNonNull(buffer, name);
        if (buffer.elementType() != ElementType.FLOAT32) {
            throw new IllegalArgumentException(name + " must hold FLOAT32, not " + buffer.elementType());
        }
        if (buffer.length() < elements) {
            throw new IllegalArgumentException(name + " needs " + elements + " floats but has " + buffer.length());
        }
    }

    static boolean overlaps(DeviceBuffer x, DeviceBuffer y) {
        if (x.allocation() != y.allocation()) {
            return false;
        }
        long xStart = x.byteOffset();
        long yStart = y.byteOffset();
        return xStart < yStart + y.byteSize() && yStart < xStart + x.byteSize();
    }
}
