package org.cudagraph4j.graph;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * What each kernel node of one graph launches and uses, by node address: the nodes a capture
 * recorded, kept as the capture's list, and the nodes added since. The captured list is indexed
 * only when a node is first looked up: most captured graphs are instantiated and launched without
 * ever asking about one node, and building maps at the end of a capture cost as much as the rest
 * of it. Graphs only grow, so an entry never changes once added. Thread-safe.
 */
final class KernelNodes {
    /** What one kernel node launches and uses. */
    record Entry(KernelLaunch launch, List<Lifetime> uses) {}

    private final Captured captured;
    private final Map<Long, Entry> added;

    private KernelNodes(Captured captured, Map<Long, Entry> added) {
        this.captured = captured;
        this.added = added;
    }

    /** An empty table, for a graph built node by node. */
    static KernelNodes empty() {
        return new KernelNodes(new Captured(List.of()), new ConcurrentHashMap<>());
    }

    /** The kernel nodes a capture recorded, taken as they are. */
    static KernelNodes captured(List<CaptureTracker.KernelNode<KernelLaunch>> nodes) {
        return new KernelNodes(new Captured(nodes), new ConcurrentHashMap<>());
    }

    /** Records a node added to the graph. */
    void add(long node, KernelLaunch launch, List<Lifetime> uses) {
        added.put(node, new Entry(launch, List.copyOf(uses)));
    }

    /** {@return the node's entry, or {@code null} if it is not a kernel node launched through the library} */
    Entry get(long node) {
        Entry entry = added.get(node);
        return entry != null ? entry : captured.get(node);
    }

    /**
     * {@return the table as it is now, which nodes added later do not change} For an executable,
     * which holds what its graph's nodes used when it was made; it shares the captured list.
     */
    KernelNodes snapshot() {
        return new KernelNodes(captured, Map.copyOf(added));
    }

    /** The captured nodes and, once a node is looked up, their index by address. */
    private static final class Captured {
        private final List<CaptureTracker.KernelNode<KernelLaunch>> nodes;
        private volatile Map<Long, Entry> index;

        Captured(List<CaptureTracker.KernelNode<KernelLaunch>> nodes) {
            this.nodes = nodes;
        }

        Entry get(long node) {
            if (nodes.isEmpty()) {
                return null;
            }
            Map<Long, Entry> built = index;
            if (built == null) {
                synchronized (this) {
                    built = index;
                    if (built == null) {
                        built = HashMap.newHashMap(nodes.size());
                        for (CaptureTracker.KernelNode<KernelLaunch> captured : nodes) {
                            built.put(captured.node(), new Entry(captured.launch(), captured.uses()));
                        }
                        index = built;
                    }
                }
            }
            return built.get(node);
        }
    }
}
