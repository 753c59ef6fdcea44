package org.cudagraph4j.kernels;

import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.LaunchConfig;

/**
 * {@code Y = max(X + bias[column], 0)} for row-major [m, n] matrices: the seed's second node. The
 * kernel strides over the whole matrix, so any launch shape is correct; {@code Y} may be {@code X}.
 *
 * <p>Thread safety: immutable; safe to share.
 */
public final class BiasRelu {
    /** The seed diagram's epilogue block: 8 x 32 threads. */
    public static final Dim3 BLOCK = Dim3.of(8, 32);

    private final CudaKernel kernel;

    BiasRelu(CudaKernel kernel) {
        this.kernel = kernel;
    }

    /** Applies bias and ReLU with a grid sized to the matrix. */
    public void apply(CudaStream stream, int m, int n, DeviceBuffer x, DeviceBuffer bias, DeviceBuffer y) {
        apply(stream, m, n, x, bias, y, defaultGrid(m, n), BLOCK);
    }

    /** Applies bias and ReLU with an explicit launch shape, e.g. the seed's {@code <<<{256,2},{8,32}>>>}. */
    public void apply(CudaStream stream, int m, int n, DeviceBuffer x, DeviceBuffer bias, DeviceBuffer y, Dim3 grid,
            Dim3 block) {
        if (m < 1 || n < 1) {
            throw new IllegalArgumentException("bias+ReLU needs m, n >= 1, got m=" + m + ", n=" + n);
        }
        Sgemm.checkMatrix("X", x, (long) m * n);
        Sgemm.checkMatrix("Y", y, (long) m * n);
        Sgemm.checkMatrix("bias", bias, n);
        if (Sgemm.overlaps(y, x) && y.byteOffset() != x.byteOffset()) {
            throw new IllegalArgumentException("Y must be X itself or not overlap it");
        }
        kernel.launch(LaunchConfig.of(grid, block, 0, stream), m, n, x, n, bias, y, n);
    }

    /** One thread per element along a row-block of 8 rows and 128 columns, capped at the grid limits. */
    static Dim3 defaultGrid(int m, int n) {
        return Dim3.of(Math.min(GemmConfig.ceilDiv(m, 8), 65535), Math.min(GemmConfig.ceilDiv(n, 128), 65535));
    }

    public CudaKernel kernel() {
        return kernel;
    }
}
