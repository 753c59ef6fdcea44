package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** A handle's bookkeeping, without a GPU: its graph, its defaults, and one node per handle. */
class ConditionalHandleTest {
    private final MemorySegment graph = MemorySegment.ofAddress(0x1000);
    private final ConditionalHandle handle = new ConditionalHandle(0x2A, graph, 3, false);

    @Test
    void describesItselfAndKnowsItsGraph() {
        assertEquals(0x2A, handle.value());
        assertEquals(3, handle.defaultValue());
        assertFalse(handle.resetsEachLaunch());
        assertTrue(handle.belongsTo(MemorySegment.ofAddress(0x1000)));
        assertFalse(handle.belongsTo(MemorySegment.ofAddress(0x2000)));
        assertEquals("ConditionalHandle 0x2A (default 3)", handle.toString());
        assertEquals("ConditionalHandle 0x7 (default 0, reset each launch)",
                new ConditionalHandle(7, graph, 0, true).toString());
    }

    @Test
    void drivesOneNodeAndIsGivenBackWhenTheNodeCouldNotBeAdded() {
        handle.claim();
        IllegalArgumentException second = assertThrows(IllegalArgumentException.class, handle::claim);
        assertEquals(handle + " already drives a conditional node, and CUDA allows one node per handle: make another "
                + "handle", second.getMessage());
        handle.release();
        handle.claim();
    }
}
