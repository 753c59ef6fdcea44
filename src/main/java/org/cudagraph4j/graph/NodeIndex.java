package org.cudagraph4j.graph;

import java.util.Arrays;

/**
 * Values by node address: an open-addressing table of primitive keys, so that a lookup neither
 * boxes the address nor walks hash buckets (a node update looked its node up through a
 * {@code HashMap<Long, ...>} for a third of its Java samples). Addresses are never 0, which marks
 * an empty slot. Not synchronized: safe to read from several threads once published and no longer
 * changed, or under its owner's lock.
 *
 * @param <V> the values
 */
final class NodeIndex<V> {
    private static final NodeIndex<?> EMPTY = new NodeIndex<>(0);

    private long[] keys;
    private Object[] values;
    private int mask;
    private int size;

    /** An index with room for {@code capacity} entries before it grows, at most half full. */
    NodeIndex(int capacity) {
        allocate(capacity);
    }

    private void allocate(int capacity) {
        int slots = Integer.highestOneBit(Math.max(1, capacity) * 2 - 1) * 2;
        keys = new long[slots];
        values = new Object[slots];
        mask = slots - 1;
        size = 0;
    }

    @SuppressWarnings("unchecked") // holds nothing
    static <V> NodeIndex<V> empty() {
        return (NodeIndex<V>) EMPTY;
    }

    /**
     * Adds or replaces the value of {@code node}, growing the table past half full; only before the
     * index is shared, or under its owner's lock.
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
        if (keys[slot] == 0) {
            if (2 * (size + 1) > keys.length) {
                grow();
                put(node, value);
                return;
            }
            size++;
        }
        keys[slot] = node;
        values[slot] = value;
    }

    /** Removes every entry, keeping the table's room. */
    void clear() {
        Arrays.fill(keys, 0);
        Arrays.fill(values, null);
        size = 0;
    }

    @SuppressWarnings("unchecked") // only put stores values, all of type V
    private void grow() {
        long[] oldKeys = keys;
        Object[] oldValues = values;
        allocate(oldKeys.length); // twice the entries: allocate keeps the table at most half full
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != 0) {
                put(oldKeys[i], (V) oldValues[i]);
            }
        }
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

    /** What {@link #forEach} hands each entry to. */
    @FunctionalInterface
    interface Visitor<V> {
        void visit(long node, V value);
    }

    /** Hands every entry to {@code visitor}, in no particular order. */
    @SuppressWarnings("unchecked") // only put stores values, all of type V
    void forEach(Visitor<? super V> visitor) {
        for (int slot = 0; slot < keys.length; slot++) {
            if (keys[slot] != 0) {
                visitor.visit(keys[slot], (V) values[slot]);
            }
        }
    }

    /** Addresses are aligned, so their low bits say little: a multiplicative hash spreads them. */
    private int slot(long node) {
        return (int) ((node * 0x9E3779B97F4A7C15L) >>> 32) & mask;
    }
}
