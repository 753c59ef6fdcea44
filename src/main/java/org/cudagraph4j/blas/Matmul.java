package org.cudagraph4j.blas;

import java.util.Objects;
import org.cudagraph4j.ElementType;

/**
 * One matrix product as cuBLASLt computes it: {@code D = epilogue(alpha op(A) op(B) + beta C)},
 * with op(A) m x k, op(B) k x n and C and D m x n, C laid out as D. A value that describes the
 * shapes and types only; a {@link MatmulPlan} from {@link CublasLt#plan(Matmul)} runs it on
 * buffers.
 *
 * <p>Types, as cuBLASLt takes them: A and B of one type; FP32 A and B give an FP32 D; FP16 or
 * BF16 A and B give D of their own type or FP32. Every product accumulates in FP32.
 *
 * <p>A PyTorch {@code Linear} layer {@code y = x Wᵀ + b}, with row-major x [batch, in], W [out, in]
 * and y [batch, out]:
 * {@snippet :
 * Matmul linear = Matmul.of(MatrixLayout.rowMajor(BFLOAT16, batch, in), Matmul.Op.NONE,
 *                 MatrixLayout.rowMajor(BFLOAT16, out, in), Matmul.Op.TRANSPOSE,
 *                 MatrixLayout.rowMajor(BFLOAT16, batch, out))
 *         .withEpilogue(MatmulEpilogue.RELU_BIAS);
 * }
 *
 * <p>Thread safety: an immutable value.
 *
 * @param a A's layout
 * @param opA whether A is used as stored or transposed
 * @param b B's layout
 * @param opB whether B is used as stored or transposed
 * @param d D's (and C's) layout
 * @param compute how the products are computed
 * @param epilogue what is applied before D is written
 * @param alignment the byte alignment that every operand's address will have, which lets cuBLASLt
 *     choose vectorized algorithms: a power of two from the element size to 256 ({@code cudaMalloc}'s)
 */
public record Matmul(MatrixLayout a, Op opA, MatrixLayout b, Op opB, MatrixLayout d, MatmulCompute compute,
        MatmulEpilogue epilogue, int alignment) {
    /** The alignment of a fresh allocation, and the default. */
    public static final int DEFAULT_ALIGNMENT = 256;

    /** Whether an operand is used as stored. */
    public enum Op {
        /** As stored. */
        NONE,
        /** Transposed. */
        TRANSPOSE
    }

    /**
     * Checks that the operands chain and that cuBLASLt takes their types with {@code compute}.
     *
     * @throws IllegalArgumentException naming the mismatch, if op(A) is not m x k, op(B) k x n and D m x n; if A
     *     and B differ in type or D's type does not go with theirs; if {@code compute} does not go with the
     *     input type; or if the alignment is not a power of two between the element size and 256
     * @throws NullPointerException if an argument is null
     */
    public Matmul {
        Objects.requireNonNull(a, "a");
        Objects.requireNonNull(opA, "opA");
        Objects.requireNonNull(b, "b");
        Objects.requireNonNull(opB, "opB");
        Objects.requireNonNull(d, "d");
        Objects.requireNonNull(compute, "compute");
        Objects.requireNonNull(epilogue, "epilogue");
        long m = opA == Op.NONE ? a.rows() : a.columns();
        long k = opA == Op.NONE ? a.columns() : a.rows();
        long kB = opB == Op.NONE ? b.rows() : b.columns();
        long n = opB == Op.NONE ? b.columns() : b.rows();
        if (k != kB || d.rows() != m || d.columns() != n) {
            throw new IllegalArgumentException("op(A) is " + m + " x " + k + " and op(B) " + kB + " x " + n
                    + ", so D must be " + m + " x " + n + (k != kB ? " and op(A)'s columns must equal op(B)'s rows" : "")
                    + "; got A " + a + " " + opA + ", B " + b + " " + opB + ", D " + d);
        }
        if (a.type() != b.type()) {
            throw new IllegalArgumentException("A and B must hold one element type, got " + a.type() + " and "
                    + b.type());
        }
        if (d.type() != a.type() && d.type() != ElementType.FLOAT32) {
            throw new IllegalArgumentException(a.type() + " inputs give a D of " + a.type() + " or FLOAT32, not "
                    + d.type());
        }
        if (a.type() != ElementType.FLOAT32 && compute != MatmulCompute.FP32) {
            throw new IllegalArgumentException(compute + " rounds FLOAT32 inputs; " + a.type()
                    + " inputs multiply with MatmulCompute.FP32");
        }
        if (Integer.bitCount(alignment) != 1 || alignment < d.type().byteSize() || alignment < a.type().byteSize()
                || alignment > DEFAULT_ALIGNMENT) {
            throw new IllegalArgumentException("alignment must be a power of two from the element size to "
                    + DEFAULT_ALIGNMENT + " bytes, got " + alignment);
        }
    }

    /**
     * {@code D = A B}, both as stored, with FP32 accumulation, no epilogue and 256-byte alignment.
     *
     * @param a A, m x k
     * @param b B, k x n
     * @param d D, m x n
     * @return the product
     * @throws IllegalArgumentException as the canonical constructor
     */
    public static Matmul of(MatrixLayout a, MatrixLayout b, MatrixLayout d) {
        return of(a, Op.NONE, b, Op.NONE, d);
    }

    /**
     * {@code D = op(A) op(B)} with FP32 accumulation, no epilogue and 256-byte alignment.
     *
     * @param a A as stored
     * @param opA how A is used
     * @param b B as stored
     * @param opB how B is used
     * @param d D, m x n
     * @return the product
     * @throws IllegalArgumentException as the canonical constructor
     */
    public static Matmul of(MatrixLayout a, Op opA, MatrixLayout b, Op opB, MatrixLayout d) {
        return new Matmul(a, opA, b, opB, d, MatmulCompute.FP32, MatmulEpilogue.NONE, DEFAULT_ALIGNMENT);
    }

    /**
     * {@return this product computed as {@code compute} says}
     *
     * @param compute how to multiply
     * @throws IllegalArgumentException if {@code compute} does not go with the input type
     */
    public Matmul withCompute(MatmulCompute compute) {
        return new Matmul(a, opA, b, opB, d, compute, epilogue, alignment);
    }

    /**
     * {@return this product with {@code epilogue} applied before D is written}
     *
     * @param epilogue the epilogue
     */
    public Matmul withEpilogue(MatmulEpilogue epilogue) {
        return new Matmul(a, opA, b, opB, d, compute, epilogue, alignment);
    }

    /**
     * {@return this product for operands aligned to only {@code bytes}, e.g. 16 for views at any
     * 8-element offset of FP16 data; cuBLASLt may then choose a slower algorithm}
     *
     * @param bytes a power of two from the element size to 256
     * @throws IllegalArgumentException if it is not
     */
    public Matmul withAlignment(int bytes) {
        return new Matmul(a, opA, b, opB, d, compute, epilogue, bytes);
    }

    /** {@return the rows of op(A) and D} */
    public long m() {
        return d.rows();
    }

    /** {@return the columns of op(B) and D} */
    public long n() {
        return d.columns();
    }

    /** {@return the columns of op(A) and rows of op(B)} */
    public long k() {
        return opA == Op.NONE ? a.columns() : a.rows();
    }

    /**
     * {@return the elements of the bias an epilogue with a bias reads: one per column of a row-major
     * D, one per row of a column-major D}
     */
    public long biasLength() {
        return d.order() == MatrixLayout.Order.ROW_MAJOR ? d.columns() : d.rows();
    }

    /** {@return the floating-point operations of one product, 2 m n k, for throughput figures} */
    public double flops() {
        return 2.0 * m() * n() * k();
    }

    /** {@return the operands, transposes, epilogue and compute type, for messages} */
    @Override
    public String toString() {
        return a + (opA == Op.TRANSPOSE ? "ᵀ" : "") + " x " + b + (opB == Op.TRANSPOSE ? "ᵀ" : "")
                + " -> " + d + ", " + epilogue + ", " + compute + (alignment == DEFAULT_ALIGNMENT ? ""
                : ", aligned to " + alignment);
    }
}
