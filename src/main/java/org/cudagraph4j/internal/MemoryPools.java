package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.cudart.cudaMemLocation;
import org.cudagraph4j.cudart.cudaMemPoolProps;

/**
 * The stream-ordered allocator: memory pools and allocations ordered on a stream. Pools and
 * streams are opaque handles owned by the public types; device pointers travel as {@code long}s,
 * as in {@link Memory}.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">Stream Ordered
 *     Memory Allocator</a>
 */
public final class MemoryPools {
    /** {@code cudaMemPoolAttr} values this library reads or writes; all are {@code cuuint64_t}. */
    public enum Attribute {
        RELEASE_THRESHOLD(cudaMemPoolAttrReleaseThreshold()),
        RESERVED_CURRENT(cudaMemPoolAttrReservedMemCurrent()),
        RESERVED_HIGH(cudaMemPoolAttrReservedMemHigh()),
        USED_CURRENT(cudaMemPoolAttrUsedMemCurrent()),
        USED_HIGH(cudaMemPoolAttrUsedMemHigh());

        private final int value;

        Attribute(int value) {
            this.value = value;
        }
    }

    private MemoryPools() {}

    /**
     * Whether {@code device} supports {@code cudaMallocAsync} and memory pools.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceGetAttribute</a>
     */
    public static boolean supported(int device) {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaDeviceGetAttribute", "cudaDevAttrMemoryPoolsSupported, device " + device,
                (arena, value) -> cudaDeviceGetAttribute(value, cudaDevAttrMemoryPoolsSupported(), device)) != 0;
    }

    /**
     * The device's default pool, which the runtime owns and which cannot be destroyed.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceGetDefaultMemPool</a>
     */
    public static MemorySegment defaultPool(int device) {
        CudartLoader.ensureLoaded();
        return Out.pointer("cudaDeviceGetDefaultMemPool", "device " + device,
                (arena, pool) -> cudaDeviceGetDefaultMemPool(pool, device));
    }

    /**
     * A new pool of pinned device memory on {@code device}, not exportable to other processes.
     *
     * @param maxSizeBytes the most the pool may reserve; 0 for the runtime's default (the device's memory)
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMemPoolCreate</a>
     */
    public static MemorySegment create(int device, long maxSizeBytes) {
        CudartLoader.ensureLoaded();
        return Out.pointer("cudaMemPoolCreate", "device " + device + ", maxSize " + maxSizeBytes, (arena, pool) -> {
            MemorySegment props = cudaMemPoolProps.allocate(arena); // zeroed: reserved bytes must be 0
            pinnedOnDevice(props, device);
            cudaMemPoolProps.maxSize(props, maxSizeBytes);
            return cudaMemPoolCreate(pool, props);
        });
    }

    /**
     * Sets {@code props}, a {@code cudaMemPoolProps}, to ordinary device memory: pinned on
     * {@code device}, accessible from it, not exportable to other processes.
     */
    static void pinnedOnDevice(MemorySegment props, int device) {
        cudaMemPoolProps.allocType(props, cudaMemAllocationTypePinned());
        cudaMemPoolProps.handleTypes(props, cudaMemHandleTypeNone());
        MemorySegment location = cudaMemPoolProps.location(props);
        cudaMemLocation.type(location, cudaMemLocationTypeDevice());
        cudaMemLocation.id(location, device);
    }

    /**
     * Destroys a pool made by {@link #create}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMemPoolDestroy</a>
     */
    public static void destroy(MemorySegment pool) {
        Status.check(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");
    }

    /**
     * {@code cudaMallocFromPoolAsync}: usable in {@code stream}'s order, and elsewhere once it has run.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMallocFromPoolAsync</a>
     */
    public static long allocate(MemorySegment pool, long byteSize, MemorySegment stream) {
        return Out.pointer("cudaMallocFromPoolAsync", byteSize + " bytes",
                (arena, pointer) -> cudaMallocFromPoolAsync(pointer, byteSize, pool, stream)).address();
    }

    /**
     * {@code cudaMallocAsync}: from the current pool of {@code stream}'s device.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMallocAsync</a>
     */
    public static long allocate(long byteSize, MemorySegment stream) {
        return Out.pointer("cudaMallocAsync", byteSize + " bytes",
                (arena, pointer) -> cudaMallocAsync(pointer, byteSize, stream)).address();
    }

    /**
     * {@code cudaFreeAsync}: the memory returns to its pool when {@code stream} reaches the free.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaFreeAsync</a>
     */
    public static void freeAsync(long devicePointer, MemorySegment stream) {
        Status.check(cudaFreeAsync(MemorySegment.ofAddress(devicePointer), stream), "cudaFreeAsync");
    }

    /**
     * Reads a pool attribute.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMemPoolGetAttribute</a>
     */
    public static long get(MemorySegment pool, Attribute attribute) {
        return Out.longValue("cudaMemPoolGetAttribute", attribute.name(),
                (arena, value) -> cudaMemPoolGetAttribute(pool, attribute.value, value));
    }

    /**
     * Writes a pool attribute.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMemPoolSetAttribute</a>
     */
    public static void set(MemorySegment pool, Attribute attribute, long value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(JAVA_LONG);
            in.set(JAVA_LONG, 0, value);
            Status.check(cudaMemPoolSetAttribute(pool, attribute.value, in), "cudaMemPoolSetAttribute",
                    attribute.name() + " = " + value);
        }
    }

    /**
     * Releases memory the pool holds but does not use, down to {@code minBytesToKeep} reserved bytes.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaMemPoolTrimTo</a>
     */
    public static void trimTo(MemorySegment pool, long minBytesToKeep) {
        Status.check(cudaMemPoolTrimTo(pool, minBytesToKeep), "cudaMemPoolTrimTo", minBytesToKeep + " bytes to keep");
    }
}
