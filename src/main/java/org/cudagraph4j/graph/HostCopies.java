package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.BorrowedHostMemory;

/**
 * The checks of a memcpy node between a device buffer and host memory the caller owns (a
 * {@link MemorySegment}), made before anything touches the graph, and the lifetime that keeps such
 * a segment reachable for the graphs and executables that copy to or from it.
 *
 * <p>A graph cannot keep an arena open: the caller's {@code close()} of a confined or shared arena
 * frees the memory whatever the graph holds. What it can do is hold the segment itself, which
 * keeps the memory of an automatic arena ({@link java.lang.foreign.Arena#ofAuto()}) from being
 * collected while any graph or executable copies through it.
 */
final class HostCopies {
    private HostCopies() {}

    /**
     * Checks a host segment for a memcpy node of {@code byteSize} bytes.
     *
     * @param segment the host memory
     * @param byteSize the device buffer's size in bytes, which the segment must match
     * @param written whether the node writes the segment (a copy to the host)
     * @throws IllegalArgumentException if the segment is a heap segment, of another size, or
     *     read-only and {@code written}
     * @throws IllegalStateException if the segment's arena is closed
     */
    static void check(MemorySegment segment, long byteSize, boolean written) {
        Objects.requireNonNull(segment, written ? "destination" : "source");
        if (!segment.isNative()) {
            throw new IllegalArgumentException("a memcpy node copies native host memory, not a heap segment ("
                    + segment + "): a graph runs long after the call, when a heap array may have moved; use a "
                    + "PinnedBuffer, or a segment of an arena");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the host segment's arena is closed");
        }
        if (segment.byteSize() != byteSize) {
            throw new IllegalArgumentException("memcpy node: the device buffer has " + byteSize
                    + " bytes but the host segment has " + segment.byteSize());
        }
        if (written && segment.isReadOnly()) {
            throw new IllegalArgumentException("memcpy node: the host segment is read-only, and the node writes it");
        }
    }

    /**
     * A lifetime for one node's use of {@code segment}, as {@link BorrowedHostMemory#of} makes it.
     * The caller holds it into the graph, then closes its own reference.
     */
    static Lifetime borrow(MemorySegment segment) {
        return BorrowedHostMemory.of(segment);
    }
}
