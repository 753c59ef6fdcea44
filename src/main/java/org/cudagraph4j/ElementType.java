package org.cudagraph4j;

import java.lang.foreign.ValueLayout;

/**
 * The element type of a {@link DeviceBuffer}, with its size and its Java layout. New types are
 * added at the end, so that an ordinal, once written, keeps its meaning.
 */
public enum ElementType {
    /** An 8-bit integer: C {@code int8_t} or {@code char}, Java {@code byte}. */
    INT8(ValueLayout.JAVA_BYTE),
    /** A signed 32-bit integer: C {@code int}, Java {@code int}. */
    INT32(ValueLayout.JAVA_INT),
    /** A signed 64-bit integer: C {@code long long}, Java {@code long}. */
    INT64(ValueLayout.JAVA_LONG),
    /** A 32-bit IEEE 754 float: C {@code float}, Java {@code float}. */
    FLOAT32(ValueLayout.JAVA_FLOAT),
    /** A 64-bit IEEE 754 float: C {@code double}, Java {@code double}. */
    FLOAT64(ValueLayout.JAVA_DOUBLE),
    /**
     * A 16-bit IEEE 754 float (binary16: 5 exponent bits, 10 fraction bits): C {@code __half},
     * Java the {@code short} of its bits; {@link HalfFloats} converts.
     */
    FLOAT16(ValueLayout.JAVA_SHORT),
    /**
     * A 16-bit brain float (a float's upper half: 8 exponent bits, 7 fraction bits): C
     * {@code __nv_bfloat16}, Java the {@code short} of its bits; {@link HalfFloats} converts.
     */
    BFLOAT16(ValueLayout.JAVA_SHORT);

    private final ValueLayout layout;

    ElementType(ValueLayout layout) {
        this.layout = layout;
    }

    /** {@return the size of one element in bytes: 1, 4, 8, 4, 8, 2 or 2} */
    public long byteSize() {
        return layout.byteSize();
    }

    /** {@return the layout of one element in host memory, in native byte order} */
    public ValueLayout layout() {
        return layout;
    }
}
