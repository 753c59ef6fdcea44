package org.cudagraph4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.internal.Memory;

/**
 * Page-locked host memory from {@link Cuda#allocatePinned}, seen as a {@link MemorySegment}.
 *
 * <p>Its segment belongs to an arena that this buffer closes: after {@link #close()}, any access
 * through the segment throws {@link IllegalStateException} instead of touching freed memory.
 *
 * <p>Thread safety: the segment may be read and written from any thread; closing waits for no one,
 * so do not close while another thread, or a queued asynchronous copy, still uses it.
 */
public final class PinnedBuffer implements AutoCloseable {
    private final Arena arena;
    private final MemorySegment segment;

    @SuppressWarnings("restricted") // sizes the pointer cudaHostAlloc returned, and ties it to the arena
    PinnedBuffer(MemorySegment pointer, long byteSize) {
        this.arena = Arena.ofShared();
        this.segment = pointer.reinterpret(byteSize, arena, Memory::freeHost);
    }

    /** The memory, valid until {@link #close()}. */
    public MemorySegment segment() {
        return segment;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    public boolean isOpen() {
        return arena.scope().isAlive();
    }

    /** Frees the memory. Idempotent. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            try {
                arena.close();
            } catch (IllegalStateException alreadyClosed) {
                // Another thread closed it first; closing is idempotent.
            }
        }
    }
}
