package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;
import org.junit.jupiter.api.Test;

/**
 * The checks of a memcpy node between a device buffer and a host segment, which run before the
 * graph is touched, and the lifetime through which graphs borrow such a segment; no device needed.
 */
class HostCopiesTest {
    @Test
    void aHeapSegmentIsRefusedBecauseTheGraphRunsLater() {
        IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                () -> HostCopies.check(MemorySegment.ofArray(new float[4]), 16, false));
        assertTrue(heap.getMessage().startsWith("a memcpy node copies native host memory, not a heap segment"),
                heap.getMessage());
    }

    @Test
    void aSegmentOfAnotherSizeIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> HostCopies.check(arena.allocate(12), 16, true));
            assertEquals("memcpy node: the device buffer has 16 bytes but the host segment has 12", size.getMessage());
            assertDoesNotThrow(() -> HostCopies.check(arena.allocate(16), 16, true));
        }
    }

    @Test
    void aSegmentOfAClosedArenaIsRefused() {
        MemorySegment segment;
        try (Arena arena = Arena.ofConfined()) {
            segment = arena.allocate(16);
        }
        IllegalStateException closed = assertThrows(IllegalStateException.class,
                () -> HostCopies.check(segment, 16, false));
        assertEquals("the host segment's arena is closed", closed.getMessage());
    }

    @Test
    void aReadOnlySegmentIsReadButNeverWritten() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment readOnly = arena.allocate(16).asReadOnly();
            assertDoesNotThrow(() -> HostCopies.check(readOnly, 16, false));
            IllegalArgumentException written = assertThrows(IllegalArgumentException.class,
                    () -> HostCopies.check(readOnly, 16, true));
            assertEquals("memcpy node: the host segment is read-only, and the node writes it", written.getMessage());
        }
    }

    @Test
    void aNullSegmentIsNamed() {
        NullPointerException source = assertThrows(NullPointerException.class, () -> HostCopies.check(null, 4, false));
        assertEquals("source", source.getMessage());
        NullPointerException destination = assertThrows(NullPointerException.class,
                () -> HostCopies.check(null, 4, true));
        assertEquals("destination", destination.getMessage());
    }

    @Test
    void aBorrowedSegmentIsCountedWhileHeldAndFreesNothing() {
        long before = LiveCounters.count(LiveCounters.Kind.BORROWED_HOST_MEMORY);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(64);
            segment.fill((byte) 7);
            Lifetime borrowed = HostCopies.borrow(segment);
            assertTrue(borrowed.toString().startsWith(String.format("host memory 0x%X (64 bytes)",
                    segment.address())), borrowed.toString());
            borrowed.retain(); // as a graph holds it
            borrowed.close(); // the node's own reference
            assertEquals(before + 1, LiveCounters.count(LiveCounters.Kind.BORROWED_HOST_MEMORY));
            borrowed.release(); // the graph lets go
            assertFalse(borrowed.isOpen());
            assertEquals(before, LiveCounters.count(LiveCounters.Kind.BORROWED_HOST_MEMORY));
            assertEquals(7, segment.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63), "nothing was freed or touched");
        }
    }
}
