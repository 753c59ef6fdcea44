package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/**
 * The factories put each operand in its role, and the checks that need no buffer name what is
 * wrong; the buffers' own checks run on the GPU (SgemmTest).
 */
class GemmOperandsTest {
    @Test
    void aLinearCombinationKeepsItsFactorsAndLayoutAndHasNoBias() {
        GemmOperands linear = GemmOperands.linearCombination(7, 5, 3, 1.5f, null, null, true, -0.75f, null);
        assertEquals(new GemmOperands(7, 5, 3, 1.5f, null, null, true, -0.75f, null, null), linear);
        assertNull(linear.bias());
        assertEquals(GemmConfig.Epilogue.LINEAR_COMBINATION, linear.epilogue());
        assertEquals(3, linear.ldb(), "B stored [n, k] has k floats a row");
        assertEquals(5, GemmOperands.linearCombination(7, 5, 3, 1f, null, null, false, 0f, null).ldb());
    }

    @Test
    void biasReluNeedsItsBias() {
        NullPointerException missing = assertThrows(NullPointerException.class,
                () -> GemmOperands.biasRelu(32, 512, 256, null, null, true, null, null));
        assertEquals("bias", missing.getMessage());
    }

    @Test
    void theDimensionsAreCheckedFirstAndAMissingMatrixIsNamed() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                () -> GemmOperands.linearCombination(0, 1, 1, 1f, null, null, false, 0f, null).check());
        assertEquals("sgemm needs m, n, k >= 1, got m=0, n=1, k=1", zero.getMessage());
        NullPointerException a = assertThrows(NullPointerException.class,
                () -> GemmOperands.linearCombination(2, 2, 2, 1f, null, null, false, 0f, null).check());
        assertEquals("A", a.getMessage());
    }
}
