package org.cudagraph4j.internal.lifetime;

import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The resources one owner (a graph, an executable graph, a capture) keeps alive, as a multiset: a
 * resource used by several nodes is retained once, and released when the last node that used it
 * is dropped. So an executable updated a million times holds exactly what its current nodes use.
 * Thread-safe.
 */
public final class HeldResources {
    /**
     * Up to this many distinct resources are found by a scan of {@link #held}; beyond it, through
     * {@link #index}. A graph holds a few (its kernels' library, some buffers), and scanning them
     * costs less than a hash map's hashing, nodes and table, which were a fifth of a 10-node
     * capture's Java samples.
     */
    private static final int SCANNED = 8;

    /** The distinct resources held, {@link #size} of them, each with its number of uses in {@link #uses}. */
    private Lifetime[] held = new Lifetime[2];
    private int[] uses = new int[2];
    private int size;
    /** Each held resource's position in {@link #held}, once there are more than {@link #SCANNED}. */
    private Map<Lifetime, Integer> index;

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
                add(lifetime, times);
                added++;
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < added; i++) {
                remove(lifetimes.get(i), times);
            }
            throw e;
        }
    }

    /** Removes one use of each lifetime, releasing those no longer used. */
    public synchronized void drop(List<Lifetime> lifetimes) {
        for (Lifetime lifetime : lifetimes) {
            remove(lifetime, 1);
        }
    }

    /** {@return each held resource with its number of uses, as it is now} */
    public synchronized Map<Lifetime, Integer> counts() {
        Map<Lifetime, Integer> counts = HashMap.newHashMap(size);
        for (int i = 0; i < size; i++) {
            counts.put(held[i], uses[i]);
        }
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
                add(lifetime, n);
                added.put(lifetime, n);
            });
        } catch (RuntimeException e) {
            dropCounts(added);
            throw e;
        }
    }

    /** Removes {@code counts.get(r)} uses of each resource {@code r}, releasing those no longer used. */
    public synchronized void dropCounts(Map<Lifetime, Integer> counts) {
        counts.forEach((lifetime, n) -> remove(lifetime, n));
    }

    /** Releases everything held. */
    public synchronized void dropAll() {
        Lifetime[] all = Arrays.copyOf(held, size); // emptied before the releases, which run frees
        Arrays.fill(held, 0, size, null);
        Arrays.fill(uses, 0, size, 0);
        size = 0;
        index = null;
        RuntimeException failure = null;
        for (Lifetime lifetime : all) {
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
        return List.of(Arrays.copyOf(held, size));
    }

    /** Adds {@code times} uses of {@code lifetime}, retaining it first if it is not held yet. */
    private void add(Lifetime lifetime, int times) {
        int at = find(lifetime);
        if (at < 0) {
            lifetime.retain();
            at = append(lifetime);
        }
        uses[at] += times;
    }

    /** Removes {@code times} uses of {@code lifetime}, releasing it when none is left. */
    private void remove(Lifetime lifetime, int times) {
        int at = find(lifetime);
        if (at < 0 || uses[at] < times) {
            throw new IllegalStateException(lifetime + " is not held" + (times == 1 ? "" : " " + times + " times"));
        }
        uses[at] -= times;
        if (uses[at] == 0) {
            removeAt(at);
            lifetime.release();
        }
    }

    private int find(Lifetime lifetime) {
        if (index != null) {
            Integer at = index.get(lifetime);
            return at == null ? -1 : at;
        }
        for (int i = 0; i < size; i++) {
            if (held[i] == lifetime) {
                return i;
            }
        }
        return -1;
    }

    private int append(Lifetime lifetime) {
        if (size == held.length) {
            held = Arrays.copyOf(held, size * 2);
            uses = Arrays.copyOf(uses, size * 2);
        }
        int at = size++;
        held[at] = lifetime;
        if (index != null) {
            index.put(lifetime, at);
        } else if (size > SCANNED) {
            index = new IdentityHashMap<>(size * 2);
            for (int i = 0; i < size; i++) {
                index.put(held[i], i);
            }
        }
        return at;
    }

    /** Removes entry {@code at}, moving the last entry into its place. */
    private void removeAt(int at) {
        int last = --size;
        if (index != null) {
            index.remove(held[at]);
        }
        if (at != last) {
            held[at] = held[last];
            uses[at] = uses[last];
            if (index != null) {
                index.put(held[at], at);
            }
        }
        held[last] = null;
        uses[last] = 0;
    }
}
