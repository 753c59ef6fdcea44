package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.assertAllNaN;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Copies between mismatched buffers, arrays and segments are refused and write nothing. Fault
 * injection as {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class CopyFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void copyWithAnArrayOfTheWrongLengthIsRefusedAndWritesNothing() {
        try (DeviceBuffer buffer = gpu.device().allocateFloats(16)) {
            buffer.memset(0xFF);
            IllegalArgumentException shorter = assertThrows(IllegalArgumentException.class,
                    () -> buffer.copyFrom(new float[15]));
            assertEquals("buffer has 16 elements but the array has 15; copy through a slice for part of a buffer",
                    shorter.getMessage());
            float[] longer = new float[17];
            IllegalArgumentException back = assertThrows(IllegalArgumentException.class,
                    () -> buffer.copyTo(longer));
            assertEquals("buffer has 16 elements but the array has 17; copy through a slice for part of a buffer",
                    back.getMessage());
            assertEquals(0f, longer[0], "a refused copy must not touch the array");
            assertAllNaN(buffer, "a refused copy");
        }
        assertHealthy(gpu);
    }

    @Test
    void copyWithASegmentOfTheWrongSizeIsRefused() {
        try (Arena arena = Arena.ofConfined(); DeviceBuffer buffer = gpu.device().allocateFloats(16)) {
            buffer.memset(0xFF);
            MemorySegment small = arena.allocate(60);
            assertRefused(IllegalArgumentException.class, () -> buffer.copyFrom(small),
                    "buffer has 64 bytes but the segment has 60");
            MemorySegment large = arena.allocate(68);
            assertRefused(IllegalArgumentException.class, () -> buffer.copyTo(large),
                    "buffer has 64 bytes but the segment has 68");
            assertRefused(IllegalArgumentException.class, () -> buffer.copyFrom(MemorySegment.ofArray(new float[8])),
                    "buffer has 64 bytes but the segment has 32");
            assertAllNaN(buffer, "a refused copy");
        }
        assertHealthy(gpu);
    }

    @Test
    void copyWithAnArrayOfAnotherElementTypeIsRefused() {
        try (DeviceBuffer buffer = gpu.device().allocateFloats(4);
                DeviceBuffer ints = gpu.device().allocate(ElementType.INT32, 4)) {
            buffer.memset(0xFF);
            assertAll(
                    () -> assertEquals("buffer holds FLOAT32, not INT32", assertThrows(
                            IllegalArgumentException.class, () -> buffer.copyFrom(new int[4])).getMessage()),
                    () -> assertEquals("buffer holds FLOAT32, not FLOAT64", assertThrows(
                            IllegalArgumentException.class, () -> buffer.copyTo(new double[4])).getMessage()),
                    () -> assertEquals("buffer holds FLOAT32, not INT8", assertThrows(
                            IllegalArgumentException.class, () -> buffer.copyFrom(new byte[16])).getMessage()),
                    () -> assertEquals("buffer holds INT32, not FLOAT32", assertThrows(
                            IllegalArgumentException.class, ints::toFloatArray).getMessage()));
            assertAllNaN(buffer, "a refused copy");
        }
        assertHealthy(gpu);
    }

    @Test
    void deviceToDeviceCopyBetweenMismatchedBuffersIsRefused() {
        try (DeviceBuffer a = gpu.device().allocateFloats(16); DeviceBuffer b = gpu.device().allocateFloats(8);
                DeviceBuffer ints = gpu.device().allocate(ElementType.INT32, 16)) {
            a.memset(0xFF);
            assertRefused(IllegalArgumentException.class, () -> a.copyFrom(b),
                    "source is 8 x FLOAT32 but this buffer is 16 x FLOAT32");
            assertRefused(IllegalArgumentException.class, () -> a.copyFromAsync(ints, gpu.stream()),
                    "source is 16 x INT32 but this buffer is 16 x FLOAT32");
            gpu.stream().synchronize();
            assertAllNaN(a, "a refused device-to-device copy");
        }
        assertHealthy(gpu);
    }

    @Test
    void asyncCopyFromOrToAHeapSegmentIsRefused() {
        try (DeviceBuffer buffer = gpu.device().allocateFloats(16)) {
            buffer.memset(0xFF);
            float[] host = TestData.randomFloats(16, TestData.newSeed());
            IllegalArgumentException from = assertThrows(IllegalArgumentException.class,
                    () -> buffer.copyFromAsync(MemorySegment.ofArray(host), gpu.stream()));
            assertEquals("an asynchronous copy needs a native segment (ideally a PinnedBuffer), not a heap segment",
                    from.getMessage());
            float[] back = TestData.nans(16);
            assertRefused(IllegalArgumentException.class,
                    () -> buffer.copyToAsync(MemorySegment.ofArray(back), gpu.stream()),
                    from.getMessage());
            gpu.stream().synchronize();
            assertAllNaN(buffer, "a refused asynchronous copy");
            assertTrue(Float.isNaN(back[0]), "a refused asynchronous copy must not write the heap array");
        }
        assertHealthy(gpu);
    }

    @Test
    void copyThroughASegmentOfAClosedArenaIsRefused() {
        MemorySegment stale;
        try (Arena arena = Arena.ofConfined()) {
            stale = arena.allocate(64);
        }
        try (DeviceBuffer buffer = gpu.device().allocateFloats(16)) {
            buffer.memset(0xFF);
            assertRefused(IllegalStateException.class, () -> buffer.copyFrom(stale),
                    "the host segment's arena is closed");
            assertAllNaN(buffer, "a refused copy");
        }
        assertHealthy(gpu);
    }
}
