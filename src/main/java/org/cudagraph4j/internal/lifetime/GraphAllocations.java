package org.cudagraph4j.internal.lifetime;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The memory one graph allocates through its own nodes (built, or captured from
 * {@code cudaMallocAsync}), and which of it the graph also frees. The graph owns that memory: each
 * allocation's buffer is a view whose lifetime frees nothing and which the graph closes with
 * itself. This library instantiates only graphs that free every allocation they make, so that no
 * memory outlives a launch where no one could free it.
 *
 * <p>The object is also the owner's identity: a graph-memory buffer names it, and may be used only
 * by nodes of the graph that holds it (or of the capture that becomes that graph).
 *
 * <p>Thread safety: safe; the methods synchronize on the object.
 */
public final class GraphAllocations {
    /** Each allocation by address, in the order made; {@code null} until the first, as most graphs allocate nothing. */
    private Map<Long, Entry> byAddress;

    private static final class Entry {
        final Lifetime view;
        boolean freed;

        Entry(Lifetime view) {
            this.view = view;
        }
    }

    /** Records an allocation at {@code address} whose buffer's lifetime is {@code view}. */
    public synchronized void allocated(long address, Lifetime view) {
        if (byAddress == null) {
            byAddress = new LinkedHashMap<>();
        }
        byAddress.put(address, new Entry(view));
    }

    /**
     * Records that the graph frees the allocation at {@code address}.
     *
     * @throws IllegalArgumentException if the graph did not allocate it, or already frees it
     */
    public synchronized void freed(long address, String buffer) {
        Entry entry = byAddress == null ? null : byAddress.get(address);
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
    public synchronized void freeFailed(long address) {
        byAddress.get(address).freed = false;
    }

    /** {@return whether the graph makes any allocation} */
    public synchronized boolean any() {
        return byAddress != null;
    }

    /** {@return the allocations the graph makes and does not free, by their buffers' descriptions} */
    public synchronized List<String> unfreed() {
        List<String> unfreed = new ArrayList<>();
        if (byAddress == null) {
            return unfreed;
        }
        for (Entry entry : byAddress.values()) {
            if (!entry.freed) {
                unfreed.add(entry.view.toString());
            }
        }
        return unfreed;
    }

    /** Closes every allocation's buffer: the graph that owned them is gone. Idempotent. */
    public synchronized void closeViews() {
        if (byAddress == null) {
            return;
        }
        for (Entry entry : byAddress.values()) {
            entry.view.close();
        }
    }
}
