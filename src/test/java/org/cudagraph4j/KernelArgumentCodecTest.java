package org.cudagraph4j;

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
                + " Integer, Float, Long, Double, Short, Byte or Boolean", e.getMessage());
    }

    @Test
    void structParametersAreRejectedWithTheirSize() {
        List<KernelParameter> params = List.of(new KernelParameter(0, 0, 56));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelArgumentCodec.check("k", params, new Object[] {1L}));
        assertEquals("kernel k, parameter 0 is 56 bytes (a struct by value); only scalars and pointers are supported",
                e.getMessage());
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
