package org.cudagraph4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * Page-locked host memory from {@link Cuda#allocatePinned}, or another library's
 * ({@link #borrow}), seen as a {@link MemorySegment}.
 *
 * <p>Its segment belongs to an arena that this buffer closes: after {@link #close()}, any access
 * through the segment throws {@link IllegalStateException} instead of touching freed memory.
 *
 * <p>Thread safety: the segment may be read and written from any thread; closing waits for no one,
 * so do not close while another thread, or a queued asynchronous copy, still uses it.
 */
public final class PinnedBuffer extends NativeResource {
    private final MemorySegment segment;
    private final boolean borrowed;

    PinnedBuffer(MemorySegment pointer, long byteSize) {
        this(pointer, byteSize, Arena.ofShared(), false);
    }

    @SuppressWarnings("restricted") // sizes the pointer cudaHostAlloc returned (or the lender's), and ties it to the arena
    private PinnedBuffer(MemorySegment pointer, long byteSize, Arena arena, boolean borrowed) {
        super(new Lifetime(LiveCounters.Kind.PINNED_BUFFER, borrowed ? 0 : byteSize,
                String.format("%s 0x%X (%d bytes)", borrowed ? "borrowed PinnedBuffer" : "PinnedBuffer",
                        pointer.address(), byteSize), arena::close));
        this.segment = pointer.reinterpret(byteSize, arena, borrowed ? null : Memory::freeHost);
        this.borrowed = borrowed;
    }

    /**
     * Wraps page-locked host memory that another library allocated or registered and owns
     * ({@code cudaHostAlloc} or {@code cudaHostRegister} through JavaCPP, PyTorch's pinned
     * tensors), so that asynchronous copies through this library are truly asynchronous with it.
     *
     * <p>The library never frees borrowed memory: {@link #close()} ends this wrapper's use, and
     * access through {@link #segment()} throws from then on. The lender must keep the memory
     * allocated until the wrapper is closed and every copy queued through it has completed.
     *
     * @param memory the memory: a native segment of the bytes to wrap
     * @return the wrapper, which the caller closes; closing frees nothing
     * @throws IllegalArgumentException if {@code memory} is a heap segment, empty, or its first or
     *     last byte is not page-locked memory CUDA knows ({@code cudaPointerGetAttributes})
     */
    public static PinnedBuffer borrow(MemorySegment memory) {
        Objects.requireNonNull(memory, "memory");
        if (!memory.isNative() || memory.byteSize() == 0) {
            throw new IllegalArgumentException("a borrowed PinnedBuffer needs a non-empty native segment, got " + memory);
        }
        long last = memory.address() + memory.byteSize() - 1;
        for (long address : new long[] {memory.address(), last}) {
            if (Memory.kindOf(address).type() != Memory.HOST) {
                throw new IllegalArgumentException(String.format("%d bytes at 0x%X are not all page-locked host "
                        + "memory: 0x%X is not (cudaHostAlloc it, or cudaHostRegister it, first)",
                        memory.byteSize(), memory.address(), address));
            }
        }
        return new PinnedBuffer(memory, memory.byteSize(), Arena.ofShared(), true);
    }

    /**
     * {@return whether this wraps memory another library owns ({@link #borrow}), which closing does
     * not free}
     */
    public boolean isBorrowed() {
        return borrowed;
    }

    /** {@return the memory, valid until {@link #close()}; an access after it throws {@link IllegalStateException}} */
    public MemorySegment segment() {
        return segment;
    }

    /** {@return the size in bytes, as allocated} */
    public long byteSize() {
        return segment.byteSize();
    }
}
