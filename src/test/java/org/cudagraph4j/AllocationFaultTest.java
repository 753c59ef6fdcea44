package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.assertCudaMessage;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Allocations that cannot succeed (beyond device or host memory, sizes that overflow, lengths that
 * are not positive, slices out of range, a device that does not exist) are refused, and the next
 * allocation works. Fault injection as {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class AllocationFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void allocationFarBeyondDeviceMemoryIsARecoverableCudaException() {
        long bytes = 1L << 50;
        LiveResources before = Cuda.liveResources();
        CudaException e = assertThrows(CudaException.class,
                () -> gpu.device().allocate(ElementType.INT8, bytes).close());
        assertSame(CudaException.class, e.getClass());
        assertCudaMessage(e, "cudaMalloc", CudaError.MEMORY_ALLOCATION, bytes + " bytes");
        assertFalse(e.isSticky());
        assertEquals(before, Cuda.liveResources(), "a failed allocation is not counted");
        // Recovery: a normal allocation and a computation succeed right after.
        try (DeviceBuffer normal = gpu.device().allocateFloats(1 << 20)) {
            normal.memset(0);
        }
        assertHealthy(gpu);
    }

    @Test
    void pinnedAllocationFarBeyondHostMemoryIsARecoverableCudaException() {
        long bytes = 1L << 50;
        CudaException e = assertThrows(CudaException.class, () -> Cuda.allocatePinned(bytes).close());
        assertSame(CudaException.class, e.getClass());
        // expected: cudaHostAlloc reports a petabyte it cannot pin as cudaErrorMemoryAllocation.
        assertCudaMessage(e, "cudaHostAlloc", CudaError.MEMORY_ALLOCATION, bytes + " bytes");
        try (PinnedBuffer normal = Cuda.allocatePinned(1 << 20)) {
            normal.segment().fill((byte) 1);
        }
        assertHealthy(gpu);
    }

    @Test
    void sizeOverflowIsRefusedBeforeTheRuntime() {
        assertRefused(IllegalArgumentException.class,
                () -> gpu.device().allocate(ElementType.FLOAT32, Long.MAX_VALUE).close(),
                Long.MAX_VALUE + " x FLOAT32 is more than " + Long.MAX_VALUE + " bytes");
        long justOver = Long.MAX_VALUE / 8 + 1;
        assertRefused(IllegalArgumentException.class,
                () -> gpu.device().allocate(ElementType.FLOAT64, justOver).close(),
                justOver + " x FLOAT64 is more than " + Long.MAX_VALUE + " bytes");
        assertHealthy(gpu);
    }

    @ParameterizedTest(name = "length {0}")
    @ValueSource(longs = {0, -1, Long.MIN_VALUE})
    void nonPositiveLengthIsRefused(long length) {
        assertRefused(IllegalArgumentException.class, () -> gpu.device().allocate(ElementType.FLOAT32, length).close(),
                "length must be positive, got " + length);
        assertRefused(IllegalArgumentException.class, () -> Cuda.allocatePinned(length).close(),
                "byteSize must be positive, got " + length);
        assertHealthy(gpu);
    }

    @Test
    void noSuchDeviceIsRefused() {
        int count = Cuda.deviceCount();
        assertRefused(IllegalArgumentException.class, () -> Cuda.device(count),
                "no CUDA device " + count + ": this machine has " + count);
        assertRefused(IllegalArgumentException.class, () -> Cuda.device(-1),
                "no CUDA device -1: this machine has " + count);
        assertHealthy(gpu);
    }

    @Test
    void sliceOutOfRangeIsRefused() {
        try (DeviceBuffer buffer = gpu.device().allocateFloats(100)) {
            IndexOutOfBoundsException range = assertThrows(IndexOutOfBoundsException.class,
                    () -> buffer.slice(95, 10));
            assertSame(IndexOutOfBoundsException.class, range.getClass());
            assertEquals("Range [95, 95 + 10) out of bounds for length 100", range.getMessage());
            assertRefused(IllegalArgumentException.class, () -> buffer.slice(3, 0),
                    "a slice needs at least one element");
        }
        assertHealthy(gpu);
    }
}
