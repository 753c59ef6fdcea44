package org.cudagraph4j;

import java.lang.foreign.ValueLayout;

/** The element type of a {@link DeviceBuffer}, with its size and its Java layout. */
public enum ElementType {
    INT8(ValueLayout.JAVA_BYTE),
    INT32(ValueLayout.JAVA_INT),
    INT64(ValueLayout.JAVA_LONG),
    FLOAT32(ValueLayout.JAVA_FLOAT),
    FLOAT64(ValueLayout.JAVA_DOUBLE);

    private final ValueLayout layout;

    ElementType(ValueLayout layout) {
        this.layout = layout;
    }

    public long byteSize() {
        return layout.byteSize();
    }

    /** The layout of one element in host memory. */
    public ValueLayout layout() {
        return layout;
    }
}
