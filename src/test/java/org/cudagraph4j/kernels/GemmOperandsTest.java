package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The factories put each operand in its role; {@code Sgemm.multiply} checks the buffers themselves (gpu tests). */
class GemmOperandsTest {
    @Test
    void biasReluIsTheProductPlusBiasWithAlphaOneAndBetaZero() {
        GemmOperands fused = GemmOperands.biasRelu(32, 512, 256, null, null, null, null);
        assertEquals(new GemmOperands(32, 512, 256, 1f, null, null, 0f, null, null), fused);
    }

    @Test
    void aLinearCombinationKeepsItsFactorsAndHasNoBias() {
        GemmOperands linear = GemmOperands.linearCombination(7, 5, 3, 1.5f, null, null, -0.75f, null);
        assertEquals(1.5f, linear.alpha());
        assertEquals(-0.75f, linear.beta());
        assertEquals(7, linear.m());
        assertEquals(5, linear.n());
        assertEquals(3, linear.k());
        assertNull(linear.bias());
    }
}
