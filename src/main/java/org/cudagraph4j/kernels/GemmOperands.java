package org.cudagraph4j.kernels;

import java.util.Objects;
import org.cudagraph4j.DeviceBuffer;

/**
 * The operands of one sgemm, as {@link Sgemm#multiply(org.cudagraph4j.CudaStream, GemmOperands, GemmWorkspace)}
 * takes them: {@code C = alpha * A * op(B) + beta * C} without a bias, or
 * {@code D = max(A * op(B) + bias[column], 0)} with one, where op(B) is B, or Bᵀ when B is stored
 * [n, k]. Make one with {@link #linearCombination} or {@link #biasRelu}, which name each operand's
 * role. {@code multiply} checks them before it launches: first what holds whatever instance runs
 * (dimensions, buffer types and lengths, overlap), then what the instance needs.
 *
 * <p>Thread safety: immutable, though the buffers it names are not.
 *
 * @param m rows of A and of the output, at least 1
 * @param n columns of op(B) and of the output, at least 1
 * @param k columns of A and rows of op(B), at least 1
 * @param alpha the factor of the product (1 for bias+ReLU)
 * @param a A, [m, k] floats
 * @param b B, [k, n] floats, or [n, k] if {@code bTransposed}
 * @param bTransposed whether B is stored [n, k] (as {@code torch.nn.Linear} stores its weight)
 * @param beta the factor of C's old value (0 for bias+ReLU); with 0, C is not read
 * @param c the output, [m, n] floats; must not overlap A or B
 * @param bias n floats for bias+ReLU, else null
 */
public record GemmOperands(int m, int n, int k, float alpha, DeviceBuffer a, DeviceBuffer b, boolean bTransposed,
        float beta, DeviceBuffer c, DeviceBuffer bias) {

    /**
     * Operands of {@code C = alpha * A * op(B) + beta * C}.
     *
     * @param m rows of A and of C, at least 1
     * @param n columns of op(B) and of C, at least 1
     * @param k columns of A and rows of op(B), at least 1
     * @param alpha the factor of the product
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] if {@code bTransposed}
     * @param bTransposed whether B is stored [n, k]
     * @param beta the factor of C's old value; with 0, C is not read
     * @param c C, [m, n] floats; must not overlap A or B
     * @return the operands, without a bias
     */
    public static GemmOperands linearCombination(int m, int n, int k, float alpha, DeviceBuffer a, DeviceBuffer b,
            boolean bTransposed, float beta, DeviceBuffer c) {
        return new GemmOperands(m, n, k, alpha, a, b, bTransposed, beta, c, null);
    }

    /**
     * Operands of {@code D = max(A * op(B) + bias[column], 0)}, the fused Linear.
     *
     * @param m rows of A and of D, at least 1
     * @param n columns of op(B) and of D, at least 1
     * @param k columns of A and rows of op(B), at least 1
     * @param a A, [m, k] floats
     * @param b B, [k, n] floats, or [n, k] if {@code bTransposed}
     * @param bTransposed whether B is stored [n, k] (as {@code torch.nn.Linear} stores its weight)
     * @param bias n floats, one per column
     * @param d D, [m, n] floats, only written; must not overlap A or B
     * @return the operands, with alpha 1 and beta 0
     * @throws NullPointerException if {@code bias} is null: without one these would be a plain product
     */
    public static GemmOperands biasRelu(int m, int n, int k, DeviceBuffer a, DeviceBuffer b, boolean bTransposed,
            DeviceBuffer bias, DeviceBuffer d) {
        Objects.requireNonNull(bias, "bias");
        return new GemmOperands(m, n, k, 1f, a, b, bTransposed, 0f, d, bias);
    }

    /**
     * The epilogue these operands call for.
     *
     * @return {@link GemmConfig.Epilogue#BIAS_RELU} with a bias, else {@link GemmConfig.Epilogue#LINEAR_COMBINATION}
     */
    public GemmConfig.Epilogue epilogue() {
        return bias == null ? GemmConfig.Epilogue.LINEAR_COMBINATION : GemmConfig.Epilogue.BIAS_RELU;
    }

    /**
     * Checks what holds whatever instance runs.
     *
     * @throws IllegalArgumentException if a dimension is below 1, a buffer does not hold FLOAT32 or is shorter
     *     than its matrix, or C overlaps A or B
     * @throws NullPointerException naming the matrix, if A, B or C is null
     */
    void check() {
        MatrixChecks.requireDimensions(m, n, k);
        MatrixChecks.requireFloats("A", a, (long) m * k);
        MatrixChecks.requireFloats("B", b, (long) k * n);
        MatrixChecks.requireFloats("C", c, (long) m * n);
        if (bias != null) {
            MatrixChecks.requireFloats("bias", bias, n);
        }
        if (MatrixChecks.overlaps(c, a) || MatrixChecks.overlaps(c, b)) {
            throw new IllegalArgumentException("the output of sgemm must not overlap its inputs");
        }
    }

    /**
     * B's leading dimension.
     *
     * @return k where B is stored [n, k], else n
     */
    int ldb() {
        return bTransposed ? k : n;
    }
}
