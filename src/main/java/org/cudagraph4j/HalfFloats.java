package org.cudagraph4j;

import java.util.Objects;

/**
 * Exact host conversions between {@code float} and the two 16-bit float formats of
 * {@link ElementType#FLOAT16} and {@link ElementType#BFLOAT16}, whose values Java holds as the
 * {@code short} of their bits.
 *
 * <p>Narrowing rounds to nearest, ties to even, as CUDA's {@code __float2half_rn} and
 * {@code __float2bfloat16_rn} do: a float too large for the format becomes infinity, a NaN stays a
 * NaN (quiet, with the sign and as much of the payload as fits), infinities and signed zeros are
 * kept. Widening is exact: every 16-bit value is a float.
 *
 * <p>Thread safety: stateless; every method may be called from any thread.
 */
public final class HalfFloats {
    private static final int BFLOAT16_QUIET_BIT = 0x0040;

    private HalfFloats() {}

    /**
     * {@return the float that the IEEE 754 binary16 value with these bits is, exactly}
     *
     * @param bits the half's bits, as a {@link ElementType#FLOAT16} buffer holds them
     */
    public static float float16ToFloat(short bits) {
        return Float.float16ToFloat(bits);
    }

    /**
     * {@return the bits of the IEEE 754 binary16 value nearest {@code value}, ties to even}
     *
     * @param value any float; beyond ±65504 (and the half-way point above it) it becomes infinity
     */
    public static short floatToFloat16(float value) {
        return Float.floatToFloat16(value);
    }

    /**
     * {@return the float that the bfloat16 value with these bits is, exactly: the bits are a
     * float's upper half}
     *
     * @param bits the bfloat16's bits, as a {@link ElementType#BFLOAT16} buffer holds them
     */
    public static float bfloat16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /**
     * {@return the bits of the bfloat16 value nearest {@code value}, ties to even}
     *
     * @param value any float; a NaN stays a quiet NaN of the same sign
     */
    public static short floatToBfloat16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | BFLOAT16_QUIET_BIT); // truncating could leave no payload bit: infinity
        }
        int lsb = (bits >>> 16) & 1;
        return (short) ((bits + 0x7FFF + lsb) >>> 16);
    }

    /**
     * Converts floats to one of the 16-bit formats, element by element.
     *
     * @param values the floats
     * @param type {@link ElementType#FLOAT16} or {@link ElementType#BFLOAT16}
     * @return the bits, one short per float
     * @throws IllegalArgumentException if {@code type} is not a 16-bit float type
     */
    public static short[] fromFloats(float[] values, ElementType type) {
        boolean bfloat = requireHalf(type);
        short[] bits = new short[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = bfloat ? floatToBfloat16(values[i]) : floatToFloat16(values[i]);
        }
        return bits;
    }

    /**
     * Converts one of the 16-bit formats to floats, element by element, exactly.
     *
     * @param bits the values' bits
     * @param type {@link ElementType#FLOAT16} or {@link ElementType#BFLOAT16}
     * @return the floats
     * @throws IllegalArgumentException if {@code type} is not a 16-bit float type
     */
    public static float[] toFloats(short[] bits, ElementType type) {
        boolean bfloat = requireHalf(type);
        float[] values = new float[bits.length];
        for (int i = 0; i < bits.length; i++) {
            values[i] = bfloat ? bfloat16ToFloat(bits[i]) : float16ToFloat(bits[i]);
        }
        return values;
    }

    /** {@return whether {@code type} is BFLOAT16 (else FLOAT16)} */
    private static boolean requireHalf(ElementType type) {
        Objects.requireNonNull(type, "type");
        if (type != ElementType.FLOAT16 && type != ElementType.BFLOAT16) {
            throw new IllegalArgumentException(type + " is not a 16-bit float type: use FLOAT16 or BFLOAT16");
        }
        return type == ElementType.BFLOAT16;
    }
}
