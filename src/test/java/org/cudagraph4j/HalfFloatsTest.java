package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The 16-bit float conversions, over all 65,536 values of each format: widening against a decoder
 * written from the formats' definitions, and narrowing at every value, at every half-way point
 * between neighbours (ties to even) and just either side of it. No GPU needed.
 */
class HalfFloatsTest {
    private static final int VALUES = 1 << 16;

    @Test
    void everyFloat16AndBfloat16WidensToTheValueItsBitsDefine() {
        for (boolean bfloat : new boolean[] {false, true}) {
            for (int bits = 0; bits < VALUES; bits++) {
                double widened = widen(bits, bfloat);
                double expected = bfloat ? decode(bits, 8, 7) : decode(bits, 5, 10);
                String what = (bfloat ? "bfloat16 " : "float16 ") + hex(bits);
                if (Double.isNaN(expected)) {
                    assertTrue(Double.isNaN(widened), what);
                } else {
                    assertEquals(expected, widened, 0, what);
                    assertEquals(bits >> 15, signBit((float) widened), what);
                }
            }
        }
    }

    @Test
    void everyFloat16AndBfloat16SurvivesARoundTripBitForBitAndNaNStaysNaN() {
        for (int bits = 0; bits < VALUES; bits++) {
            short half = (short) bits;
            short halfBack = HalfFloats.floatToFloat16(HalfFloats.float16ToFloat(half));
            short bfloatBack = HalfFloats.floatToBfloat16(HalfFloats.bfloat16ToFloat(half));
            if (Float.isNaN(HalfFloats.float16ToFloat(half))) {
                assertTrue(Float.isNaN(HalfFloats.float16ToFloat(halfBack)), hex(bits));
            } else {
                assertEquals(half, halfBack, hex(bits));
            }
            if (Float.isNaN(HalfFloats.bfloat16ToFloat(half))) {
                assertTrue(Float.isNaN(HalfFloats.bfloat16ToFloat(bfloatBack)), hex(bits));
                assertEquals(bits >> 15, (bfloatBack & 0xFFFF) >> 15, "a NaN keeps its sign: " + hex(bits));
            } else {
                assertEquals(half, bfloatBack, hex(bits));
            }
        }
    }

    @Test
    void narrowingRoundsToNearestWithTiesToEvenBetweenEveryPairOfNeighbours() {
        for (boolean bfloat : new boolean[] {false, true}) {
            for (int bits = 0; bits < VALUES; bits++) {
                int next = (bits & 0x7FFF) == 0x7FFF ? -1 : bits + 1; // the neighbour away from zero
                double low = widen(bits, bfloat);
                double high = next < 0 ? Double.NaN : widen(next, bfloat);
                if (Double.isNaN(low) || Double.isNaN(high) || Double.isInfinite(low) || Double.isInfinite(high)) {
                    continue; // the step to infinity: floatsBeyondTheRangeBecomeInfinity
                }
                // Half-way to the neighbour, which is exact in float (it has 13 or more bits to spare).
                float midpoint = (float) ((low + high) / 2);
                assertEquals((low + high) / 2, midpoint, 0, "the midpoint is a float: " + hex(bits));
                int even = (bits & 1) == 0 ? bits : next;
                assertEquals(even, narrow(midpoint, bfloat), (bfloat ? "bfloat16 " : "float16 ") + hex(bits));
                assertEquals(bits, narrow(Math.nextAfter(midpoint, 0.0), bfloat), hex(bits) + " just under");
                assertEquals(next, narrow(Math.nextAfter(midpoint, Math.copySign(Double.POSITIVE_INFINITY, midpoint)), bfloat), hex(bits) + " just over");
            }
        }
    }

    @Test
    void floatsBeyondTheRangeBecomeInfinityAndNaNsStayQuietNaNs() {
        assertEquals((short) 0x7C00, HalfFloats.floatToFloat16(65520f), "half-way past 65504 rounds to infinity");
        assertEquals((short) 0x7BFF, HalfFloats.floatToFloat16(65519.996f));
        assertEquals((short) 0xFC00, HalfFloats.floatToFloat16(-1e10f));
        assertEquals((short) 0x7F80, HalfFloats.floatToBfloat16(Float.MAX_VALUE), "bfloat16's largest is below it");
        assertEquals((short) 0xFF80, HalfFloats.floatToBfloat16(Float.NEGATIVE_INFINITY));
        float signalling = Float.intBitsToFloat(0x7F800001); // its payload lies below bfloat16's bits
        assertEquals((short) 0x7FC0, HalfFloats.floatToBfloat16(signalling), "not infinity: a quiet NaN");
        assertEquals((short) 0xFFC0, HalfFloats.floatToBfloat16(Float.intBitsToFloat(0xFFC00000)));
        assertEquals((short) 0x8000, HalfFloats.floatToBfloat16(-0f));
        assertEquals((short) 0x0000, HalfFloats.floatToFloat16(Float.MIN_VALUE), "below half of the least subnormal");
    }

    @Test
    void arraysConvertElementByElementAndOtherTypesAreRefused() {
        float[] values = {1f, -2.5f, 1e-8f, 3.14159f, Float.NaN};
        short[] bfloats = HalfFloats.fromFloats(values, ElementType.BFLOAT16);
        for (int i = 0; i < values.length; i++) {
            assertEquals(HalfFloats.floatToBfloat16(values[i]), bfloats[i]);
        }
        assertArrayEquals(new float[] {1f, -2.5f}, Arrays.copyOf(
                HalfFloats.toFloats(HalfFloats.fromFloats(values, ElementType.FLOAT16), ElementType.FLOAT16), 2));
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> HalfFloats.fromFloats(values, ElementType.FLOAT32));
        assertEquals("FLOAT32 is not a 16-bit float type: use FLOAT16 or BFLOAT16", refused.getMessage());
        assertEquals(2, ElementType.FLOAT16.byteSize());
        assertEquals(2, ElementType.BFLOAT16.byteSize());
    }

    /** The value of a sign-exponent-fraction encoding, from its definition: bias 2^(e-1) - 1, subnormals below. */
    private static double decode(int bits, int exponentBits, int fractionBits) {
        int sign = bits >> (exponentBits + fractionBits) & 1;
        int exponent = bits >> fractionBits & ((1 << exponentBits) - 1);
        int fraction = bits & ((1 << fractionBits) - 1);
        int bias = (1 << (exponentBits - 1)) - 1;
        double magnitude;
        if (exponent == (1 << exponentBits) - 1) {
            magnitude = fraction == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
        } else if (exponent == 0) {
            magnitude = fraction * Math.pow(2, 1 - bias - fractionBits);
        } else {
            magnitude = (1 + fraction / (double) (1 << fractionBits)) * Math.pow(2, exponent - bias);
        }
        return sign == 1 ? -magnitude : magnitude;
    }

    private static double widen(int bits, boolean bfloat) {
        return bfloat ? HalfFloats.bfloat16ToFloat((short) bits) : HalfFloats.float16ToFloat((short) bits);
    }

    private static int narrow(float value, boolean bfloat) {
        return (bfloat ? HalfFloats.floatToBfloat16(value) : HalfFloats.floatToFloat16(value)) & 0xFFFF;
    }

    private static int signBit(float value) {
        return Float.floatToRawIntBits(value) >>> 31;
    }

    private static String hex(int bits) {
        return String.format("0x%04X", bits);
    }
}
