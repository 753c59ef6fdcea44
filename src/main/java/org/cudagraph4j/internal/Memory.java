package org.cudagraph4j.internal;

import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.cudart.cudaPointerAttributes;

/**
 * Device and pinned host allocations, copies and memsets. Device pointers travel as {@code long}
 * addresses: they are not host-dereferenceable, so a {@link MemorySegment} over one would invite a
 * crash. Copies use {@code cudaMemcpyDefault}, which infers the direction from unified addressing.
 */
public final class Memory {
    private Memory() {}

    /**
     * {@code cudaMalloc} on the current device.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaMalloc</a>
     */
    public static long malloc(long byteSize) {
        return Out.pointer("cudaMalloc", byteSize + " bytes", (arena, pointer) -> cudaMalloc(pointer, byteSize))
                .address();
    }

    /**
     * Frees device memory from {@link #malloc}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaFree</a>
     */
    public static void free(long devicePointer) {
        Status.check(cudaFree(MemorySegment.ofAddress(devicePointer)), "cudaFree");
    }

    /**
     * Page-locked host memory, accessible from every device.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaHostAlloc</a>
     */
    public static MemorySegment mallocHost(long byteSize) {
        CudartLoader.ensureLoaded();
        return Out.pointer("cudaHostAlloc", byteSize + " bytes",
                (arena, pointer) -> cudaHostAlloc(pointer, byteSize, cudaHostAllocPortable()));
    }

    /**
     * Frees page-locked host memory from {@link #mallocHost}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaFreeHost</a>
     */
    public static void freeHost(MemorySegment pointer) {
        Status.check(cudaFreeHost(pointer), "cudaFreeHost");
    }

    /**
     * A copy that has completed when this returns, so work queued afterwards on any stream sees
     * it; either side may be a device address or a native host address. Plain {@code cudaMemcpy}
     * does not promise that: device-to-device copies (and copies from pageable memory) may still be
     * in flight when it returns, unordered with the library's non-blocking streams. So the copy is
     * queued on the current device's legacy stream, which is then synchronized.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaMemcpyAsync</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamSynchronize</a>
     */
    public static void copy(long destination, long source, long byteSize) {
        Status.check(cudaMemcpyAsync(MemorySegment.ofAddress(destination), MemorySegment.ofAddress(source), byteSize,
                cudaMemcpyDefault(), MemorySegment.NULL), "cudaMemcpyAsync", byteSize + " bytes");
        Status.check(cudaStreamSynchronize(MemorySegment.NULL), "cudaStreamSynchronize", "after a synchronous copy");
    }

    /**
     * Copy ordered on {@code stream}; host memory must stay valid until it completes.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaMemcpyAsync</a>
     */
    public static void copyAsync(long destination, long source, long byteSize, MemorySegment stream) {
        Status.check(cudaMemcpyAsync(MemorySegment.ofAddress(destination), MemorySegment.ofAddress(source), byteSize,
                cudaMemcpyDefault(), stream), "cudaMemcpyAsync", byteSize + " bytes");
    }

    /**
     * A memset that has completed when this returns; see {@link #copy}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaMemsetAsync</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamSynchronize</a>
     */
    public static void set(long devicePointer, int byteValue, long byteSize) {
        Status.check(cudaMemsetAsync(MemorySegment.ofAddress(devicePointer), byteValue, byteSize, MemorySegment.NULL),
                "cudaMemsetAsync");
        Status.check(cudaStreamSynchronize(MemorySegment.NULL), "cudaStreamSynchronize", "after a synchronous memset");
    }

    /**
     * A memset ordered on {@code stream}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaMemsetAsync</a>
     */
    public static void setAsync(long devicePointer, int byteValue, long byteSize, MemorySegment stream) {
        Status.check(cudaMemsetAsync(MemorySegment.ofAddress(devicePointer), byteValue, byteSize, stream),
                "cudaMemsetAsync");
    }

    /** What kind of memory an address is: one of {@link #HOST}, {@link #DEVICE}, {@link #MANAGED} or 0 (unregistered host memory). */
    public record Kind(int type, int device) {}

    /** {@code cudaMemoryTypeHost}: page-locked host memory. */
    public static final int HOST = cudaMemoryTypeHost();
    /** {@code cudaMemoryTypeDevice}. */
    public static final int DEVICE = cudaMemoryTypeDevice();
    /** {@code cudaMemoryTypeManaged}. */
    public static final int MANAGED = cudaMemoryTypeManaged();

    /**
     * What kind of memory {@code address} is, and the device it belongs to.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__UNIFIED.html">cudaPointerGetAttributes</a>
     */
    public static Kind kindOf(long address) {
        CudartLoader.ensureLoaded(); // an entry point: borrowing pinned memory names no device first
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = cudaPointerAttributes.allocate(arena);
            Status.check(cudaPointerGetAttributes(attributes, MemorySegment.ofAddress(address)),
                    "cudaPointerGetAttributes");
            return new Kind(cudaPointerAttributes.type(attributes), cudaPointerAttributes.device(attributes));
        }
    }
}
