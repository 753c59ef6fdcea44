package org.cudagraph4j.kernels;

/**
 * How an sgemm multiplies FP32 matrices: on CUDA cores, or on the TF32 tensor cores (sm_80 and
 * newer; every shipped architecture has them). Accuracy measured on the H200 against a float64
 * reference (normal, uniform and wide-exponent data, K from 256 to 16384, the maximum over M x N =
 * 256 x 256 of |error| / sum of |a*b| over k): SIMT FP32 2.0e-7 to 1.2e-6, 3xTF32 4.0e-8 to 9.6e-7,
 * TF32 3.2e-5 to 1.6e-3 ({@code kernels/PERFORMANCE.md}, "Tensor cores" and "wgmma").
 */
public enum MathMode {
    /**
     * FP32 accuracy, the fastest way the library knows: SIMT, or 3xTF32 where it was measured both
     * faster and at least as accurate as SIMT (K of 1024 or more, 2048 or more for the {@code wgmma}
     * tiles of compute capability 9.0, and the shapes where the tensor-core tiles won). The default.
     */
    FP32,
    /** FP32 fused multiply-adds on CUDA cores only, the kernels of earlier releases: the same bits as they gave. */
    SIMT_FP32,
    /**
     * 3xTF32 on the tensor cores for every shape: each operand split into two TF32 parts, three products
     * per term, the tensor cores' sums promoted to FP32 every 8 to 32 terms. As accurate as SIMT FP32
     * from K of about 1024, faster on large problems (at 4096³ on the H200, 60.0 against 47.2 TFLOP/s
     * with B [k, n], and with B [n, k] 78.8 through {@code wgmma} against 42.0: 1.57 times cuBLAS FP32);
     * at small K with a wide exponent range somewhat less accurate (9.6e-7 against 6.4e-7 at K = 256).
     */
    TF32X3,
    /**
     * One TF32 product per term (operands truncated to 10 mantissa bits): about 2.5 times the speed of
     * 3xTF32 (148 to 197 TFLOP/s at 4096³ on the H200) and 3.4e-5 to 1.6e-3 error. Opt-in only, for
     * work that tolerates it.
     */
    TF32;

    /** {@return whether kernels of this mode run on the tensor cores} */
    public boolean tensorCores() {
        return this == TF32X3 || this == TF32;
    }
}
