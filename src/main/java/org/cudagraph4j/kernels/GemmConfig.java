package org.cudagraph4j.kernels;

import java.util.Objects;
import org.cudagraph4j.Dim3;

/**
 * One shipped sgemm instance (its CUTLASS-style name, tile, pipeline depth and launch needs), and
 * for split-K instances the number of slices the K loop is split into.
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
 * @param alignment elements per vector access of B (and of A, for a tensor-core instance); above 1,
 *     the leading dimension and address of each such operand must be multiples of it
 * @param splitK whether the instance can split its K loop over several blocks per tile; such an
 *     instance runs with a {@link GemmWorkspace}
 * @param slices the blocks each output tile's K loop is split over: 1, or more for a split-K instance
 * @param reductionBatch for a split-K instance, how many slices' partials the block that adds them
 *     loads before adding (0: one dependent load per slice and element, best at one or two rows;
 *     above 0: fewer round trips to L2, best from about 32 rows); 0 for any other instance. Either
 *     way the partials are added in slice order, so the result is the same bits run to run.
 * @param mainloop how the instance walks K: in threadblock tiles (on sm_90 also through {@code wgmma}), or
 *     GEMV-like, a warp per column
 * @param math how it multiplies: {@link MathMode#SIMT_FP32}, {@link MathMode#TF32X3} or {@link MathMode#TF32}
 *     (never {@link MathMode#FP32}, which asks the chooser)
 */
public record GemmConfig(String kernelName, Epilogue epilogue, int tileM, int tileN, int tileK, int stages,
        int threads, int sharedMemBytes, boolean bTransposed, int alignment, boolean splitK, int slices,
        int reductionBatch, Mainloop mainloop, MathMode math) {

    /** How an instance computes its output tile. */
    public enum Mainloop {
        /** CUTLASS-style threadblock tiles staged through shared memory by a cp.async pipeline. */
        TILED,
        /**
         * GEMV-like, for few rows: each warp (or group of warps, which then add their sums in shared
         * memory) owns a few output columns and its lanes walk K in 16-byte steps; no pipeline. B must
         * be stored [N, K]; K must be a multiple of 4 and A and B 16-byte aligned (both are read as
         * float4).
         */
        GEMV,
        /**
         * Threadblock tiles on the TF32 tensor cores of compute capability 9.0 through {@code wgmma}: one
         * warpgroup (4 warps) per 64 rows, B read by the tensor cores from shared memory. B must be stored
         * [N, K]; shipped in the sm_90 cubin only, so present on such devices only.
         */
        WGMMA
    }

    /** The epilogue fused after the main loop. */
    public enum Epilogue {
        /** {@code C = alpha * A * B + beta * C}. */
        LINEAR_COMBINATION,
        /** {@code D = max(A * B + bias[column], 0)}. */
        BIAS_RELU
    }

    /**
     * Checks the slice count, the reduction batch and what a GEMV instance needs.
     *
     * @throws IllegalArgumentException if {@code slices} is below 1, or above 1 for an instance that is not
     *     split-K, or {@code reductionBatch} is negative, or above 0 for an instance that is not split-K, or a
     *     GEMV instance splits K, takes B not transposed, or loads B otherwise than 4 floats at a time, or
     *     {@code math} is {@link MathMode#FP32} or a tensor-core math for a GEMV instance, or a WGMMA instance
     *     computes in SIMT or takes B not transposed
     * @throws NullPointerException if {@code mainloop} or {@code math} is null
     */
    public GemmConfig {
        Objects.requireNonNull(mainloop, "mainloop");
        Objects.requireNonNull(math, "math");
        if (math == MathMode.FP32 || (math.tensorCores() && mainloop == Mainloop.GEMV)) {
            throw new IllegalArgumentException(kernelName + ": an instance computes in SIMT_FP32, TF32X3 or TF32 "
                    + "(GEMV instances in SIMT_FP32), not " + math);
        }
        if (mainloop == Mainloop.WGMMA && (!math.tensorCores() || !bTransposed)) {
            throw new IllegalArgumentException(kernelName
                    + ": a WGMMA instance computes on the tensor cores and reads B stored [N, K]");
        }
        if (mainloop == Mainloop.GEMV && (splitK || !bTransposed || alignment != 4)) {
            throw new IllegalArgumentException(kernelName + ": a GEMV instance reads B stored [N, K] 4 floats at a "
                    + "time and does not split K");
        }
        if (slices < 1 || (!splitK && slices != 1)) {
            throw new IllegalArgumentException(kernelName + " cannot run with " + slices + " slices"
                    + (splitK ? "" : ": it does not split K"));
        }
        if (reductionBatch < 0 || (!splitK && reductionBatch != 0)) {
            throw new IllegalArgumentException(kernelName + " cannot have a reduction batch of " + reductionBatch
                    + (splitK ? "" : ": it does not split K"));
        }
    }

    /**
     * A tiled SIMT instance: split-K with a reduction batch, or any other.
     *
     * @param kernelName the {@code extern "C"} symbol
     * @param epilogue what it does after the main loop
     * @param tileM rows of C per threadblock
     * @param tileN columns of C per threadblock
     * @param tileK depth of one main-loop step
     * @param stages cp.async pipeline stages
     * @param threads threads per block
     * @param sharedMemBytes dynamic shared memory per block
     * @param bTransposed whether B is stored [N, K]
     * @param alignment elements per vector access of B
     * @param splitK whether the instance can split its K loop
     * @param slices the blocks each output tile's K loop is split over
     * @param reductionBatch slices' partials loaded per round by a split-K instance, else 0
     */
    public GemmConfig(String kernelName, Epilogue epilogue, int tileM, int tileN, int tileK, int stages, int threads,
            int sharedMemBytes, boolean bTransposed, int alignment, boolean splitK, int slices, int reductionBatch) {
        this(kernelName, epilogue, tileM, tileN, tileK, stages, threads, sharedMemBytes, bTransposed, alignment, splitK,
                slices, reductionBatch, Mainloop.TILED, MathMode.SIMT_FP32);
    }

    /**
     * A tiled split-K instance that adds its partials one slice at a time, or any other tiled instance.
     *
     * @param kernelName the {@code extern "C"} symbol
     * @param epilogue what it does after the main loop
     * @param tileM rows of C per threadblock
     * @param tileN columns of C per threadblock
     * @param tileK depth of one main-loop step
     * @param stages cp.async pipeline stages
     * @param threads threads per block
     * @param sharedMemBytes dynamic shared memory per block
     * @param bTransposed whether B is stored [N, K]
     * @param alignment elements per vector access of B
     * @param splitK whether the instance can split its K loop
     * @param slices the blocks each output tile's K loop is split over
     */
    public GemmConfig(String kernelName, Epilogue epilogue, int tileM, int tileN, int tileK, int stages, int threads,
            int sharedMemBytes, boolean bTransposed, int alignment, boolean splitK, int slices) {
        this(kernelName, epilogue, tileM, tileN, tileK, stages, threads, sharedMemBytes, bTransposed, alignment, splitK,
                slices, 0);
    }

    /**
     * An instance that does not split K.
     *
     * @param kernelName the {@code extern "C"} symbol
     * @param epilogue what it does after the main loop
     * @param tileM rows of C per threadblock
     * @param tileN columns of C per threadblock
     * @param tileK depth of one main-loop step
     * @param stages cp.async pipeline stages
     * @param threads threads per block
     * @param sharedMemBytes dynamic shared memory per block
     * @param bTransposed whether B is stored [N, K]
     * @param alignment elements per vector access of B
     */
    public GemmConfig(String kernelName, Epilogue epilogue, int tileM, int tileN, int tileK, int stages, int threads,
            int sharedMemBytes, boolean bTransposed, int alignment) {
        this(kernelName, epilogue, tileM, tileN, tileK, stages, threads, sharedMemBytes, bTransposed, alignment, false,
                1, 0);
    }

    /**
     * This instance with its K loop split over {@code slices} blocks per output tile.
     *
     * @param slices at least 1; more than 1 only for a split-K instance
     * @return a config that differs from this one in its slice count only
     * @throws IllegalArgumentException if {@code slices} is below 1, or above 1 for an instance that is not split-K
     */
    public GemmConfig withSlices(int slices) {
        return new GemmConfig(kernelName, epilogue, tileM, tileN, tileK, stages, threads, sharedMemBytes, bTransposed,
                alignment, splitK, slices, reductionBatch, mainloop, math);
    }

    /**
     * The floats per vector access of A: the alignment for a tensor-core instance, whose loader reads
     * A as it reads B; 4 for a GEMV instance; 1 for the other SIMT instances.
     *
     * @return 1 or 4
     */
    public int alignmentA() {
        return math.tensorCores() ? alignment : mainloop == Mainloop.GEMV ? 4 : 1;
    }

    /**
     * The grid that covers an {@code m x n} output: one block per tile and slice.
     *
     * @param m rows of the output, at least 1
     * @param n columns of the output, at least 1
     * @return ceil(m / tileM) x ceil(n / tileN) x slices blocks
     * @throws IllegalArgumentException if m or n is below 1
     */
    public Dim3 grid(int m, int n) {
        return Dim3.of(ceilDiv(m, tileM), ceilDiv(n, tileN), slices);
    }

    /**
     * The most slices a K of this depth can be split into: one k-tile each.
     *
     * @param k columns of A, at least 1
     * @return ceil(k / tileK) for a split-K instance, else 1
     */
    public int maxSlices(int k) {
        return splitK ? ceilDiv(k, tileK) : 1;
    }

    static int ceilDiv(int value, int divisor) {
        return (value + divisor - 1) / divisor;
    }
}
