package org.cudagraph4j.kernels;

import org.cudagraph4j.Dim3;

/**
 * One shipped sgemm instance: its CUTLASS-style name, tile, pipeline depth and launch needs.
 *
 * @param kernelName the {@code extern "C"} symbol, e.g.
 *     {@code cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_bias_f32_relu}
 * @param epilogue what it does after the main loop
 * @param tileM rows of C per threadblock
 * @param tileN columns of C per threadblock
 * @param tileK depth of one main-loop step
 * @param stages cp.async pipeline stages
 * @param threads threads per block
 * @param sharedMemBytes dynamic shared memory per block
 * @param bTransposed whether B is stored [N, K] (as {@code torch.nn.Linear} stores its weight)
 * @param alignment elements per vector access of B; above 1, B's leading dimension and address
 *     must be multiples of it
 */
public record GemmConfig(String kernelName, Epilogue epilogue, int tileM, int tileN, int tileK, int stages,
        int threads, int sharedMemBytes, boolean bTransposed, int alignment) {

    /** The epilogue fused after the main loop. */
    public enum Epilogue {
        /** {@code C = alpha * A * B + beta * C}. */
        LINEAR_COMBINATION,
        /** {@code D = max(A * B + bias[column], 0)}. */
        BIAS_RELU
    }

    /**
     * The grid that covers an {@code m x n} output: one block per tile.
     *
     * @param m rows of the output, at least 1
     * @param n columns of the output, at least 1
     * @return ceil(m / tileM) x ceil(n / tileN) blocks
     * @throws IllegalArgumentException if m or n is below 1
     */
    public Dim3 grid(int m, int n) {
        return Dim3.of(ceilDiv(m, tileM), ceilDiv(n, tileN));
    }

    static int ceilDiv(int value, int divisor) {
        return (value + divisor - 1) / divisor;
    }
}
