package org.cudagraph4j.kernels;

import org.cudagraph4j.DeviceBuffer;

/**
 * The operands of one sgemm, for {@link Sgemm#multiply(org.cudagraph4j.CudaStream, GemmConfig, GemmOperands,
 * GemmWorkspace)}: {@code C = alpha * A * op(B) + beta * C} for a linear-combination instance, or
 * {@code D = max(A * op(B) + bias[column], 0)} for a bias+ReLU one, where op(B) is B, or Bᵀ for an
 * instance that takes B stored [N, K]. Make one with {@link #linearCombination} or {@link #biasRelu},
 * which name each operand's role; {@code multiply} checks them against the instance.
 *
 * <p>Thread safety: immutable, though the buffers it names are not.
 *
 * @param m rows of A and of the output
 * @param n columns of op(B) and of the output
 * @param k columns of A and rows of op(B)
 * @param alpha the factor of the product (1 for bias+ReLU)
 * @param a A, [m, k] floats
 * @param b B, [k, n] floats, or [n, k] for an instance that takes B transposed
 * @param beta the factor of C's old value (0 for bias+ReLU); with 0, C is not read
 * @param c the output, [m, n] floats; must not overlap A or B
 * @param bias n floats for bias+ReLU, else null
 */
public record GemmOperands(int m, int n, int k, float alpha, DeviceBuffer a, DeviceBuffer b, float beta,
        DeviceBuffer c, DeviceBuffer bias) {

    /**
     * Operands of {@code C = alpha * A * op(B) + beta * C}.
     *
     * @param m rows of A and of C
     * @param n columns of op(B) and of C
     * @param k columns of A and rows of op(B)
     * @param alpha the factor of the product
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] for an instance that takes B transposed
     * @param beta the factor of C's old value; with 0, C is not read
     * @param c C, [m, n] floats
     * @return the operands, without a bias
     */
    public static GemmOperands linearCombination(int m, int n, int k, float alpha, DeviceBuffer a, DeviceBuffer b,
            float beta, DeviceBuffer c) {
        return new GemmOperands(m, n, k, alpha, a, b, beta, c, null);
    }

    /**
     * Operands of {@code D = max(A * op(B) + bias[column], 0)}, the fused Linear.
     *
     * @param m rows of A and of D
     * @param n columns of op(B) and of D
     * @param k columns of A and rows of op(B)
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] for an instance that takes B transposed
     * @param bias n floats, one per column
     * @param d D, [m, n] floats, only written
     * @return the operands, with alpha 1 and beta 0
     */
    public static GemmOperands biasRelu(int m, int n, int k, DeviceBuffer a, DeviceBuffer b, DeviceBuffer bias,
            DeviceBuffer d) {
        return new GemmOperands(m, n, k, 1f, a, b, 0f, d, bias);
    }
}
