package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** FLOAT16 and BFLOAT16 buffers: their bits through device memory unchanged, floats rounded on the way in. */
@GpuTest
class HalfBufferGpuTest {
    private static final int PATTERNS = 1 << 16;

    @Test
    void everySixteenBitPatternComesBackUnchanged() {
        CudaDevice device = TestData.device();
        short[] patterns = new short[PATTERNS];
        for (int i = 0; i < PATTERNS; i++) {
            patterns[i] = (short) i;
        }
        for (ElementType type : new ElementType[] {ElementType.FLOAT16, ElementType.BFLOAT16}) {
            try (DeviceBuffer buffer = device.allocate(type, PATTERNS)) {
                buffer.copyFrom(patterns);
                short[] back = new short[PATTERNS];
                buffer.copyTo(back);
                assertArrayEquals(patterns, back, type.toString());
                assertEquals(2L * PATTERNS, buffer.byteSize());
            }
        }
    }

    @Test
    void floatsAreRoundedOnTheWayInAndWidenedExactlyOnTheWayOut() {
        CudaDevice device = TestData.device();
        int n = 100_000;
        float[] values = TestData.randomFloats(n, TestData.newSeed());
        for (int i = 0; i < n; i++) {
            values[i] *= 1000; // beyond float16's subnormals and into its coarser steps
        }
        for (ElementType type : new ElementType[] {ElementType.FLOAT16, ElementType.BFLOAT16}) {
            try (DeviceBuffer buffer = device.allocate(type, n)) {
                buffer.copyFromRounded(values);
                assertArrayEquals(HalfFloats.toFloats(HalfFloats.fromFloats(values, type), type), buffer.toFloatArray(),
                        type.toString());
            }
        }
    }

    @Test
    void copiesOfTheWrongTypeAreRefused() {
        CudaDevice device = TestData.device();
        try (DeviceBuffer floats = device.allocateFloats(4); DeviceBuffer halves = device.allocate(ElementType.BFLOAT16, 4)) {
            assertEquals("buffer holds FLOAT32, not FLOAT16 or BFLOAT16",
                    assertThrows(IllegalArgumentException.class, () -> floats.copyFrom(new short[4])).getMessage());
            assertThrows(IllegalArgumentException.class, () -> floats.copyFromRounded(new float[4]));
            assertThrows(IllegalArgumentException.class, () -> halves.copyFrom(new float[4]), "no silent rounding");
            assertThrows(IllegalArgumentException.class, () -> halves.copyFrom(new short[5]));
        }
    }
}
