package org.cudagraph4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * Page-locked host memory from {@link Cuda#allocatePinned}, seen as a {@link MemorySegment}.
 *
 * <p>Its segment belongs to an arena that this buffer closes: after {@link #close()}, any access
 * through the segment throws {@link IllegalStateException} instead of touching freed memory.
 *
 * <p>Thread safety: the segment may be read and written from any thread; closing waits for no one,
 * so do not close while another thread, or a queued asynchronous copy, still uses it.
 */
public final class PinnedBuffer extends NativeResource {
    private final MemorySegment segment;

    PinnedBuffer(MemorySegment pointer, long byteSize) {
        this(pointer, byteSize, Arena.ofShared());
    }

    @SuppressWarnings("restricted") // sizes the pointer cudaHostAlloc returned, and ties it to the arena
    private PinnedBuffer(MemorySegment pointer, long byteSize, Arena arena) {
        super(new Lifetime(LiveCounters.Kind.PINNED_BUFFER, byteSize,
                String.format("PinnedBuffer 0x%X (%d bytes)", pointer.address(), byteSize), arena::close));
        this.segment = pointer.reinterpret(byteSize, arena, Memory::freeHost);
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
