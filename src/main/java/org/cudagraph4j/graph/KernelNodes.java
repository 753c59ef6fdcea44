package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Driver;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * What each kernel node of one graph launches and uses, by node address: the launches a capture
 * recorded, kept as the capture's runs, and the nodes added since. The runs are resolved to nodes
 * ({@link CaptureTracker.Run#resolve}) and indexed only when a node is first looked up, or the
 * graph is instantiated: most captured graphs are launched without ever asking about one node, and
 * building maps at the end of a capture cost as much as the rest of it. Graphs only grow, so an
 * entry never changes once added. Thread-safe.
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

    /**
     * The kernel launches a capture recorded into {@code graph}, taken as they are.
     *
     * @param graphLifetime held while the runs are resolved: a closed graph resolves none
     */
    static KernelNodes captured(List<CaptureTracker.Run<KernelLaunch>> runs, MemorySegment graph, int device,
            Lifetime graphLifetime) {
        return new KernelNodes(new Captured(runs, graph, device, graphLifetime), new ConcurrentHashMap<>());
    }

    /** Records a node added to the graph. */
    void add(long node, KernelLaunch launch, List<Lifetime> uses) {
        added.put(node, new Entry(launch, List.copyOf(uses)));
    }

    /** {@return the node's entry, or {@code null} if it is not a kernel node launched through the library} */
    Entry get(long node) {
        Entry entry = captured.get(node); // no boxing for a captured graph's nodes
        return entry != null ? entry : added.get(node);
    }

    /**
     * {@return the table as it is now, which nodes added later do not change} For an executable,
     * which holds what its graph's nodes used when it was made; it shares the captured runs,
     * resolved now, while the graph is sure to be open.
     */
    KernelNodes snapshot() {
        captured.index();
        return new KernelNodes(captured, Map.copyOf(added));
    }

    /**
     * Hands every entry to {@code visitor}, node by node: the captured runs', resolved first, and
     * those of the nodes added since.
     */
    void forEach(NodeIndex.Visitor<Entry> visitor) {
        captured.index().forEach(visitor);
        added.forEach(visitor::visit);
    }

    /**
     * Resolves the captured runs now, before a node or an edge is added: the walk from each run's
     * last node relies on the dependencies the capture made, and a run's last node may be the
     * graph's sink as the capture left it.
     */
    void resolveBeforeGraphChanges() {
        captured.index();
    }

    /** The captured runs and, once resolved, their nodes by address. */
    private static final class Captured {
        private final List<CaptureTracker.Run<KernelLaunch>> runs;
        private final MemorySegment graph;
        private final int device;
        private final Lifetime graphLifetime;
        private volatile NodeIndex<Entry> index;

        Captured(List<CaptureTracker.Run<KernelLaunch>> runs, MemorySegment graph, int device, Lifetime graphLifetime) {
            this.runs = runs;
            this.graph = graph;
            this.device = device;
            this.graphLifetime = graphLifetime;
            if (runs.isEmpty()) {
                index = NodeIndex.empty();
            }
        }

        Entry get(long node) {
            return index().get(node);
        }

        NodeIndex<Entry> index() {
            NodeIndex<Entry> built = index;
            if (built == null) {
                synchronized (this) {
                    built = index;
                    if (built == null) {
                        built = resolve();
                        index = built;
                    }
                }
            }
            return built;
        }

        private NodeIndex<Entry> resolve() {
            try {
                graphLifetime.retain(); // the graph cannot be destroyed during the walk
            } catch (IllegalStateException closed) {
                return NodeIndex.empty();
            }
            try {
                EdgeChain chain = new EdgeChain(graph);
                LaunchMatcher matcher = new LaunchMatcher(device);
                List<CaptureTracker.KernelNode<KernelLaunch>> nodes = new ArrayList<>();
                for (CaptureTracker.Run<KernelLaunch> run : runs) {
                    nodes.addAll(run.resolve(chain, matcher));
                }
                NodeIndex<Entry> resolved = new NodeIndex<>(nodes.size());
                for (CaptureTracker.KernelNode<KernelLaunch> node : nodes) {
                    resolved.put(node.node(), new Entry(node.launch(), node.uses()));
                }
                return resolved;
            } finally {
                graphLifetime.release();
            }
        }
    }

    /**
     * Whether a kernel node launches a recorded launch's kernel, as the driver reports the node
     * ({@code cuGraphKernelNodeGetParams}): asked only for runs that other libraries' kernels
     * interleave, whose plain walk failed. A launch through {@code cudaKernel_t} becomes a node of
     * that kernel's function in the device's context ({@code cuKernelGetFunction}), or of the kernel
     * itself.
     */
    private static final class LaunchMatcher implements CaptureTracker.LaunchMatcher<KernelLaunch> {
        private final int device;
        private final Map<Long, Long> functions = new HashMap<>();

        LaunchMatcher(int device) {
            this.device = device;
        }

        @Override
        public boolean launches(long node, KernelLaunch launch) {
            return launchesKernel(node, launch.kernel(), device, functions);
        }
    }

    /**
     * Whether kernel node {@code node} launches {@code kernel}, as the driver reports the node;
     * false where the driver cannot tell.
     *
     * @param functions each kernel's function in the device's context, by kernel address, filled as asked
     */
    static boolean launchesKernel(long node, CudaKernel kernel, int device, Map<Long, Long> functions) {
        Driver.KernelNode params = Driver.kernelNode(MemorySegment.ofAddress(node));
        if (params == null) {
            return false;
        }
        MemorySegment handle;
        try {
            handle = kernel.handle();
        } catch (IllegalStateException libraryClosed) {
            return false; // a graph may keep the module loaded, but the handle is no longer handed out
        }
        if (params.kernel() == handle.address() || params.function() == handle.address()) {
            return true;
        }
        long function = functions.computeIfAbsent(handle.address(), address -> {
            Devices.use(device); // a function belongs to the context it was asked in
            return Driver.functionOf(handle);
        });
        return function != 0 && params.function() == function;
    }

    /**
     * A graph's dependencies, read in one call ({@code cudaGraphGetEdges}), its nodes' types, read
     * as walked, and its nodes ({@code cudaGraphGetNodes}), read only if a run needs the graph's sink.
     */
    private static final class EdgeChain implements CaptureTracker.Chain {
        private final MemorySegment graph;
        private final Map<Long, Long> onlyDependency = new HashMap<>();
        private final Set<Long> dependedOn = new HashSet<>();
        private final Map<Long, Boolean> kernel = new HashMap<>();

        EdgeChain(MemorySegment graph) {
            this.graph = graph;
            for (Graphs.Edge edge : Graphs.edges(graph)) {
                onlyDependency.merge(edge.to().address(), edge.from().address(),
                        (first, second) -> CaptureTracker.UNKNOWN_NODE);
                dependedOn.add(edge.from().address());
            }
        }

        @Override
        public long onlyDependency(long node) {
            return onlyDependency.getOrDefault(node, CaptureTracker.NO_NODE);
        }

        @Override
        public boolean isKernel(long node) {
            return kernel.computeIfAbsent(node, address ->
                    GraphNodeType.fromValue(Graphs.nodeType(MemorySegment.ofAddress(address))) == GraphNodeType.KERNEL);
        }

        @Override
        public long onlySink() {
            long sink = CaptureTracker.NO_NODE;
            for (MemorySegment node : Graphs.nodes(graph)) {
                if (!dependedOn.contains(node.address())) {
                    if (sink != CaptureTracker.NO_NODE) {
                        return CaptureTracker.UNKNOWN_NODE;
                    }
                    sink = node.address();
                }
            }
            return sink;
        }
    }
}
