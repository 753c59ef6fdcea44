package org.cudagraph4j.internal.lifetime;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The memory one graph allocates through its own nodes (built, or captured from
 * {@code cudaMallocAsync}), and which of it the graph also frees. The graph owns that memory: each
 * allocation's buffer is a view whose lifetime frees nothing and which the graph closes with
 * itself. This library instantiates only graphs that free every allocation they make, so that no
 * memory outlives a launch where no one could free it.
 *
 * <p>Allocations are told apart by their views, not by their addresses: CUDA gives an allocation
 * made after another one's free node the freed one's address ("address reuse within a graph",
 * which {@code graphMemoryFootprint} shows), so two allocations of one graph may share an address.
 *
 * <p>The object is also the owner's identity: a graph-memory buffer names it, and may be used only
 * by nodes of the graph that holds it (or of the capture that becomes that graph).
 *
 * <p>Thread safety: safe; the methods synchronize on the object.
 */
public final class GraphAllocations {
    /** Each allocation by its view, in the order made; {@code null} until the first, as most graphs allocate nothing. */
    private Map<Lifetime, Entry> byView;
    /** The same entries in the order made, for {@link #unfreed()}'s message and {@link #closeViews()}. */
    private List<Entry> inOrder;

    private static final class Entry {
        final Lifetime view;
        boolean freed;

        Entry(Lifetime view) {
            this.view = view;
        }
    }

    /**
     * Records an allocation whose buffer's lifetime is {@code view}.
     *
     * @throws IllegalArgumentException if {@code view} is already recorded
     */
    public synchronized void allocated(Lifetime view) {
        if (byView == null) {
            byView = new IdentityHashMap<>();
            inOrder = new ArrayList<>();
        }
        Entry entry = new Entry(view);
        if (byView.putIfAbsent(view, entry) != null) {
            throw new IllegalArgumentException(view + " is already an allocation of this graph");
        }
        inOrder.add(entry);
    }

    /**
     * Records that the graph frees the allocation whose buffer's lifetime is {@code view}.
     *
     * @param buffer the buffer, described, for the message
     * @throws IllegalArgumentException if the graph did not allocate it, or already frees it
     */
    public synchronized void freed(Lifetime view, String buffer) {
        Entry entry = byView == null ? null : byView.get(view);
        if (entry == null) {
            throw new IllegalArgumentException(buffer + " is not memory this graph allocates: a free node frees only"
                    + " the graph's own allocations");
        }
        if (entry.freed) {
            throw new IllegalArgumentException(buffer + " is already freed in this graph; CUDA frees an allocation "
                    + "once");
        }
        entry.freed = true;
    }

    /** Undoes {@link #freed}: the free node could not be added. */
    public synchronized void freeFailed(Lifetime view) {
        byView.get(view).freed = false;
    }

    /** {@return whether the graph makes any allocation} */
    public synchronized boolean any() {
        return byView != null;
    }

    /** {@return the allocations the graph makes and does not free, by their buffers' descriptions} */
    public synchronized List<String> unfreed() {
        List<String> unfreed = new ArrayList<>();
        if (inOrder == null) {
            return unfreed;
        }
        for (Entry entry : inOrder) {
            if (!entry.freed) {
                unfreed.add(entry.view.toString());
            }
        }
        return unfreed;
    }

    /** Closes every allocation's buffer: the graph that owned them is gone. Idempotent. */
    public synchronized void closeViews() {
        if (inOrder == null) {
            return;
        }
        for (Entry entry : inOrder) {
            entry.view.close();
        }
    }
}
