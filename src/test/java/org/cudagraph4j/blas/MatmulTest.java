package org.cudagraph4j.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.cudagraph4j.ElementType;
import org.junit.jupiter.api.Test;

/** A product's shapes, types and compute type are checked when it is described, before any GPU or cuBLASLt. */
class MatmulTest {
    private static final ElementType BF16 = ElementType.BFLOAT16;
    private static final ElementType F32 = ElementType.FLOAT32;

    @Test
    void aLinearLayerIsXTimesTheTransposedWeight() {
        Matmul linear = Matmul.of(MatrixLayout.rowMajor(BF16, 8, 512), Matmul.Op.NONE, MatrixLayout.rowMajor(BF16, 2048, 512),
                Matmul.Op.TRANSPOSE, MatrixLayout.rowMajor(BF16, 8, 2048)).withEpilogue(MatmulEpilogue.RELU_BIAS);

        assertEquals(8, linear.m());
        assertEquals(2048, linear.n());
        assertEquals(512, linear.k());
        assertEquals(2048, linear.biasLength(), "one bias per output feature: a column of row-major D");
        assertEquals(2.0 * 8 * 2048 * 512, linear.flops());
        assertEquals(MatmulCompute.FP32, linear.compute());
        assertEquals(Matmul.DEFAULT_ALIGNMENT, linear.alignment());
    }

    @Test
    void aColumnMajorDTakesOneBiasPerRow() {
        Matmul product = Matmul.of(MatrixLayout.columnMajor(F32, 40, 72), MatrixLayout.columnMajor(F32, 72, 24),
                MatrixLayout.columnMajor(F32, 40, 24));

        assertEquals(40, product.biasLength());
    }

    @Test
    void shapesThatDoNotChainAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Matmul.of(
                MatrixLayout.rowMajor(F32, 8, 64), MatrixLayout.rowMajor(F32, 32, 64), MatrixLayout.rowMajor(F32, 8, 32)));

        assertEquals("op(A) is 8 x 64 and op(B) 32 x 64, so D must be 8 x 64 and op(A)'s columns must equal op(B)'s"
                + " rows; got A FLOAT32[8 x 64, ROW_MAJOR, ld 64] NONE, B FLOAT32[32 x 64, ROW_MAJOR, ld 64] NONE,"
                + " D FLOAT32[8 x 32, ROW_MAJOR, ld 32]", e.getMessage());
    }

    @Test
    void typesGoTogetherAsCublasLtTakesThem() {
        MatrixLayout a = MatrixLayout.rowMajor(BF16, 4, 4);
        assertEquals(F32, Matmul.of(a, a, MatrixLayout.rowMajor(F32, 4, 4)).d().type(), "BF16 inputs may give FP32");
        assertEquals("A and B must hold one element type, got BFLOAT16 and FLOAT16", assertThrows(
                IllegalArgumentException.class, () -> Matmul.of(a, MatrixLayout.rowMajor(ElementType.FLOAT16, 4, 4), a))
                .getMessage());
        assertEquals("FLOAT32 inputs give a D of FLOAT32 or FLOAT32, not BFLOAT16", assertThrows(IllegalArgumentException.class, () -> Matmul.of(
                        MatrixLayout.rowMajor(F32, 4, 4), MatrixLayout.rowMajor(F32, 4, 4), a)).getMessage());
        assertEquals("FP32_FAST_TF32 rounds FLOAT32 inputs; BFLOAT16 inputs multiply with MatmulCompute.FP32",
                assertThrows(IllegalArgumentException.class,
                        () -> Matmul.of(a, a, a).withCompute(MatmulCompute.FP32_FAST_TF32)).getMessage());
    }

    @Test
    void alignmentIsAPowerOfTwoFromTheElementSizeTo256Bytes() {
        MatrixLayout a = MatrixLayout.rowMajor(F32, 4, 4);
        Matmul product = Matmul.of(a, a, a);

        assertEquals(16, product.withAlignment(16).alignment());
        for (int bad : new int[] {0, 2, 12, 512}) {
            assertThrows(IllegalArgumentException.class, () -> product.withAlignment(bad), "alignment " + bad);
        }
    }

    @Test
    void layoutsCheckTheirTypeShapeAndLeadingDimension() {
        assertEquals(3 * 10 + 7, new MatrixLayout(F32, 4, 7, MatrixLayout.Order.ROW_MAJOR, 10).span());
        assertEquals(6 * 9 + 4, new MatrixLayout(F32, 4, 7, MatrixLayout.Order.COLUMN_MAJOR, 9).span());
        assertEquals("a 4 x 7 ROW_MAJOR matrix needs a leading dimension of at least 7, got 6",
                assertThrows(IllegalArgumentException.class,
                        () -> new MatrixLayout(F32, 4, 7, MatrixLayout.Order.ROW_MAJOR, 6)).getMessage());
        assertEquals("a matrix for cuBLASLt holds FLOAT32, FLOAT16 or BFLOAT16, not INT32",
                assertThrows(IllegalArgumentException.class, () -> MatrixLayout.rowMajor(ElementType.INT32, 4, 4))
                        .getMessage());
        assertThrows(IllegalArgumentException.class, () -> MatrixLayout.columnMajor(F32, 0, 4));
    }
}
