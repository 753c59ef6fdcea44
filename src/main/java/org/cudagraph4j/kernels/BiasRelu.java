package org.cudagraph4j.kernels;

import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.LaunchConfig;

/**
 * {@code Y = max(X + bias[column], 0)} for row-major [m, n] matrices: the seed's second node. The
 * kernel strides over the whole matrix, so any launch shape is correct; {@code Y} may be {@code X}.
 * X, bias and Y hold one {@link #elementType() element type}: FP32, or FP16 or BF16, summed in FP32
 * and rounded once to nearest even; NaN stays NaN, as {@code torch.relu} keeps it.
 *
 * <p>Thread safety: immutable; safe to share.
 */
public final class BiasRelu {
    /** The seed diagram's epilogue block: 8 x 32 threads. */
    public static final Dim3 BLOCK = Dim3.of(8, 32);

    private final CudaKernel kernel;
    private final ElementType type;

    BiasRelu(CudaKernel kernel, ElementType type) {
        this.kernel = kernel;
        this.type = type;
    }

    /** {@return the element type of X, bias and Y} */
    public ElementType elementType() {
        return type;
    }

    /**
     * Applies bias and ReLU with a grid sized to the matrix and {@link #BLOCK}.
     *
     * @param stream the stream to launch on
     * @param m rows, at least 1
     * @param n columns, at least 1
     * @param x the input, at least m·n elements, row-major
     * @param bias at least n elements, one per column
     * @param y the output, at least m·n elements; {@code x} itself or not overlapping it
     * @throws IllegalArgumentException if m or n is below 1, a buffer does not hold this epilogue's element type or is too short, or
     *     {@code y} overlaps {@code x} without being it
     * @throws NullPointerException if a buffer is null
     * @throws IllegalStateException if the stream, a buffer or these kernels are closed
     */
    public void apply(CudaStream stream, int m, int n, DeviceBuffer x, DeviceBuffer bias, DeviceBuffer y) {
        apply(stream, m, n, x, bias, y, defaultGrid(m, n), BLOCK);
    }

    /**
     * Applies bias and ReLU with an explicit launch shape, e.g. the seed's {@code <<<{256,2},{8,32}>>>}.
     *
     * @param stream the stream to launch on
     * @param m rows, at least 1
     * @param n columns, at least 1
     * @param x the input, at least m·n elements, row-major
     * @param bias at least n elements, one per column
     * @param y the output, at least m·n elements; {@code x} itself or not overlapping it
     * @param grid blocks in the grid; any grid gives the right result
     * @param block threads in a block, at most {@link LaunchConfig#MAX_THREADS_PER_BLOCK}; any block gives the
     *     right result
     * @throws IllegalArgumentException if m or n is below 1, a buffer does not hold this epilogue's element type or is too short,
     *     {@code y} overlaps {@code x} without being it, or {@code block} is too large
     * @throws NullPointerException if a buffer is null
     * @throws IllegalStateException if the stream, a buffer or these kernels are closed
     */
    public void apply(CudaStream stream, int m, int n, DeviceBuffer x, DeviceBuffer bias, DeviceBuffer y, Dim3 grid,
            Dim3 block) {
        if (m < 1 || n < 1) {
            throw new IllegalArgumentException("bias+ReLU needs m, n >= 1, got m=" + m + ", n=" + n);
        }
        MatrixChecks.requireElements("X", x, type, (long) m * n);
        MatrixChecks.requireElements("Y", y, type, (long) m * n);
        MatrixChecks.requireElements("bias", bias, type, n);
        if (MatrixChecks.overlaps(y, x) && y.byteOffset() != x.byteOffset()) {
            throw new IllegalArgumentException("Y must be X itself or not overlap it");
        }
        kernel.launch(stream, LaunchConfig.of(grid, block), m, n, x, n, bias, y, n);
    }

    /** One thread per element along a row-block of 8 rows and 128 columns, capped at the grid limits. */
    static Dim3 defaultGrid(int m, int n) {
        return Dim3.of(Math.min(GemmConfig.ceilDiv(m, 8), 65535), Math.min(GemmConfig.ceilDiv(n, 128), 65535));
    }

    /**
     * The standalone epilogue kernel, for direct launches and graph nodes.
     *
     * @return the kernel; its parameters are {@code (int M, int N, const T* X, int ldx, const T* bias,
     *     T* Y, int ldy)}, T being {@code float}, {@code __half} or {@code __nv_bfloat16}
     */
    public CudaKernel kernel() {
        return kernel;
    }
}
