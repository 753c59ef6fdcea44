package org.cudagraph4j.internal.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The bookkeeping of a graph's own memory, without a device: views stand for the buffers that
 * allocation nodes return. CUDA gives an allocation made after another's free node the freed one's
 * address, so the records must tell allocations apart by view, never by address.
 */
class GraphAllocationsTest {
    private static Lifetime view(String name) {
        return new Lifetime(LiveCounters.Kind.DEVICE_BUFFER, 0, name, () -> { });
    }

    @Test
    void twoAllocationsAtOneAddressAreBothClosedWithTheGraph() {
        long before = LiveCounters.count(LiveCounters.Kind.DEVICE_BUFFER);
        GraphAllocations graph = new GraphAllocations();
        Lifetime first = view("first, at 0x7F0000000000");
        Lifetime second = view("second, at 0x7F0000000000 too");
        graph.allocated(first);
        graph.freed(first, "first");
        graph.allocated(second); // a reused address must not hide the first
        assertEquals(List.of("second, at 0x7F0000000000 too"), graph.unfreed());
        graph.freed(second, "second");
        assertEquals(List.of(), graph.unfreed());
        assertEquals(before + 2, LiveCounters.count(LiveCounters.Kind.DEVICE_BUFFER));
        graph.closeViews();
        assertFalse(first.isOpen());
        assertFalse(second.isOpen());
        assertEquals(before, LiveCounters.count(LiveCounters.Kind.DEVICE_BUFFER), "both views were freed");
        graph.closeViews(); // idempotent
        assertEquals(before, LiveCounters.count(LiveCounters.Kind.DEVICE_BUFFER));
    }

    @Test
    void freeingTheFirstAllocationTwiceIsRefusedEvenAfterItsAddressIsReused() {
        GraphAllocations graph = new GraphAllocations();
        Lifetime first = view("first");
        Lifetime second = view("second");
        graph.allocated(first);
        graph.freed(first, "first");
        graph.allocated(second);
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class, () -> graph.freed(first,
                "first"));
        assertEquals("first is already freed in this graph; CUDA frees an allocation once", twice.getMessage());
        assertEquals(List.of("second"), graph.unfreed(), "the second allocation is still to be freed");
        graph.closeViews();
    }

    @Test
    void aViewOfAnotherGraphIsNotFreedHere() {
        GraphAllocations graph = new GraphAllocations();
        GraphAllocations other = new GraphAllocations();
        Lifetime mine = view("mine");
        Lifetime theirs = view("theirs");
        graph.allocated(mine);
        other.allocated(theirs);
        IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                () -> graph.freed(theirs, "theirs"));
        assertTrue(foreign.getMessage().startsWith("theirs is not memory this graph allocates"),
                foreign.getMessage());
        graph.closeViews();
        other.closeViews();
    }

    @Test
    void aFailedFreeNodeLeavesTheAllocationToFree() {
        GraphAllocations graph = new GraphAllocations();
        assertFalse(graph.any());
        Lifetime scratch = view("scratch");
        graph.allocated(scratch);
        assertTrue(graph.any());
        graph.freed(scratch, "scratch");
        graph.freeFailed(scratch);
        assertEquals(List.of("scratch"), graph.unfreed());
        assertThrows(IllegalArgumentException.class, () -> graph.allocated(scratch));
        graph.closeViews();
    }
}
