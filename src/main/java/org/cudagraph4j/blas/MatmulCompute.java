package org.cudagraph4j.blas;

/**
 * How cuBLASLt multiplies and accumulates. Every type accumulates in FP32 and scales in FP32; they
 * differ in what the tensor cores are fed. FP16 and BF16 matrices multiply exactly on the tensor
 * cores with {@link #FP32}, the only type they take. FP32 matrices take any of them.
 */
public enum MatmulCompute {
    /** Full FP32 products ({@code CUBLAS_COMPUTE_32F}): FP32 inputs on the CUDA cores; FP16 and BF16 inputs on the tensor cores. */
    FP32,
    /** FP32 inputs rounded to TF32, 10 bits of mantissa, on the tensor cores ({@code CUBLAS_COMPUTE_32F_FAST_TF32}). */
    FP32_FAST_TF32,
    /** FP32 inputs rounded to BF16 on the tensor cores ({@code CUBLAS_COMPUTE_32F_FAST_16BF}). */
    FP32_FAST_BF16,
    /** FP32 inputs rounded to FP16 on the tensor cores ({@code CUBLAS_COMPUTE_32F_FAST_16F}). */
    FP32_FAST_FP16,
    /**
     * FP32 emulated with three BF16 terms per input on the tensor cores
     * ({@code CUBLAS_COMPUTE_32F_EMULATED_16BFX9}), within FP32's accuracy; NVIDIA made it for
     * Blackwell's BF16 rate, and cuBLAS 13.0 runs it on an H200 too. A GPU whose cuBLASLt has no
     * algorithm for it refuses the plan with {@code CUBLAS_STATUS_NOT_SUPPORTED}.
     */
    FP32_EMULATED_BF16X9
}
