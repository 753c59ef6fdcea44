package org.cudagraph4j.internal.lifetime;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The resources one owner (a graph, an executable graph, a capture) keeps alive, as a multiset: a
 * resource used by several nodes is retained once, and released when the last node that used it
 * is dropped. So an executable updated a million times holds exactly what its current nodes use.
 * Thread-safe.
 */
public final class HeldResources {
    /** Uses per resource, counted in place: a capture adds one use per node, thousands at a time. */
    private Map<Lifetime, Count> uses = new HashMap<>();

    private static final class Count {
        int value;
    }

    /**
     * Adds one use of each lifetime, retaining those not held yet; all or nothing.
     *
     * @throws IllegalStateException if one was already freed; nothing is then held
     */
    public synchronized void hold(List<Lifetime> lifetimes) {
        hold(lifetimes, 1);
    }

    /**
     * Adds {@code times} uses of each lifetime, retaining those not held yet; all or nothing.
     *
     * @throws IllegalStateException if one was already freed; nothing is then held
     */
    public synchronized void hold(List<Lifetime> lifetimes, int times) {
        int added = 0;
        try {
            for (Lifetime lifetime : lifetimes) {
                Count count = uses.get(lifetime);
                if (count == null) {
                    lifetime.retain();
                    count = new Count();
                    uses.put(lifetime, count);
                }
                count.value += times;
                added++;
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < times; i++) {
                drop(lifetimes.subList(0, added));
            }
            throw e;
        }
    }

    /** Removes one use of each lifetime, releasing those no longer used. */
    public synchronized void drop(List<Lifetime> lifetimes) {
        for (Lifetime lifetime : lifetimes) {
            Count count = uses.get(lifetime);
            if (count == null) {
                throw new IllegalStateException(lifetime + " is not held");
            }
            if (--count.value == 0) {
                uses.remove(lifetime);
                lifetime.release();
            }
        }
    }

    /** {@return each held resource with its number of uses, as it is now} */
    public synchronized Map<Lifetime, Integer> counts() {
        Map<Lifetime, Integer> counts = HashMap.newHashMap(uses.size());
        uses.forEach((lifetime, count) -> counts.put(lifetime, count.value));
        return counts;
    }

    /**
     * Adds {@code counts.get(r)} uses of each resource {@code r}, retaining those not held yet; all or
     * nothing. Work in the number of distinct resources, not of uses: a graph of a thousand nodes
     * over one library and two buffers is three entries.
     *
     * @throws IllegalStateException if one was already freed; nothing is then added
     */
    public synchronized void holdCounts(Map<Lifetime, Integer> counts) {
        Map<Lifetime, Integer> added = HashMap.newHashMap(counts.size());
        try {
            counts.forEach((lifetime, n) -> {
                Count count = uses.get(lifetime);
                if (count == null) {
                    lifetime.retain();
                    count = new Count();
                    uses.put(lifetime, count);
                }
                count.value += n;
                added.put(lifetime, n);
            });
        } catch (RuntimeException e) {
            dropCounts(added);
            throw e;
        }
    }

    /** Removes {@code counts.get(r)} uses of each resource {@code r}, releasing those no longer used. */
    public synchronized void dropCounts(Map<Lifetime, Integer> counts) {
        counts.forEach((lifetime, n) -> {
            Count count = uses.get(lifetime);
            if (count == null || count.value < n) {
                throw new IllegalStateException(lifetime + " is not held " + n + " times");
            }
            count.value -= n;
            if (count.value == 0) {
                uses.remove(lifetime);
                lifetime.release();
            }
        });
    }

    /** Releases everything held. */
    public synchronized void dropAll() {
        Map<Lifetime, Count> held = uses;
        uses = new HashMap<>();
        RuntimeException failure = null;
        for (Lifetime lifetime : held.keySet()) {
            try {
                lifetime.release();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Each held lifetime once. */
    public synchronized List<Lifetime> distinct() {
        return List.copyOf(uses.keySet());
    }
}
