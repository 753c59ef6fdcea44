package org.cudagraph4j.internal.lifetime;

import java.lang.foreign.MemorySegment;

/**
 * The lifetime through which graphs borrow host memory that the caller owns, a segment a memcpy
 * node copies to or from: it frees nothing, and holds the segment while a graph, an executable or a
 * capture holds it. That keeps the memory of an automatic arena ({@code Arena.ofAuto()}) from being
 * collected under a node; no one can keep open an arena that its owner closes.
 *
 * <p>Thread safety: the lifetimes it makes are {@link Lifetime}s, safe to share.
 */
public final class BorrowedHostMemory {
    private BorrowedHostMemory() {}

    /**
     * A lifetime for one node's use of {@code segment}, counted as
     * {@link LiveCounters.Kind#BORROWED_HOST_MEMORY}. The caller holds it into the graph or capture,
     * then closes its own reference.
     *
     * @param segment the host memory
     * @return the lifetime, with the caller's reference
     */
    public static Lifetime of(MemorySegment segment) {
        return new Lifetime(LiveCounters.Kind.BORROWED_HOST_MEMORY, 0, String.format(
                "host memory 0x%X (%d bytes), borrowed by a memcpy node", segment.address(), segment.byteSize()),
                new Holder(segment));
    }

    /** The lifetime's free action: it frees nothing, and exists to hold the segment. */
    private record Holder(MemorySegment segment) implements Runnable {
        @Override
        public void run() {
            // The lender frees the memory; dropping this holder lets an automatic arena be collected.
        }
    }
}
