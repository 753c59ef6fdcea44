package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The table of kernel nodes by address; no GPU needed. */
class NodeIndexTest {
    @Test
    void findsEveryAddressItWasGivenAndNoOther() {
        SplittableRandom random = new SplittableRandom(42);
        Map<Long, String> expected = new HashMap<>();
        for (int i = 0; i < 5000; i++) {
            // Node handles as the runtime hands them out: 16-byte aligned, often close together.
            long address = 0x7f00_0000_0000L + (random.nextInt(1 << 20) << 4);
            expected.put(address, "node " + i);
        }
        NodeIndex<String> index = new NodeIndex<>(expected.size());
        expected.forEach(index::put);
        expected.forEach((address, value) -> assertEquals(value, index.get(address)));
        for (int i = 0; i < 5000; i++) {
            long absent = 0x7f00_0000_0008L + (random.nextInt(1 << 20) << 4); // never 16-byte aligned
            assertNull(index.get(absent));
        }
    }

    @Test
    void aSecondPutReplacesAndAnEmptyIndexFindsNothing() {
        NodeIndex<String> index = new NodeIndex<>(1);
        index.put(0x1000, "first");
        index.put(0x1000, "second");
        assertEquals("second", index.get(0x1000));
        assertNull(NodeIndex.<String>empty().get(0x1000));
        assertThrows(IllegalArgumentException.class, () -> index.put(0, "null node"));
    }

    @Test
    void anIndexGrowsPastItsCapacityAndClearsToEmpty() {
        NodeIndex<Long> index = new NodeIndex<>(1);
        for (long i = 1; i <= 1000; i++) {
            index.put(i << 4, i);
        }
        for (long i = 1; i <= 1000; i++) {
            assertEquals(i, index.get(i << 4), "node " + i + " after the table grew");
        }
        index.clear();
        assertNull(index.get(16));
        index.put(16, 7L);
        assertEquals(7L, index.get(16));
    }

    @Test
    void forEachVisitsEveryEntryOnceAndAnEmptyIndexNone() {
        NodeIndex<Long> index = new NodeIndex<>(2);
        for (long i = 1; i <= 100; i++) {
            index.put(i << 4, i * 3);
        }
        Map<Long, Long> visited = new HashMap<>();
        index.forEach((node, value) -> assertNull(visited.put(node, value), "node " + node + " visited twice"));
        assertEquals(100, visited.size());
        visited.forEach((node, value) -> assertEquals((node >> 4) * 3, value));
        NodeIndex.<Long>empty().forEach((node, value) -> visited.clear());
        assertEquals(100, visited.size(), "the empty index visits nothing");
    }
}
