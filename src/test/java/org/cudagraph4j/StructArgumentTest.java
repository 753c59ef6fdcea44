package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class StructArgumentTest {
    @Test
    void aStructArgumentKeepsItsOwnCopyAndRefusesMembersOutsideIt() {
        MemorySegment source = MemorySegment.ofArray(new int[] {1, 2, 3, 4});
        StructArgument struct = StructArgument.of(source);
        source.set(ValueLayout.JAVA_INT, 0, 99);
        assertEquals(1, struct.bytes().get(ValueLayout.JAVA_INT, 0));
        assertEquals(16, struct.byteSize());
        assertEquals(StructArgument.of(MemorySegment.ofArray(new int[] {1, 2, 3, 4})), struct);
        assertThrows(IndexOutOfBoundsException.class, () -> StructArgument.builder(8).putDouble(4, 1.0));
        assertThrows(IllegalArgumentException.class, () -> StructArgument.builder(0));
        assertThrows(IllegalArgumentException.class, () -> StructArgument.of(MemorySegment.ofArray(new byte[0])));
        assertThrows(IllegalArgumentException.class, () -> struct.bytes().set(ValueLayout.JAVA_BYTE, 0, (byte) 1));
    }

    @Test
    void aStructLayoutWritesTheSameBytesAsTheBuilder() {
        // struct Affine { float scale; float shift; int n; double bias; }
        StructLayout affine = MemoryLayout.structLayout(ValueLayout.JAVA_FLOAT.withName("scale"),
                ValueLayout.JAVA_FLOAT.withName("shift"), ValueLayout.JAVA_INT.withName("n"),
                MemoryLayout.paddingLayout(4), ValueLayout.JAVA_DOUBLE.withName("bias"));
        MemorySegment segment = MemorySegment.ofArray(new long[3]);
        segment.set(ValueLayout.JAVA_FLOAT, 0, 2f);
        segment.set(ValueLayout.JAVA_INT, 8, 7);
        segment.set(ValueLayout.JAVA_DOUBLE, 16, 0.5);
        assertEquals(affine.byteSize(), StructArgument.of(segment).byteSize());
        assertEquals(StructArgument.builder(24).putFloat(0, 2f).putInt(8, 7).putDouble(16, 0.5).build(),
                StructArgument.of(segment));
        assertTrue(StructArgument.of(segment).toString().startsWith("StructArgument[24 bytes: 00000040"),
                StructArgument.of(segment).toString());
    }
}
