package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

class KernelArgumentCodecTest {
    /** (float* out, int n, float scale, double offset) */
    private static final List<KernelParameter> PARAMETERS = List.of(
            new KernelParameter(0, 0, 8),
            new KernelParameter(1, 8, 4),
            new KernelParameter(2, 12, 4),
            new KernelParameter(3, 16, 8));

    @Test
    void acceptsArgumentsMatchingEveryParameterSize() {
        assertDoesNotThrow(() -> KernelArgumentCodec.check("k", PARAMETERS, new Object[] {42L, 7, 1.5f, 2.0}));
    }

    @Test
    void tooFewArgumentsNamesTheKernelAndTheCounts() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("sgemm", PARAMETERS, new Object[] {42L, 7, 1.5f}));
        assertEquals("kernel sgemm takes 4 parameters but 3 arguments were given", e.getMessage());
    }

    @Test
    void wrongSizeNamesTheKernelAndTheParameter() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("sgemm", PARAMETERS, new Object[] {42L, 7L, 1.5f, 2.0}));
        assertEquals("kernel sgemm, parameter 1 is 4 bytes but the argument is a Long (8 bytes)", e.getMessage());
    }

    @Test
    void doubleWhereAFloatIsExpectedIsRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("sgemm", PARAMETERS, new Object[] {42L, 7, 1.5, 2.0}));
        assertEquals("kernel sgemm, parameter 2 is 4 bytes but the argument is a Double (8 bytes)", e.getMessage());
    }

    @Test
    void nullArgumentIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("k", PARAMETERS, new Object[] {null, 7, 1.5f, 2.0}));
        assertEquals("kernel k, parameter 0: argument is null", e.getMessage());
    }

    @Test
    void unsupportedTypeIsNamedWithTheAlternatives() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("k", PARAMETERS, new Object[] {"x", 7, 1.5f, 2.0}));
        assertEquals("kernel k, parameter 0: unsupported argument type java.lang.String; pass a DeviceBuffer,"
                + " Integer, Float, Long, Double, Short, Byte, Boolean or StructArgument", e.getMessage());
    }

    /** (Affine p, float* out): a 24-byte struct by value, then a pointer. */
    private static final List<KernelParameter> STRUCT_PARAMETERS = List.of(
            new KernelParameter(0, 0, 24),
            new KernelParameter(1, 24, 8));

    @Test
    void aStructArgumentOfTheParametersSizeIsAccepted() {
        StructArgument affine = StructArgument.builder(24).putFloat(0, 2f).putInt(8, 7).putDouble(16, 0.5).build();
        assertDoesNotThrow(() -> KernelArgumentCodec.check("affine", STRUCT_PARAMETERS, new Object[] {affine, 42L}));
        // An 8-byte struct, such as struct { int a, b; }, is a struct argument too.
        assertDoesNotThrow(() -> KernelArgumentCodec.check("k", PARAMETERS,
                new Object[] {StructArgument.builder(8).build(), 7, 1.5f, 2.0}));
    }

    @Test
    void aStructOfAnotherSizeNamesTheParameterAndBothSizes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KernelArgumentCodec.check(
                "affine", STRUCT_PARAMETERS, new Object[] {StructArgument.builder(16).build(), 42L}));
        assertEquals("kernel affine, parameter 0 is 24 bytes but the StructArgument is 16 bytes", e.getMessage());
        IllegalArgumentException onScalar = assertThrows(IllegalArgumentException.class, () -> KernelArgumentCodec
                .check("affine", STRUCT_PARAMETERS, new Object[] {StructArgument.of(MemorySegment.ofArray(new int[6])),
                        StructArgument.builder(4).build()}));
        assertEquals("kernel affine, parameter 1 is 8 bytes but the StructArgument is 4 bytes", onScalar.getMessage());
    }

    @Test
    void aScalarWhereAStructIsExpectedSaysWhatToPass() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("k", List.of(new KernelParameter(0, 0, 56)), new Object[] {1L}));
        assertEquals("kernel k, parameter 0 is 56 bytes (a struct by value) but the argument is a Long (8 bytes): "
                + "pass a StructArgument of 56 bytes", e.getMessage());
    }

    @Test
    void structsAreAlignedAsTheLargestCudaTypeAndScalarsTakeEightBytes() {
        // (int, 24-byte struct, float*, 4-byte struct, 40-byte struct)
        List<KernelParameter> parameters = List.of(new KernelParameter(0, 0, 4), new KernelParameter(1, 8, 24),
                new KernelParameter(2, 32, 8), new KernelParameter(3, 40, 4), new KernelParameter(4, 48, 40));
        assertArrayEquals(new long[] {0, 16, 40, 48, 64, 112}, KernelArgumentCodec.offsets(parameters));
        assertArrayEquals(new long[] {8}, KernelArgumentCodec.offsets(List.of()), "no parameter: one empty slot");
    }

    @Test
    void writesAStructsBytesAsTheyAre() {
        StructArgument affine = StructArgument.builder(24).putFloat(0, 2f).putFloat(4, -1f).putInt(8, 7)
                .putDouble(16, 0.5).build();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slot = arena.allocate(24, 16);
            KernelArgumentCodec.write(slot, affine);
            assertEquals(2f, slot.get(ValueLayout.JAVA_FLOAT, 0));
            assertEquals(-1f, slot.get(ValueLayout.JAVA_FLOAT, 4));
            assertEquals(7, slot.get(ValueLayout.JAVA_INT, 8));
            assertEquals(0, slot.get(ValueLayout.JAVA_INT, 12), "padding stays zero");
            assertEquals(0.5, slot.get(ValueLayout.JAVA_DOUBLE, 16));
        }
    }

    @Test
    void writesScalarsInTheirCRepresentation() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slot = arena.allocate(8, 8);
            KernelArgumentCodec.write(slot, 1.5f);
            assertEquals(1.5f, slot.get(ValueLayout.JAVA_FLOAT, 0));
            KernelArgumentCodec.write(slot, -3);
            assertEquals(-3, slot.get(ValueLayout.JAVA_INT, 0));
            KernelArgumentCodec.write(slot, 1L << 40);
            assertEquals(1L << 40, slot.get(ValueLayout.JAVA_LONG, 0));
        }
    }
}
