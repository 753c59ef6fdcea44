package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@GpuTest
class MemoryTest {
    private final CudaDevice device = TestData.device();

    /** Sizes straddle the 8 MiB staging chunk: 3,000,001 floats is about 11.4 MiB. */
    @ParameterizedTest
    @ValueSource(ints = {1, 7, 1000, 65_537, 3_000_001})
    void floatArraysRoundTrip(int length) {
        try (DeviceBuffer buffer = device.allocateFloats(length)) {
            TestData.assertFloatsRoundTrip(buffer, length);
        }
    }

    @Test
    void otherElementTypesRoundTrip() {
        int[] ints = {1, -2, 3, Integer.MAX_VALUE, Integer.MIN_VALUE};
        long[] longs = {Long.MIN_VALUE, -1, 0xDEADBEEFL, Long.MAX_VALUE};
        double[] doubles = {Math.PI, -Math.E, Double.MIN_VALUE};
        try (DeviceBuffer i = device.allocate(ElementType.INT32, ints.length);
                DeviceBuffer l = device.allocate(ElementType.INT64, longs.length);
                DeviceBuffer d = device.allocate(ElementType.FLOAT64, doubles.length)) {
            i.copyFrom(ints);
            l.copyFrom(longs);
            d.copyFrom(doubles);
            int[] intsBack = new int[ints.length];
            long[] longsBack = new long[longs.length];
            double[] doublesBack = new double[doubles.length];
            i.copyTo(intsBack);
            l.copyTo(longsBack);
            d.copyTo(doublesBack);
            assertArrayEquals(ints, intsBack);
            assertArrayEquals(longs, longsBack);
            assertArrayEquals(doubles, doublesBack);
        }
    }

    @Test
    void pinnedAsyncCopiesAndDeviceToDeviceRoundTrip() {
        int length = 1 << 20;
        long seed = TestData.newSeed();
        float[] data = TestData.randomFloats(length, seed);
        try (CudaStream stream = device.createStream();
                PinnedBuffer pinned = Cuda.allocatePinned(4L * length);
                DeviceBuffer a = device.allocateFloats(length);
                DeviceBuffer b = device.allocateFloats(length)) {
            MemorySegment.copy(data, 0, pinned.segment(), ValueLayout.JAVA_FLOAT, 0, length);
            b.memsetAsync(0xFF, stream);
            a.copyFromAsync(pinned.segment(), stream);
            b.copyFromAsync(a, stream);
            // The host must not write the pinned buffer while the device may still be reading it.
            stream.synchronize();
            pinned.segment().fill((byte) 0xFF);
            b.copyToAsync(pinned.segment(), stream);
            stream.synchronize();
            assertArrayEquals(data, pinned.segment().toArray(ValueLayout.JAVA_FLOAT), TestData.seedDescription(seed));
        }
    }

    @Test
    void nativeSegmentsCopyDirectly() {
        long seed = TestData.newSeed();
        float[] data = TestData.randomFloats(4097, seed);
        try (Arena arena = Arena.ofConfined(); DeviceBuffer buffer = device.allocateFloats(data.length)) {
            MemorySegment in = arena.allocateFrom(ValueLayout.JAVA_FLOAT, data);
            MemorySegment out = arena.allocate(ValueLayout.JAVA_FLOAT, data.length);
            buffer.copyFrom(in);
            buffer.copyTo(out);
            assertArrayEquals(data, out.toArray(ValueLayout.JAVA_FLOAT));
        }
    }

    @Test
    void slicesAddressPartOfTheAllocation() {
        long seed = TestData.newSeed();
        float[] data = TestData.randomFloats(100, seed);
        float[] part = TestData.randomFloats(10, seed + 1);
        try (DeviceBuffer buffer = device.allocateFloats(100)) {
            buffer.copyFrom(data);
            DeviceBuffer slice = buffer.slice(40, 10);
            slice.copyFrom(part);
            System.arraycopy(part, 0, data, 40, 10);

            assertArrayEquals(data, buffer.toFloatArray());
            assertEquals(160, slice.byteOffset());
            assertEquals(buffer, slice.allocation());
            slice.close();
            assertArrayEquals(data, buffer.toFloatArray(), "closing a slice leaves the allocation alone");
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.slice(95, 10));
        }
    }

    @Test
    void memsetWithAllOnesPoisonsFloatsWithNaN() {
        try (DeviceBuffer buffer = device.allocateFloats(333)) {
            buffer.copyFrom(TestData.randomFloats(333, TestData.newSeed()));
            buffer.memset(0xFF);
            for (float f : buffer.toFloatArray()) {
                assertTrue(Float.isNaN(f));
            }
        }
    }

    @Test
    void misuseIsNamed() {
        DeviceBuffer buffer = device.allocateFloats(4);
        IllegalArgumentException wrongType = assertThrows(IllegalArgumentException.class,
                () -> buffer.copyFrom(new int[4]));
        assertEquals("buffer holds FLOAT32, not INT32", wrongType.getMessage());
        IllegalArgumentException wrongLength = assertThrows(IllegalArgumentException.class,
                () -> buffer.copyFrom(new float[5]));
        assertTrue(wrongLength.getMessage().startsWith("buffer has 4 elements but the array has 5"));
        DeviceBuffer slice = buffer.slice(1, 2);
        buffer.close();
        buffer.close();
        assertThrows(IllegalStateException.class, () -> buffer.copyFrom(new float[4]));
        assertThrows(IllegalStateException.class, slice::address);
    }

    @Test
    void outOfMemoryIsANamedCudaException() {
        CudaException e = assertThrows(CudaException.class, () -> device.allocate(ElementType.INT8, 1L << 50));
        assertEquals(CudaError.MEMORY_ALLOCATION, e.error());
        assertEquals("cudaMalloc", e.function());
    }
}
