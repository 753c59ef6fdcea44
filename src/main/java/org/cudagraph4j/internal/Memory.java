package org.cudagraph4j.internal;

import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.MemorySegment;

/**
 * Device and pinned host allocations, copies and memsets. Device pointers travel as {@code long}
 * addresses: they are not host-dereferenceable, so a {@link MemorySegment} over one would invite a
 * crash. Copies use {@code cudaMemcpyDefault}, which infers the direction from unified addressing.
 */
public final class Memory {
    private Memory() {}

    /** {@code cudaMalloc} on the current device. */
    public static long malloc(long byteSize) {
        return Out.pointer("cudaMalloc", byteSize + " bytes", (arena, pointer) -> cudaMalloc(pointer, byteSize))
                .address();
    }

    public static void free(long devicePointer) {
        Status.check(cudaFree(MemorySegment.ofAddress(devicePointer)), "cudaFree");
    }

    /** Page-locked host memory, accessible from every device. */
    public static MemorySegment mallocHost(long byteSize) {
        CudartLoader.ensureLoaded();
        return Out.pointer("cudaHostAlloc", byteSize + " bytes",
                (arena, pointer) -> cudaHostAlloc(pointer, byteSize, cudaHostAllocPortable()));
    }

    public static void freeHost(MemorySegment pointer) {
        Status.check(cudaFreeHost(pointer), "cudaFreeHost");
    }

    /** Synchronous copy; either side may be a device address or a native host address. */
    public static void copy(long destination, long source, long byteSize) {
        Status.check(cudaMemcpy(MemorySegment.ofAddress(destination), MemorySegment.ofAddress(source), byteSize,
                cudaMemcpyDefault()), "cudaMemcpy", byteSize + " bytes");
    }

    /** Copy ordered on {@code stream}; host memory must stay valid until it completes. */
    public static void copyAsync(long destination, long source, long byteSize, MemorySegment stream) {
        Status.check(cudaMemcpyAsync(MemorySegment.ofAddress(destination), MemorySegment.ofAddress(source), byteSize,
                cudaMemcpyDefault(), stream), "cudaMemcpyAsync", byteSize + " bytes");
    }

    public static void set(long devicePointer, int byteValue, long byteSize) {
        Status.check(cudaMemset(MemorySegment.ofAddress(devicePointer), byteValue, byteSize), "cudaMemset");
    }

    public static void setAsync(long devicePointer, int byteValue, long byteSize, MemorySegment stream) {
        Status.check(cudaMemsetAsync(MemorySegment.ofAddress(devicePointer), byteValue, byteSize, stream),
                "cudaMemsetAsync");
    }
}
