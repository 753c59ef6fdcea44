package org.cudagraph4j.graph;

/**
 * Values by node address, filled once and then only read: an open-addressing table of primitive
 * keys, so that a lookup neither boxes the address nor walks hash buckets (a node update looked its
 * node up through a {@code HashMap<Long, ...>} for a third of its Java samples). Addresses are
 * never 0, which marks an empty slot. Safe to read from several threads once published.
 *
 * @param <V> the values
 */
final class NodeIndex<V> {
    private static final NodeIndex<?> EMPTY = new NodeIndex<>(0);

    private final long[] keys;
    private final Object[] values;
    private final int mask;

    /** An index with room for {@code capacity} entries, at most half full. */
    NodeIndex(int capacity) {
        int size = Integer.highestOneBit(Math.max(1, capacity) * 2 - 1) * 2;
        keys = new long[size];
        values = new Object[size];
        mask = size - 1;
    }

    @SuppressWarnings("unchecked") // holds nothing
    static <V> NodeIndex<V> empty() {
        return (NodeIndex<V>) EMPTY;
    }

    /**
     * Adds or replaces the value of {@code node}; only before the index is shared.
     *
     * @throws IllegalArgumentException if {@code node} is 0
     */
    void put(long node, V value) {
        if (node == 0) {
            throw new IllegalArgumentException("a node address is never 0");
        }
        int slot = slot(node);
        while (keys[slot] != 0 && keys[slot] != node) {
            slot = (slot + 1) & mask;
        }
        keys[slot] = node;
        values[slot] = value;
    }

    /** {@return the value of {@code node}, or {@code null}} */
    @SuppressWarnings("unchecked") // only put stores values, all of type V
    V get(long node) {
        int slot = slot(node);
        long key;
        while ((key = keys[slot]) != 0) {
            if (key == node) {
                return (V) values[slot];
            }
            slot = (slot + 1) & mask;
        }
        return null;
    }

    /** Addresses are aligned, so their low bits say little: a multiplicative hash spreads them. */
    private int slot(long node) {
        return (int) ((node * 0x9E3779B97F4A7C15L) >>> 32) & mask;
    }
}
