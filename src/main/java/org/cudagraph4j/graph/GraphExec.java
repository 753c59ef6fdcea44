package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GraphAccess;
import org.cudagraph4j.KernelArguments;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.error.StreamCaptureException;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.HostFunctions;
import org.cudagraph4j.internal.lifetime.HeldResources;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * An executable graph ({@code cudaGraphExec_t}), made by {@link CudaGraph#instantiate}. One
 * {@link #launch} submits the whole graph.
 *
 * <p>It is independent of the template it came from (which may be closed), and keeps alive exactly
 * what its current nodes use: the kernels' libraries and the buffers and events they touch. An
 * {@link #update} or {@link #updateKernelNode} that replaces a buffer lets go of the old one (so a
 * buffer closed by its owner is freed then), and a failed one changes nothing.
 *
 * <p>Thread safety: safe to use from several threads. The runtime does not synchronize access to
 * one executable graph, so its operations ({@link #launch}, {@link #upload}, the updates and
 * {@link #close}) take a lock and run one at a time; launches stay ordered on their streams as
 * usual. Distinct executables do not contend.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphLaunch</a>
 */
public final class GraphExec extends GraphResource {
    /** What this package does with the root package's objects beyond their public API. */
    private static final GraphAccess ROOT = GraphAccess.get();

    private final CudaGraph template;
    private final ReentrantLock lock = new ReentrantLock();
    private final HeldResources held;
    /**
     * What each kernel node of the template used when this was made, until {@link #update} replaces
     * them all ({@code null} then); guarded by {@link #lock}.
     */
    private KernelNodes instantiatedNodes;
    /** What each kernel node uses since {@link #updateKernelNode} replaced it; guarded by {@link #lock}. */
    private final NodeIndex<List<Lifetime>> updatedNodeUses = new NodeIndex<>(4);
    /** The host functions among what this holds, told at each launch where to report a failure. */
    private volatile HostFunctions.Registration[] hostFunctions;

    /**
     * Takes over the native {@code handle} and {@code held}, which holds what the template's nodes use,
     * {@code kernelNodes}' among them.
     */
    GraphExec(MemorySegment handle, HeldResources held, KernelNodes kernelNodes, CudaGraph template) {
        super(handle, new Lifetime(LiveCounters.Kind.GRAPH_EXEC, 0, "GraphExec", handle,
                () -> free(handle, held, template)));
        this.template = template;
        this.held = held;
        instantiatedNodes = kernelNodes;
        hostFunctions = hostFunctionsOf(held);
        lifetime().watch(this);
    }

    /**
     * Queues the whole graph on {@code stream}.
     *
     * @param stream the stream to launch on
     * @throws IllegalStateException if this executable or {@code stream} is closed
     * @throws StreamCaptureException if {@code stream} is capturing: the runtime refuses
     *     {@code cudaGraphLaunch} there ({@code cudaErrorStreamCaptureUnsupported}, seen with driver
     *     580); nest the template with {@link CudaGraph#addChildGraph} instead, which keeps what it
     *     uses alive
     */
    public void launch(CudaStream stream) {
        MemorySegment streamHandle = stream.handle();
        lock.lock();
        try {
            for (HostFunctions.Registration hostFunction : hostFunctions) {
                hostFunction.reportTo(streamHandle);
            }
            Graphs.launch(handle(), streamHandle);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Uploads the graph's work to the device ahead of the first launch, ordered on {@code stream}.
     *
     * @param stream the stream the upload is ordered on
     * @throws IllegalStateException if this executable or {@code stream} is closed
     */
    public void upload(CudaStream stream) {
        MemorySegment streamHandle = stream.handle();
        lock.lock();
        try {
            Graphs.upload(handle(), streamHandle);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes the parameters of {@code graph}, which must have this graph's topology and node types
     * ({@code cudaGraphExecUpdate}); a kernel node may change its kernel within the same context.
     * From then on this executable holds what {@code graph}'s nodes use, and lets go of what it held
     * before.
     *
     * @param graph a graph of the same topology; it may be closed afterwards
     * @throws GraphUpdateException naming the result kind (e.g. {@link UpdateResult#TOPOLOGY_CHANGED})
     *     and the node at fault; this executable is then unchanged
     * @throws IllegalStateException if this executable or {@code graph} is closed
     */
    public void update(CudaGraph graph) {
        MemorySegment graphHandle = graph.handle();
        Map<Lifetime, Integer> next = graph.useCounts();
        lock.lock();
        try {
            MemorySegment exec = handle();
            // This holds exactly what its nodes use, so swapping the counts swaps what it keeps alive.
            Map<Lifetime, Integer> previous = held.counts();
            held.holdCounts(next);
            try {
                template.useDevice();
                Graphs.update(exec, graphHandle, failure -> new GraphUpdateException(failure.error(),
                        UpdateResult.fromValue(failure.result()), graph.nodeOrNull(failure.node()),
                        graph.nodeOrNull(failure.fromNode())));
            } catch (RuntimeException e) {
                held.dropCounts(next);
                throw e;
            }
            held.dropCounts(previous);
            // The runtime pairs nodes by topology, not by handle, so which template node took which of
            // graph's parameters is unknown: a later updateKernelNode adds to what is held rather than
            // replacing a node's share, until the next update replaces it all.
            instantiatedNodes = null;
            updatedNodeUses.clear();
            hostFunctions = hostFunctionsOf(held);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Changes one kernel node's arguments or launch shape in this executable only
     * ({@code cudaGraphExecKernelNodeSetParams}): no re-instantiation, and the template is untouched.
     * The kernel must stay the same. What the node used before and no other node uses is let go.
     *
     * @param node a kernel node of the graph this was instantiated from
     * @param params the new launch: the same kernel, with other arguments or another grid, block or shared
     *     memory, and the node's own cluster shape and cooperative launch, which an executable keeps as
     *     they were instantiated (programmatic dependent launch, the node's incoming edges, is left as it is)
     * @throws IllegalArgumentException if {@code node} is not from the graph this was instantiated from, the
     *     arguments do not fit the kernel's parameters, a buffer among them is on a device that the graph's
     *     device cannot reach, the launch attributes differ from the node's, or a cluster or cooperative
     *     shape cannot run on the device
     * @throws IllegalStateException if {@code node} is not a kernel node, or if its graph, this executable, a buffer
     *     among the arguments or the kernel's library is closed
     */
    public void updateKernelNode(GraphNode node, KernelLaunch params) {
        if (node.graph() != template) {
            throw new IllegalArgumentException(node + " is not a node of the graph this executable was made from");
        }
        node.requireType(GraphNodeType.KERNEL);
        requireKnownKernel(node, params);
        LaunchConfig config = params.config();
        requireSameAttributes(node, config);
        if (ROOT.hasNodeAttributes(config)) {
            ROOT.checkAttributes(params.kernel(), template.device(), config);
        }
        lock.lock();
        try (KernelArguments arguments = CudaGraph.temporaryArguments(params)) {
            MemorySegment exec = handle();
            long address = node.handle().address();
            List<Lifetime> uses = ROOT.uses(params);
            List<Lifetime> previous = usesOf(address);
            // New shapes or scalars keep the same buffers: nothing to hold or let go (the hash bookkeeping
            // took a fifth of an update's Java samples on the H200).
            boolean sameUses = uses.equals(previous);
            if (!sameUses) {
                held.hold(uses);
            }
            try {
                template.useDevice(); // the node's kernel is set in its device's context
                Graphs.setKernelNodeParams(exec, node.handle(), ROOT.nativeLaunch(config),
                        params.kernel().handle(), template.argumentPointers(arguments));
            } catch (RuntimeException e) {
                if (!sameUses) {
                    held.drop(uses);
                }
                throw e;
            }
            if (!sameUses) {
                updatedNodeUses.put(address, uses);
                if (previous != null) {
                    held.drop(previous);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Refuses launch attributes other than the node's: an executable keeps a node's cluster shape and
     * cooperative launch as they were when it was instantiated. A node whose launch the library did
     * not record has none that it knows of. Programmatic dependent launch is the node's incoming
     * edges, which an update leaves as they are, so it is not compared.
     */
    private static void requireSameAttributes(GraphNode node, LaunchConfig config) {
        KernelLaunch recorded = node.kernelParams().orElse(null);
        LaunchConfig built = recorded == null ? null : recorded.config();
        if (built == config) {
            return; // the node's own configuration, as an update of its arguments alone passes it
        }
        Dim3 cluster = built == null ? null : built.cluster();
        boolean cooperative = built != null && built.cooperative();
        if (Objects.equals(cluster, config.cluster()) && cooperative == config.cooperative()) {
            return;
        }
        throw new IllegalArgumentException("updateKernelNode cannot change the launch attributes of node " + node.id()
                + " (" + attributes(cluster, cooperative) + ") to " + attributes(config.cluster(), config.cooperative())
                + ": an executable keeps a node's cluster shape and cooperative launch as they were instantiated;"
                + " change the graph and instantiate it again");
    }

    private static String attributes(Dim3 cluster, boolean cooperative) {
        if (cluster == null) {
            return cooperative ? "cooperative launch" : "no cluster shape, not cooperative";
        }
        return "clusters of " + cluster + (cooperative ? ", cooperative launch" : "");
    }

    /**
     * Refuses a node whose launch the library does not know unless the driver says it launches the
     * same kernel: its arguments may be another library's, whose buffers and lifetimes nothing here
     * tracks, and CUDA would let the update replace them with anything.
     */
    private void requireKnownKernel(GraphNode node, KernelLaunch params) {
        if (node.kernelParams().isPresent()
                || KernelNodes.launchesKernel(node.handle().address(), params.kernel(), template.device().ordinal(),
                        new HashMap<>())) {
            return;
        }
        throw new IllegalArgumentException("updateKernelNode cannot update node " + node.id() + " ("
                + node.kernelInfo().name() + "): it was not launched through cudagraph4j, so its parameters are "
                + "not known, and " + params.kernel().name() + " is not its kernel; capture the work again and "
                + "update the whole executable with update(CudaGraph)");
    }

    /**
     * Destroys the executable and lets go of what it held; launches already queued still complete.
     * Idempotent.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            lifetime().close();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Turns a node of this executable off or back on, without an update
     * ({@code cudaGraphNodeSetEnabled}): a disabled node does nothing at launch (a kernel does not
     * run, a copy or memset does not happen) and the nodes after it still wait for its
     * dependencies. Every node starts enabled.
     *
     * @param node a kernel, memcpy or memset node of the graph this was instantiated from
     * @param enabled whether it runs at the next launches
     * @throws IllegalArgumentException if {@code node} is not from the graph this was instantiated from, or is of
     *     another type, which CUDA cannot disable
     * @throws IllegalStateException if this executable is closed
     */
    public void setEnabled(GraphNode node, boolean enabled) {
        requireSwitchable(node);
        lock.lock();
        try {
            MemorySegment exec = handle();
            template.useDevice();
            Graphs.setNodeEnabled(exec, node.handle(), enabled);
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@return whether {@code node} runs at this executable's launches ({@code cudaGraphNodeGetEnabled})}
     *
     * @param node a kernel, memcpy or memset node of the graph this was instantiated from
     * @throws IllegalArgumentException as {@link #setEnabled} does
     * @throws IllegalStateException if this executable is closed
     */
    public boolean isEnabled(GraphNode node) {
        requireSwitchable(node);
        lock.lock();
        try {
            MemorySegment exec = handle();
            template.useDevice();
            return Graphs.isNodeEnabled(exec, node.handle());
        } finally {
            lock.unlock();
        }
    }

    private void requireSwitchable(GraphNode node) {
        if (node.graph() != template) {
            throw new IllegalArgumentException(node + " is not a node of the graph this executable was made from");
        }
        GraphNodeType type = node.type();
        if (type != GraphNodeType.KERNEL && type != GraphNodeType.MEMCPY && type != GraphNodeType.MEMSET) {
            throw new IllegalArgumentException(node + " is of type " + type + ", and CUDA enables and disables only "
                    + "kernel, memcpy and memset nodes");
        }
    }

    private static HostFunctions.Registration[] hostFunctionsOf(HeldResources held) {
        List<HostFunctions.Registration> found = new ArrayList<>();
        for (Lifetime lifetime : held.counts().keySet()) {
            HostFunctions.Registration registration = HostFunctions.of(lifetime);
            if (registration != null) {
                found.add(registration);
            }
        }
        return found.toArray(HostFunctions.Registration[]::new);
    }

    /** What the node uses now, or {@code null} if unknown (after {@link #update}, until it is updated itself). */
    private List<Lifetime> usesOf(long node) {
        List<Lifetime> updated = updatedNodeUses.get(node);
        if (updated != null || instantiatedNodes == null) {
            return updated;
        }
        KernelNodes.Entry instantiated = instantiatedNodes.get(node);
        return instantiated == null ? null : instantiated.uses();
    }

    private static void free(MemorySegment handle, HeldResources held, CudaGraph template) {
        try {
            Graphs.destroyExec(handle);
        } finally {
            held.dropAll();
            template.executableFreed();
        }
    }
}
