package org.cudagraph4j.blas;

/**
 * What cuBLASLt applies to the product before it writes D. The bias has one element per output
 * feature: per column of a row-major D, per row of a column-major D (see {@link Matmul#biasLength()}),
 * of D's element type. The sum and activation are computed in FP32 and rounded once into D.
 */
public enum MatmulEpilogue {
    /** {@code D = alpha op(A) op(B) + beta C}. */
    NONE(false),
    /** {@code relu(…)}. */
    RELU(false),
    /** {@code … + bias}. */
    BIAS(true),
    /** {@code relu(… + bias)}: a Linear layer followed by ReLU. */
    RELU_BIAS(true),
    /** {@code gelu(…)}, cuBLASLt's tanh approximation of GELU. */
    GELU(false),
    /** {@code gelu(… + bias)}, cuBLASLt's tanh approximation of GELU. */
    GELU_BIAS(true);

    private final boolean bias;

    MatmulEpilogue(boolean bias) {
        this.bias = bias;
    }

    /** {@return whether a matmul with this epilogue reads a bias vector} */
    public boolean hasBias() {
        return bias;
    }
}
