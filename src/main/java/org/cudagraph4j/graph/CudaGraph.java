package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEnum;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GraphAccess;
import org.cudagraph4j.KernelArguments;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.GraphMemory;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.HostFunctions;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.HeldResources;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * A CUDA graph template ({@code cudaGraph_t}): nodes and dependencies, built explicitly or by
 * {@linkplain StreamCapture#begin stream capture}. Instantiate it to launch it.
 *
 * <p>A graph keeps alive what its nodes use (kernels' libraries, buffers, events): closing those
 * while the graph, or an executable made from it, still needs them defers their release until the
 * last graph or executable that uses them is closed. See the package documentation for the model.
 *
 * <p>Thread safety: the runtime does not synchronize access to one graph; use a graph from one
 * thread at a time. Distinct graphs may be used concurrently.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">Graph management</a>
 */
public final class CudaGraph extends GraphResource {
    /** What this package does with the root package's objects beyond their public API. */
    private static final GraphAccess ROOT = GraphAccess.get();

    /** The ordinal of the device the nodes run on; calls that name no stream make it current. */
    private final int device;
    private final HeldResources held;
    private final KernelNodes kernelNodes;
    /** Conditional nodes by node address, and their bodies, which close with this graph. */
    private final Map<Long, ConditionalNode> conditionals = new ConcurrentHashMap<>();
    private final List<CudaGraph> bodies;
    /** Whether a conditional node's body: the node owns the native graph, and close() does nothing. */
    private final boolean body;
    /** CUDA allows one executable at a time of a graph with conditional or memory nodes. */
    private final AtomicBoolean singleExecAlive = new AtomicBoolean();
    /** The memory this graph's own nodes allocate, which it owns. */
    private final GraphAllocations allocations;
    /**
     * For a conditional node's body, the graph that holds the node (itself perhaps a body); set when
     * the node joins a graph, so {@code null} while its capture runs. Null for other graphs.
     */
    private volatile CudaGraph parent;

    /**
     * Takes ownership of {@code handle}, which is destroyed if this constructor fails.
     *
     * @param device the ordinal of the device the nodes run on
     * @param captured the runs of kernel launches a capture recorded into the graph; none for a graph built here
     * @param held one use of each resource per captured node that uses it, already retained, which
     *     this graph releases when closed
     * @param allocations the memory the graph's nodes allocate: a capture's, or none yet
     */
    CudaGraph(MemorySegment handle, int device, List<CaptureTracker.Run<KernelLaunch>> captured, HeldResources held,
            GraphAllocations allocations) {
        this(handle, device, null, captured, held, allocations, new CopyOnWriteArrayList<>());
        lifetime().watch(this);
    }

    /**
     * A conditional node's body, which the node owns; it is closed by the graph that holds the node.
     * It runs inside its graph's launches, so its nodes may use that graph's memory, {@code allocations}.
     */
    private CudaGraph(MemorySegment handle, int device, String description, GraphAllocations allocations) {
        this(handle, device, description, List.of(), new HeldResources(), allocations, new CopyOnWriteArrayList<>());
    }

    /** A graph, or with a {@code bodyDescription} a conditional node's body, whose lifetime frees what it holds. */
    private CudaGraph(MemorySegment handle, int device, String bodyDescription,
            List<CaptureTracker.Run<KernelLaunch>> captured, HeldResources held, GraphAllocations allocations,
            List<CudaGraph> bodies) {
        super(handle, bodyDescription != null
                ? new Lifetime(LiveCounters.Kind.GRAPH, 0, bodyDescription, () -> closeBodies(bodies, held))
                : new Lifetime(LiveCounters.Kind.GRAPH, 0, "CudaGraph", handle,
                        () -> free(handle, held, bodies, allocations)));
        this.device = device;
        this.held = held;
        this.allocations = allocations;
        this.bodies = bodies;
        this.body = bodyDescription != null;
        this.kernelNodes = KernelNodes.captured(captured, handle, device, lifetime());
    }

    /**
     * Creates an empty graph, to build explicitly ({@code cudaGraphCreate}), for the calling thread's
     * current device ({@link CudaDevice#makeCurrent}).
     *
     * @return the new graph, which the caller closes
     */
    public static CudaGraph create() {
        return new CudaGraph(Graphs.create(), Devices.current(), List.of(), new HeldResources(),
                new GraphAllocations());
    }

    /**
     * Copies this graph ({@code cudaGraphClone}): a new graph on the same device with the same nodes,
     * edges and node parameters, its child graphs copied too, as NVIDIA's samples clone a graph to
     * instantiate or change the copy while the original stays as it is. The two are independent
     * afterwards: a node added to one is not in the other, and either may be closed first.
     *
     * <p>The copy keeps alive what its nodes use, as this graph does (kernels' libraries, buffers,
     * events, host functions, what child graphs use), until it is closed and the last executable
     * made from it is. Its kernel nodes report the launches this graph's do
     * ({@link GraphNode#kernelParams()}), so that an executable of the copy updates them node by
     * node, and {@link GraphArchive} saves the copy, as they do this graph.
     *
     * @return the copy, which the caller closes
     * @throws IllegalStateException if this graph is closed; if it is a conditional node's body, which
     *     runs only inside the graph that holds the node; or if it holds a conditional, memory allocation
     *     or memory free node, at any depth of child graphs, which CUDA does not clone
     * @throws org.cudagraph4j.error.CudaException if the runtime fails to clone, e.g. out of memory
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphClone</a>
     */
    public CudaGraph copy() {
        MemorySegment graph = handle();
        if (body) {
            throw new IllegalStateException("cannot copy " + this + ": a conditional node's body runs only inside the "
                    + "graph that holds its node, and CUDA does not clone a graph with conditional nodes");
        }
        if (!conditionals.isEmpty()) {
            throw notCloned(GraphNodeType.CONDITIONAL);
        }
        if (allocations.any()) {
            throw notCloned(GraphNodeType.MEM_ALLOC);
        }
        GraphNodeType refused = firstNotCloned(graph); // another library's, captured
        if (refused != null) {
            throw notCloned(refused);
        }
        KernelNodes launches = kernelNodes();
        HeldResources copyHeld = new HeldResources();
        copyHeld.holdCounts(useCounts());
        MemorySegment clone;
        try {
            useDevice();
            clone = Graphs.clone(graph);
        } catch (RuntimeException e) {
            copyHeld.dropAll();
            throw e;
        }
        CudaGraph copy;
        try {
            copy = new CudaGraph(clone, device, List.of(), copyHeld, new GraphAllocations());
        } catch (RuntimeException e) {
            copyHeld.dropAll();
            Graphs.destroy(clone);
            throw e;
        }
        try {
            // The copy's nodes are new handles: carry each kernel node's launch over to its counterpart.
            launches.forEach((node, entry) -> copy.kernelNodes.add(
                    Graphs.findInClone(MemorySegment.ofAddress(node), clone).address(), entry.launch(),
                    entry.uses()));
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
        return copy;
    }

    /**
     * {@return the device this graph's nodes run on: the capturing stream's, or the device current
     * when it was {@linkplain #create() created}}
     */
    public CudaDevice device() {
        return Cuda.device(device);
    }

    /** Makes this graph's device current on the calling thread, for calls that name no stream. */
    void useDevice() {
        Devices.use(device);
    }

    /**
     * Adds a kernel launch, to run on this graph's {@link #device()}, as a stream capture of the same
     * launch would: the node launches the configuration's grid, block and shared memory, keeps its
     * {@linkplain LaunchConfig#withCluster cluster shape} and {@linkplain LaunchConfig#withCooperativeLaunch
     * cooperative launch} as node attributes, and with {@linkplain LaunchConfig#withProgrammaticDependentLaunch
     * programmatic dependent launch} depends on each kernel node among {@code dependencies} through a
     * programmatic edge (see {@link #addProgrammaticDependency}); other dependencies stay full edges.
     * Arguments are checked against the kernel's parameter info first, and a cluster or cooperative
     * shape against the device, as a launch checks them.
     *
     * @param params the kernel, its launch configuration and its arguments
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if the arguments do not fit the kernel's parameters, a buffer among them
     *     is on a device that this graph's device cannot reach (neither it nor a peer with access enabled), a
     *     dependency belongs to another graph, or a cluster or cooperative shape cannot run on the device
     * @throws UnsupportedOperationException if the configuration has a cluster shape or cooperative launch
     *     that the device does not support
     * @throws IllegalStateException if this graph, the kernel's library or a buffer among the arguments is closed
     */
    public GraphNode addKernel(KernelLaunch params, GraphNode... dependencies) {
        Objects.requireNonNull(params, "params");
        LaunchConfig config = params.config();
        List<MemorySegment> full = handles(dependencies);
        List<MemorySegment> programmatic = List.of();
        if (config.programmaticDependentLaunch()) {
            // As a captured launch: kernel nodes before it may let it start early, other nodes must end.
            full = new ArrayList<>(dependencies.length);
            programmatic = new ArrayList<>(dependencies.length);
            for (GraphNode dependency : dependencies) {
                (dependency.type() == GraphNodeType.KERNEL ? programmatic : full).add(dependency.handle());
            }
        }
        if (ROOT.hasNodeAttributes(config)) {
            ROOT.checkAttributes(params.kernel(), device(), config);
        }
        MemorySegment node;
        List<Lifetime> uses;
        try (KernelArguments arguments = temporaryArguments(params)) {
            uses = ROOT.uses(arguments);
            held.hold(uses);
            try {
                MemorySegment pointers = argumentPointers(arguments);
                kernelNodes.resolveBeforeGraphChanges();
                useDevice();
                node = Graphs.addKernelNode(handle(), full, programmatic, ROOT.nativeLaunch(config),
                        params.kernel().handle(), pointers);
            } catch (RuntimeException e) {
                held.drop(uses);
                throw e;
            }
        }
        KernelLaunch recorded = ROOT.nodeLaunch(params);
        kernelNodes.add(node.address(), recorded, uses);
        return new GraphNode(this, node, recorded);
    }

    /**
     * Makes kernel node {@code to} depend on kernel node {@code from} through a programmatic edge,
     * as a launch with {@link org.cudagraph4j.LaunchConfig#withProgrammaticDependentLaunch()
     * programmatic dependent launch} does in a capture: {@code to} may start once every block of
     * {@code from} has allowed it or exited, so its kernel must wait on the device
     * ({@code griddepcontrol.wait}) before it touches what {@code from} writes or reads. Every kernel
     * shipped in {@code org.cudagraph4j.kernels} does. Add {@code to} without {@code from} among its
     * dependencies, then call this.
     *
     * @param from the kernel node that runs first
     * @param to the kernel node that waits for it on the device
     * @return the new edge, with {@link GraphEdge#programmatic()} true
     * @throws IllegalArgumentException if a node belongs to another graph, is not a kernel node, both are the same
     *     node, or {@code to} already depends on {@code from}
     * @throws IllegalStateException if this graph is closed
     */
    public GraphEdge addProgrammaticDependency(GraphNode from, GraphNode to) {
        Objects.requireNonNull(from, "from");
        Objects.requireNonNull(to, "to");
        handles(from, to);
        if (from.equals(to)) {
            throw new IllegalArgumentException("a programmatic dependency needs two nodes, got " + from + " twice");
        }
        for (GraphNode node : List.of(from, to)) {
            if (node.type() != GraphNodeType.KERNEL) {
                throw new IllegalArgumentException("a programmatic dependency joins kernel nodes, but " + node + " is a "
                        + node.type() + " node");
            }
        }
        if (to.dependencies().contains(from)) {
            throw new IllegalArgumentException(to + " already depends on " + from);
        }
        kernelNodes.resolveBeforeGraphChanges();
        Graphs.addProgrammaticDependency(handle(), from.handle(), to.handle());
        return new GraphEdge(from, to, true);
    }

    /**
     * Adds a copy of all of {@code source} into {@code destination}.
     *
     * @param destination the buffer written; as many bytes as {@code source}
     * @param source the buffer read
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if the two buffers' byte sizes differ, or a dependency belongs to another
     *     graph
     * @throws IllegalStateException if this graph or either buffer is closed
     */
    public GraphNode addMemcpy(DeviceBuffer destination, DeviceBuffer source, GraphNode... dependencies) {
        if (destination.byteSize() != source.byteSize()) {
            throw new IllegalArgumentException("memcpy node: destination has " + destination.byteSize()
                    + " bytes but source has " + source.byteSize());
        }
        requireUsableHere(destination);
        requireUsableHere(source);
        return addNode(open(ROOT.lifetime(destination), ROOT.lifetime(source)),
                () -> Graphs.addMemcpyNode(handle(), handles(dependencies), destination.address(), source.address(),
                        source.byteSize()));
    }

    /**
     * Adds a copy of all of {@code source}, page-locked host memory, into {@code destination}
     * ({@code cudaGraphAddMemcpyNode1D}): how a graph reads its input from the host at every launch,
     * as NVIDIA's {@code simpleCudaGraphs} does. The graph, and each executable made from it, keep
     * {@code source} allocated as they keep buffers: closing it early defers the free until the last
     * of them is closed. A {@linkplain PinnedBuffer#borrow borrowed} buffer's memory is the lender's
     * to keep, as its documentation says.
     *
     * @param destination the device buffer written, all of it; graph memory of this graph is allowed
     * @param source the host memory read; as many bytes as {@code destination}
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if the byte sizes differ, {@code destination} is another graph's
     *     memory, or a dependency belongs to another graph
     * @throws IllegalStateException if this graph or either buffer is closed
     */
    public GraphNode addMemcpy(DeviceBuffer destination, PinnedBuffer source, GraphNode... dependencies) {
        requirePinnedSize(destination, source);
        requireUsableHere(destination);
        return addNode(open(ROOT.lifetime(destination), ROOT.lifetime(source)),
                () -> Graphs.addMemcpyNode(handle(), handles(dependencies), destination.address(),
                        source.segment().address(), destination.byteSize()));
    }

    /**
     * Adds a copy of all of {@code source} into {@code destination}, page-locked host memory
     * ({@code cudaGraphAddMemcpyNode1D}): how a graph hands its result to the host at every launch,
     * out of a device buffer or out of its own graph memory. Read {@code destination} after the
     * launch has completed (synchronize its stream, or an event recorded after it). The graph and its
     * executables keep {@code destination} allocated, as {@link #addMemcpy(DeviceBuffer, PinnedBuffer,
     * GraphNode...)} keeps its source.
     *
     * @param destination the host memory written; as many bytes as {@code source}
     * @param source the device buffer read, all of it; graph memory of this graph is allowed
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if the byte sizes differ, {@code source} is another graph's
     *     memory, or a dependency belongs to another graph
     * @throws IllegalStateException if this graph or either buffer is closed
     */
    public GraphNode addMemcpy(PinnedBuffer destination, DeviceBuffer source, GraphNode... dependencies) {
        requirePinnedSize(source, destination);
        requireUsableHere(source);
        return addNode(open(ROOT.lifetime(destination), ROOT.lifetime(source)),
                () -> Graphs.addMemcpyNode(handle(), handles(dependencies), destination.segment().address(),
                        source.address(), source.byteSize()));
    }

    /**
     * Adds a copy of all of {@code source}, host memory that the caller owns, into
     * {@code destination} ({@code cudaGraphAddMemcpyNode1D}), as NVIDIA's {@code jacobiCudaGraphs}
     * copies to and from an ordinary host variable. Ordinary (pageable) memory is copied through
     * CUDA's staging, which makes the node slower than one from a {@link PinnedBuffer}, and CUDA
     * refuses it in a conditional node's body.
     *
     * <p>The graph borrows {@code source}: it holds the segment, so the memory of an automatic arena
     * ({@link java.lang.foreign.Arena#ofAuto()}) or of the global arena stays valid as long as the
     * graph or an executable made from it does, but it cannot keep an arena open that its owner
     * closes. The memory of a confined or shared arena must stay open until this graph and every
     * executable made from it are closed and their launches have completed: a launch after the
     * arena is closed reads freed memory, as it would in CUDA. Where the library owns the memory, use
     * the {@link PinnedBuffer} overload, which keeps it allocated.
     *
     * @param destination the device buffer written, all of it; graph memory of this graph is allowed
     * @param source native host memory of exactly {@code destination}'s byte size
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if {@code source} is a heap segment, of another size, device
     *     memory (borrow that as a {@link DeviceBuffer}), or pageable memory and this graph is a
     *     conditional node's body; if {@code destination} is another graph's memory, or a dependency
     *     belongs to another graph
     * @throws IllegalStateException if this graph, {@code destination} or {@code source}'s arena is closed
     */
    public GraphNode addMemcpy(DeviceBuffer destination, MemorySegment source, GraphNode... dependencies) {
        HostCopies.check(source, destination.byteSize(), false);
        requireUsableHere(destination);
        requireHostMemoryAllowedHere(source);
        return addBorrowingNode(destination, source, () -> Graphs.addMemcpyNode(handle(), handles(dependencies),
                destination.address(), source.address(), destination.byteSize()));
    }

    /**
     * Adds a copy of all of {@code source} into {@code destination}, host memory that the caller owns
     * ({@code cudaGraphAddMemcpyNode1D}): {@code jacobiCudaGraphs}' copy of its sum back to a host
     * variable at every launch. Read {@code destination} after the launch has completed. The graph
     * borrows {@code destination} as {@link #addMemcpy(DeviceBuffer, MemorySegment, GraphNode...)}
     * borrows its source: an arena that its owner closes must stay open until this graph and every
     * executable made from it are closed and their launches have completed.
     *
     * @param destination native, writable host memory of exactly {@code source}'s byte size
     * @param source the device buffer read, all of it; graph memory of this graph is allowed
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if {@code destination} is a heap or read-only segment, of
     *     another size, device memory, or pageable memory and this graph is a conditional node's body;
     *     if {@code source} is another graph's memory, or a dependency belongs to another graph
     * @throws IllegalStateException if this graph, {@code source} or {@code destination}'s arena is closed
     */
    public GraphNode addMemcpy(MemorySegment destination, DeviceBuffer source, GraphNode... dependencies) {
        HostCopies.check(destination, source.byteSize(), true);
        requireUsableHere(source);
        requireHostMemoryAllowedHere(destination);
        return addBorrowingNode(source, destination, () -> Graphs.addMemcpyNode(handle(), handles(dependencies),
                destination.address(), source.address(), source.byteSize()));
    }

    /**
     * Adds a memset of every byte of {@code destination} to {@code byteValue}'s low 8 bits.
     *
     * @param destination the buffer written, all of it
     * @param byteValue the value; only its low 8 bits are used
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if a dependency belongs to another graph
     * @throws IllegalStateException if this graph or {@code destination} is closed
     */
    public GraphNode addMemset(DeviceBuffer destination, int byteValue, GraphNode... dependencies) {
        requireUsableHere(destination);
        return addNode(open(ROOT.lifetime(destination)), () -> Graphs.addMemsetNode(handle(),
                handles(dependencies), destination.address(), byteValue, destination.byteSize()));
    }

    /**
     * Adds a node that does nothing: a join point for dependencies.
     *
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if a dependency belongs to another graph
     * @throws IllegalStateException if this graph is closed
     */
    public GraphNode addEmpty(GraphNode... dependencies) {
        return addNode(List.of(), () -> Graphs.addEmptyNode(handle(), handles(dependencies)));
    }

    /**
     * Adds a node that records {@code event} when its dependencies complete.
     *
     * @param event the event to record; kept alive while a graph or executable uses it
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if a dependency belongs to another graph
     * @throws IllegalStateException if this graph or {@code event} is closed, or this graph is a conditional
     *     node's body, where CUDA allows no event nodes
     */
    public GraphNode addEventRecord(CudaEvent event, GraphNode... dependencies) {
        ensureAllowedHere(GraphNodeType.EVENT_RECORD);
        return addNode(open(ROOT.lifetime(event)),
                () -> Graphs.addEventRecordNode(handle(), handles(dependencies), event.handle()));
    }

    /**
     * Adds a node that waits for {@code event}'s recorded work.
     *
     * @param event the event to wait for; kept alive while a graph or executable uses it
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if a dependency belongs to another graph
     * @throws IllegalStateException if this graph or {@code event} is closed, or this graph is a conditional
     *     node's body, where CUDA allows no event nodes
     */
    public GraphNode addEventWait(CudaEvent event, GraphNode... dependencies) {
        ensureAllowedHere(GraphNodeType.WAIT_EVENT);
        return addNode(open(ROOT.lifetime(event)),
                () -> Graphs.addEventWaitNode(handle(), handles(dependencies), event.handle()));
    }

    /**
     * Adds a host node: {@code callback} runs on a CUDA host thread when the node's dependencies
     * have completed, at every launch of an executable made from this graph
     * ({@code cudaGraphAddHostNode}). The graph, and each executable made from it, keep the callback
     * until the last of them is closed. As for {@link CudaStream#launchHostFunction}, the callback
     * must not call CUDA (the library refuses it), and an exception it throws is raised by the next
     * synchronization of the stream the executable was last launched on, as a
     * {@link org.cudagraph4j.HostFunctionException}.
     *
     * @param callback what to run
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if a dependency belongs to another graph
     * @throws IllegalStateException if this graph is closed, or is a conditional node's body, where CUDA
     *     allows no host nodes
     */
    public GraphNode addHostFunction(Runnable callback, GraphNode... dependencies) {
        Objects.requireNonNull(callback, "callback");
        ensureAllowedHere(GraphNodeType.HOST);
        HostFunctions.Registration registration = HostFunctions.forGraph(callback,
                "host function " + callback + " in " + this);
        try {
            return addNode(List.of(registration.lifetime()),
                    () -> HostFunctions.addHostNode(handle(), handles(dependencies), registration));
        } finally {
            registration.lifetime().close(); // the graph holds it now, or nothing does
        }
    }

    /**
     * Adds a memory allocation node ({@code cudaGraphAddNode} with {@code cudaMemAllocNodeParams}):
     * at each launch it allocates {@code length} elements of this graph's device's memory, which the
     * nodes that depend on it may use until a {@linkplain #addMemFree free node} frees it. The address
     * is fixed when the node is added, and the same at every launch; the memory's contents do not
     * survive from one launch to the next.
     *
     * <p>The graph owns the memory: the returned buffer is a view that only this graph's nodes may
     * use ({@link #addKernel}, {@link #addMemcpy}, {@link #addMemset}), and the host may not copy or
     * set it. This library instantiates a graph only if it frees every allocation it makes, so that no
     * memory outlives a launch.
     *
     * @param type the element type
     * @param length the number of elements; positive
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the node, and a view of the memory it allocates
     * @throws IllegalArgumentException if {@code length} is not positive or too large, or a dependency
     *     belongs to another graph
     * @throws IllegalStateException if this graph is closed, or is a conditional node's body, where CUDA
     *     allows no memory nodes
     * @throws org.cudagraph4j.error.CudaException naming {@code cudaErrorMemoryAllocation} if the device cannot
     *     reserve the address range
     */
    public GraphAllocation addMemAlloc(ElementType type, long length, GraphNode... dependencies) {
        Objects.requireNonNull(type, "type");
        if (length <= 0) {
            throw new IllegalArgumentException("length must be positive, got " + length);
        }
        if (length > Long.MAX_VALUE / type.byteSize()) {
            throw new IllegalArgumentException(length + " x " + type + " is more than " + Long.MAX_VALUE + " bytes");
        }
        ensureAllowedHere(GraphNodeType.MEM_ALLOC);
        List<MemorySegment> after = handles(dependencies);
        useDevice();
        GraphMemory.Allocation allocation = GraphMemory.addAllocation(handle(), after, device,
                length * type.byteSize());
        DeviceBuffer buffer = ROOT.graphMemoryBuffer(device, allocation.address(), type, length, allocations,
                toString());
        held.hold(List.of(ROOT.lifetime(buffer)));
        return new GraphAllocation(new GraphNode(this, allocation.node(), null), buffer);
    }

    /**
     * Adds a memory free node ({@code cudaGraphAddNode} with {@code cudaMemFreeNodeParams}): it frees
     * an allocation of this graph's once its dependencies, which should include every node that uses
     * the memory, have completed.
     *
     * @param allocation the buffer an allocation node of this graph returned, or that a capture
     *     into this graph allocated and did not free
     * @param dependencies nodes of this graph that must complete first
     * @return the new node
     * @throws IllegalArgumentException if {@code allocation} is not graph memory of this graph, is a
     *     slice, is already freed in the graph, or a dependency belongs to another graph
     * @throws IllegalStateException if this graph is closed, or is a conditional node's body
     */
    public GraphNode addMemFree(DeviceBuffer allocation, GraphNode... dependencies) {
        Objects.requireNonNull(allocation, "allocation");
        ensureAllowedHere(GraphNodeType.MEM_FREE);
        GraphAllocations owner = ROOT.graphMemoryOf(allocation);
        if (owner != allocations) {
            throw new IllegalArgumentException(allocation + " is not memory this graph allocates: a free node frees "
                    + "only the graph's own allocations" + (owner == null ? "" : "; CUDA lets a free node free "
                    + "another graph's allocation after that graph's launch, but this library has every graph free "
                    + "what it allocates, so that memory never outlives the launch that made it"));
        }
        if (!allocation.isAllocation()) {
            throw new IllegalArgumentException(allocation + " is a slice: free the whole allocation");
        }
        List<MemorySegment> after = handles(dependencies);
        long address = allocation.handle().address();
        Lifetime view = ROOT.lifetime(allocation);
        allocations.freed(view, allocation.toString());
        useDevice();
        MemorySegment node;
        try {
            node = GraphMemory.addFree(handle(), after, address);
        } catch (RuntimeException e) {
            allocations.freeFailed(view);
            throw e;
        }
        return new GraphNode(this, node, null);
    }

    /**
     * Adds a copy of {@code child} as one node; later changes to {@code child} do not affect it.
     *
     * @param child the graph to copy; what its nodes use is kept alive for the copy
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the new node
     * @throws IllegalArgumentException if a dependency belongs to another graph; if {@code child} holds
     *     conditional nodes, which CUDA does not allow in a child graph; or if this graph is a conditional
     *     node's body and {@code child} holds a node kind a body may not (at any depth)
     * @throws IllegalStateException if this graph or {@code child} is closed
     */
    public GraphNode addChildGraph(CudaGraph child, GraphNode... dependencies) {
        Objects.requireNonNull(child, "child");
        if (child.allocations.any()) {
            throw new IllegalArgumentException(child + " holds memory nodes, and CUDA does not allow a graph with "
                    + "memory allocation or free nodes as a child graph");
        }
        if (!child.conditionals.isEmpty()) {
            throw new IllegalArgumentException(child + " holds a conditional node, and CUDA does not allow a graph "
                    + "with conditional nodes as a child graph");
        }
        if (body) {
            checkBodyChild(child.handle(), child.toString());
        }
        Map<Lifetime, Integer> uses = child.useCounts();
        held.holdCounts(uses);
        MemorySegment node;
        try {
            kernelNodes.resolveBeforeGraphChanges();
            useDevice();
            node = Graphs.addChildGraphNode(handle(), handles(dependencies), child.handle());
        } catch (RuntimeException e) {
            held.dropCounts(uses);
            throw e;
        }
        return new GraphNode(this, node, null);
    }

    /**
     * A handle for this graph's conditional nodes with CUDA's defaults
     * ({@code cudaGraphConditionalHandleCreate} with no default value and no flags): a launch does
     * not reset the value, so a kernel upstream of the node must set it before the node reads it, as
     * {@link ConditionalKernels#set} does. For a value that every launch starts at, use
     * {@link #conditionalHandle(int, boolean) conditionalHandle(defaultValue, true)}.
     *
     * @return the new handle, with {@link ConditionalHandle#resetsEachLaunch()} false; it lives as long
     *     as this graph
     * @throws IllegalStateException if this graph is closed
     */
    public ConditionalHandle conditionalHandle() {
        return conditionalHandle(0, false);
    }

    /**
     * A handle for this graph's conditional nodes ({@code cudaGraphConditionalHandleCreate}).
     *
     * @param defaultValue the value at the start of each launch, if {@code resetEachLaunch}
     * @param resetEachLaunch whether each launch starts at {@code defaultValue}
     *     ({@code cudaGraphCondAssignDefault}); if not, a launch does not reset the value, so a
     *     kernel must set it before the node reads it
     * @return the new handle; it lives as long as this graph
     * @throws IllegalStateException if this graph is closed
     */
    public ConditionalHandle conditionalHandle(int defaultValue, boolean resetEachLaunch) {
        MemorySegment graph = handle();
        useDevice(); // the handle is made in the current device's context
        return ConditionalHandle.create(graph, defaultValue, resetEachLaunch);
    }

    /**
     * Adds a node that runs its body once if {@code condition}'s value is non-zero.
     *
     * @param condition a handle of this graph; set it with a kernel among {@code dependencies}
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the node and its empty body, to fill
     * @throws IllegalArgumentException if {@code condition} or a dependency belongs to another graph, or
     *     {@code condition} already drives a node (CUDA allows one node per handle)
     * @throws IllegalStateException if this graph is closed
     */
    public ConditionalNode ifThen(ConditionalHandle condition, GraphNode... dependencies) {
        return addConditional(condition, ConditionalType.IF, 1, dependencies);
    }

    /**
     * Adds a node that runs its THEN body if {@code condition}'s value is non-zero and its ELSE body
     * otherwise (CUDA 12.8 and later).
     *
     * @param condition a handle of this graph
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the node and its two empty bodies, {@link ConditionalNode#body()} and
     *     {@link ConditionalNode#elseBody()}
     * @throws IllegalArgumentException if {@code condition} or a dependency belongs to another graph, or
     *     {@code condition} already drives a node (CUDA allows one node per handle)
     * @throws IllegalStateException if this graph is closed
     */
    public ConditionalNode ifThenElse(ConditionalHandle condition, GraphNode... dependencies) {
        return addConditional(condition, ConditionalType.IF, 2, dependencies);
    }

    /**
     * Adds a node that runs its body while {@code condition}'s value is non-zero, checking before
     * each run: the body sets the value for the next check (see {@link ConditionalKernels}).
     *
     * @param condition a handle of this graph
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the node and its empty body, to fill
     * @throws IllegalArgumentException if {@code condition} or a dependency belongs to another graph, or
     *     {@code condition} already drives a node (CUDA allows one node per handle)
     * @throws IllegalStateException if this graph is closed
     */
    public ConditionalNode whileLoop(ConditionalHandle condition, GraphNode... dependencies) {
        return addConditional(condition, ConditionalType.WHILE, 1, dependencies);
    }

    /**
     * Adds a node that runs body {@code n} when {@code condition}'s value is {@code n}, and none
     * when the value is {@code cases} or more (CUDA 12.8 and later).
     *
     * @param condition a handle of this graph
     * @param cases the number of bodies, at least 1
     * @param dependencies nodes of this graph that must complete first; none for a root node
     * @return the node and its empty bodies, {@link ConditionalNode#caseBody(int)}
     * @throws IllegalArgumentException if {@code cases} is below 1, {@code condition} or a dependency
     *     belongs to another graph, or {@code condition} already drives a node
     * @throws IllegalStateException if this graph is closed
     */
    public ConditionalNode switchOf(ConditionalHandle condition, int cases, GraphNode... dependencies) {
        if (cases < 1) {
            throw new IllegalArgumentException("a SWITCH node needs at least 1 case, got " + cases);
        }
        return addConditional(condition, ConditionalType.SWITCH, cases, dependencies);
    }

    /**
     * Whether this graph is a conditional node's body. A body may hold only kernel, empty, child
     * graph, memset, memcpy and conditional nodes (CUDA's rule, checked as nodes are added); it is
     * owned by the graph that holds its node, closes with it, and cannot be instantiated alone.
     *
     * @return whether this graph is a body
     */
    public boolean isConditionalBody() {
        return body;
    }

    /**
     * Every node, in the runtime's order (creation order); a node's position is its {@link GraphNode#id()}.
     *
     * @return the nodes, unmodifiable; empty for an empty graph
     */
    public List<GraphNode> nodes() {
        List<GraphNode> nodes = new ArrayList<>();
        for (MemorySegment node : Graphs.nodes(handle())) {
            nodes.add(node(node));
        }
        return List.copyOf(nodes);
    }

    /**
     * Every dependency edge.
     *
     * @return the edges, unmodifiable
     */
    public List<GraphEdge> edges() {
        List<GraphEdge> edges = new ArrayList<>();
        for (Graphs.Edge edge : Graphs.edges(handle())) {
            edges.add(new GraphEdge(node(edge.from()), node(edge.to()), edge.programmatic()));
        }
        return List.copyOf(edges);
    }

    /**
     * The nodes in dependency order; among ready nodes the lowest id comes first.
     *
     * @return every node once, unmodifiable
     */
    public List<GraphNode> topologicalOrder() {
        List<GraphNode> nodes = nodes();
        List<GraphNode> order = new ArrayList<>(nodes.size());
        for (int id : GraphTopology.order(nodes.size(), GraphTopology.edgesById(nodes, edges()),
                GraphTopology.Ties.LOWEST_ID)) {
            order.add(nodes.get(id));
        }
        return List.copyOf(order);
    }

    /**
     * Instantiates an executable graph as {@code options} say: its flags, and the stream to upload it
     * on, if any.
     *
     * @param options the flags and the upload stream; {@link InstantiateOptions#defaults()} for none
     * @return the new executable, which the caller closes; it keeps alive what its nodes use
     * @throws GraphInstantiateException with the reason and the node at fault
     * @throws IllegalStateException if this graph or the upload stream is closed
     * @throws NullPointerException if {@code options} is null
     */
    public GraphExec instantiate(InstantiateOptions options) {
        CudaStream upload = options.uploadStream();
        return instantiate(upload == null ? MemorySegment.NULL : upload.handle(), options.runtimeFlags());
    }

    /**
     * Instantiates an executable graph.
     *
     * @param flags options; {@link InstantiateFlag#UPLOAD} is refused here
     * @return the new executable, which the caller closes; it keeps alive what its nodes use
     * @throws GraphInstantiateException with the reason and the node at fault
     * @throws IllegalArgumentException for {@link InstantiateFlag#UPLOAD}, which needs a stream:
     *     use {@link #instantiate(CudaStream, InstantiateFlag...)}
     * @throws IllegalStateException if this graph is closed
     */
    public GraphExec instantiate(InstantiateFlag... flags) {
        if (Arrays.asList(flags).contains(InstantiateFlag.UPLOAD)) {
            throw new IllegalArgumentException("InstantiateFlag.UPLOAD needs a stream: use instantiate(stream, flags)");
        }
        return instantiate(MemorySegment.NULL, flags);
    }

    /**
     * Instantiates, uploading on {@code uploadStream} when {@link InstantiateFlag#UPLOAD} is given.
     *
     * @param uploadStream the stream the upload is ordered on
     * @param flags options
     * @return the new executable, which the caller closes; it keeps alive what its nodes use
     * @throws GraphInstantiateException with the reason and the node at fault
     * @throws IllegalStateException if this graph or {@code uploadStream} is closed
     */
    public GraphExec instantiate(CudaStream uploadStream, InstantiateFlag... flags) {
        return instantiate(uploadStream.handle(), flags);
    }

    /**
     * Captures this graph's nodes, edges and node details for drawing.
     *
     * @return a snapshot detached from the runtime; later changes to this graph do not affect it
     */
    public GraphSnapshot snapshot() {
        return SnapshotReader.read(this);
    }

    /**
     * Draws the graph as boxes joined by arrows, in the layout of the seed diagram.
     *
     * @return the drawing, as {@link GraphDiagram#draw} makes it from {@link #snapshot()}
     */
    public String describe() {
        return GraphDiagram.draw(snapshot());
    }

    /**
     * The graph in Graphviz DOT, written by this library from {@link #snapshot()}.
     *
     * @return the DOT source, as {@link GraphDot#write} makes it
     */
    public String toDot() {
        return GraphDot.write(snapshot());
    }

    /**
     * Writes the runtime's own DOT rendering ({@code cudaGraphDebugDotPrint}) to {@code path}.
     *
     * @param path the file to write; a relative path resolves against the working directory
     * @param verbose whether to include every detail ({@code cudaGraphDebugDotFlagsVerbose})
     * @throws org.cudagraph4j.error.CudaException if the runtime fails, e.g. cannot write the file
     * @throws IllegalStateException if this graph is closed
     */
    public void debugDotPrint(Path path, boolean verbose) {
        Graphs.debugDotPrint(handle(), path.toAbsolutePath().toString(), verbose);
    }

    /**
     * Destroys the graph and lets go of what its nodes used. Executables made from it stay valid.
     * Does nothing for a {@linkplain #isConditionalBody() conditional body}, which closes with the
     * graph that holds its node.
     */
    @Override
    public void close() {
        if (!body) {
            lifetime().close();
        }
    }

    void ensureOpen() {
        lifetime().ensureOpen();
    }

    int indexOf(GraphNode node) {
        int index = nodes().indexOf(node);
        if (index < 0) {
            throw new IllegalStateException(node + " is not in " + this);
        }
        return index;
    }

    /**
     * What the nodes use, its conditional bodies' included, each resource with its number of uses: what
     * an executable made from this graph, or a graph that nests it, holds. This graph holds exactly
     * that already, counted, so it is copied in the number of distinct resources, not of nodes.
     */
    Map<Lifetime, Integer> useCounts() {
        Map<Lifetime, Integer> counts = held.counts();
        for (CudaGraph nested : bodies) {
            nested.useCounts().forEach((lifetime, n) -> counts.merge(lifetime, n, Integer::sum));
        }
        return counts;
    }

    /** What each kernel node launches and uses, as it is now. */
    KernelNodes kernelNodes() {
        return kernelNodes.snapshot();
    }

    /**
     * Wraps the bodies the runtime made for a conditional node of the graph named {@code owner}.
     *
     * @param parent the graph that holds the node, or {@code null} while a capture makes that graph
     */
    static List<CudaGraph> bodies(List<MemorySegment> handles, int device, ConditionalType type, String owner,
            GraphAllocations memory, CudaGraph parent) {
        List<CudaGraph> wrapped = new ArrayList<>(handles.size());
        for (int i = 0; i < handles.size(); i++) {
            CudaGraph body = new CudaGraph(handles.get(i), device, String.format("body %d (0x%016X) of a %s node in "
                    + "%s", i, handles.get(i).address(), type, owner), memory);
            body.parent = parent;
            wrapped.add(body);
        }
        return wrapped;
    }

    /** Takes in conditional nodes added during the capture this graph came from, or that recorded into it. */
    void adoptConditionals(List<ConditionalNode> captured) {
        for (ConditionalNode node : captured) {
            register(node);
            node.adoptedBy(this);
            node.bodies().forEach(nested -> nested.parent = this);
        }
    }

    /**
     * The lifetime of the graph whose native handle destroys this one: its own, or for a body the
     * lifetime of the graph at the top of its chain of conditional nodes.
     *
     * @throws IllegalStateException if this is a body of a node whose capture is still running
     */
    Lifetime rootLifetime() {
        CudaGraph graph = this;
        while (graph.body) {
            CudaGraph up = graph.parent;
            if (up == null) {
                throw new IllegalStateException(this + " belongs to a node of a capture still running: end that "
                        + "capture first");
            }
            graph = up;
        }
        return graph.lifetime();
    }

    /** The memory this graph's nodes allocate (for a body, its graph's), which a capture into it shares. */
    GraphAllocations allocations() {
        return allocations;
    }

    /**
     * Takes in what a capture recorded into this graph: the uses its nodes hold, the conditional
     * nodes it added, and, when {@code runs} are given, its kernel launches, matched to their nodes
     * now, before the graph changes again.
     */
    void adoptCapture(HeldResources captured, List<CaptureTracker.Run<KernelLaunch>> runs,
            List<ConditionalNode> conditionalNodes) {
        try {
            held.holdCounts(captured.counts());
        } finally {
            captured.dropAll();
        }
        adoptConditionals(conditionalNodes);
        if (!runs.isEmpty() && isOpen()) { // closed by its owner during the capture: no one can ask about a node
            KernelNodes.captured(runs, handle(), device, lifetime()).forEach(
                    (node, entry) -> kernelNodes.add(node, entry.launch(), entry.uses()));
        }
    }

    /** Before a capture records into this graph: the runs already captured are matched to nodes first. */
    void beforeCaptureInto() {
        kernelNodes.resolveBeforeGraphChanges();
    }

    /** Closes a body that will never join a graph (its capture was discarded). */
    void closeBody() {
        if (body) {
            lifetime().close();
        }
    }

    Optional<ConditionalNode> conditionalOf(MemorySegment node) {
        return Optional.ofNullable(conditionals.get(node.address()));
    }

    GraphNode node(MemorySegment handle) {
        KernelNodes.Entry kernel = kernelNodes.get(handle.address());
        return new GraphNode(this, handle, kernel == null ? null : kernel.launch());
    }

    /** The node a failure names, or {@code null} where the runtime named none. */
    GraphNode nodeOrNull(MemorySegment handle) {
        return handle.equals(MemorySegment.NULL) ? null : node(handle);
    }

    /** The {@code void*[]} of {@code arguments}, for this graph's device, which must reach every buffer among them. */
    MemorySegment argumentPointers(KernelArguments arguments) {
        return ROOT.argumentPointers(arguments, device, allocations);
    }

    /**
     * Refuses graph memory of another graph: outside its own graph it is not mapped.
     *
     * @throws IllegalArgumentException if {@code buffer} is another graph's memory
     */
    private void requireUsableHere(DeviceBuffer buffer) {
        GraphAllocations owner = ROOT.graphMemoryOf(buffer);
        if (owner != null && owner != allocations) {
            throw new IllegalArgumentException(buffer + " exists only inside its own graph, not in " + this);
        }
    }

    private static void requirePinnedSize(DeviceBuffer device, PinnedBuffer host) {
        Objects.requireNonNull(device, "device buffer");
        Objects.requireNonNull(host, "pinned buffer");
        if (device.byteSize() != host.byteSize()) {
            throw new IllegalArgumentException("memcpy node: the device buffer has " + device.byteSize()
                    + " bytes but the pinned buffer has " + host.byteSize() + "; copy through a slice of the device "
                    + "buffer for part of it");
        }
    }

    /**
     * Refuses device memory passed as a host segment, and pageable memory in a conditional body,
     * where CUDA allows copies only between device memory and page-locked host memory.
     */
    private void requireHostMemoryAllowedHere(MemorySegment host) {
        useDevice();
        Memory.Kind kind = Memory.kindOf(host.address());
        if (kind.type() == Memory.DEVICE || kind.type() == Memory.MANAGED) {
            throw new IllegalArgumentException(String.format("memcpy node: 0x%X is device memory, not host memory: "
                    + "wrap it with DeviceBuffer.borrow and copy between device buffers", host.address()));
        }
        if (body && kind.type() != Memory.HOST) {
            throw new IllegalArgumentException(String.format("memcpy node: 0x%X is pageable host memory, and %s is a "
                    + "conditional node's body, where CUDA copies only between device memory and page-locked host "
                    + "memory: copy through a PinnedBuffer", host.address(), this));
        }
    }

    /** Adds a memcpy node between {@code device} and borrowed {@code host} memory, holding both for it. */
    private GraphNode addBorrowingNode(DeviceBuffer device, MemorySegment host, Supplier<MemorySegment> add) {
        Lifetime borrowed = HostCopies.borrow(host);
        try {
            return addNode(List.of(open(ROOT.lifetime(device)).get(0), borrowed), add);
        } finally {
            borrowed.close(); // the graph holds it now, or nothing does
        }
    }

    /** {@code params}' arguments, checked, for one use on this thread. */
    static KernelArguments temporaryArguments(KernelLaunch params) {
        return ROOT.temporaryArguments(params);
    }

    /** {@code lifetimes}, which must be open: a closed buffer or event cannot go into a new node. */
    private static List<Lifetime> open(Lifetime... lifetimes) {
        for (Lifetime lifetime : lifetimes) {
            lifetime.ensureOpen();
        }
        return List.of(lifetimes);
    }

    private GraphExec instantiate(MemorySegment uploadStream, InstantiateFlag... flags) {
        if (body) {
            throw new IllegalStateException(this + " runs as part of its conditional node: instantiate the graph that "
                    + "holds the node");
        }
        ensureOpen();
        List<String> unfreed = allocations.unfreed();
        if (!unfreed.isEmpty()) {
            throw new IllegalStateException(this + " allocates memory it never frees: " + String.join(", ", unfreed)
                    + ". This library lets a graph own its memory only whole, so that none outlives a launch: add a "
                    + "free node (addMemFree), or close the buffer before its capture ends. CUDA would also let a "
                    + "later cudaFreeAsync or another graph's free node free it, but then each launch leaves memory "
                    + "that no object owns, which leaks if it is never freed and blocks the next launch until it is; "
                    + "copy the result into a buffer of your own inside the graph instead");
        }
        boolean single = !conditionals.isEmpty() || allocations.any();
        if (single && !singleExecAlive.compareAndSet(false, true)) {
            throw new IllegalStateException(this + " holds " + (conditionals.isEmpty() ? "memory" : "conditional")
                    + " nodes, and CUDA allows one executable of such a graph at a time: close the other one first");
        }
        try {
            return instantiateChecked(uploadStream, flags);
        } catch (RuntimeException | Error e) {
            if (single) {
                singleExecAlive.set(false);
            }
            throw e;
        }
    }

    /** An executable made from this graph was freed. */
    void executableFreed() {
        singleExecAlive.set(false);
    }

    private GraphExec instantiateChecked(MemorySegment uploadStream, InstantiateFlag... flags) {
        long bits = 0;
        for (InstantiateFlag flag : flags) {
            bits |= flag.value();
        }
        KernelNodes nodes = kernelNodes();
        HeldResources execHolds = new HeldResources();
        execHolds.holdCounts(useCounts());
        MemorySegment exec;
        try {
            useDevice();
            exec = Graphs.instantiate(handle(), bits, uploadStream, failure -> new GraphInstantiateException(
                    failure.error(), InstantiateResult.fromValue(failure.result()), nodeOrNull(failure.node())));
        } catch (RuntimeException e) {
            execHolds.dropAll();
            throw e;
        }
        return new GraphExec(exec, execHolds, nodes, this);
    }

    /** Adds a node that is not a kernel node, holding {@code uses} for it. */
    private GraphNode addNode(List<Lifetime> uses, Supplier<MemorySegment> add) {
        held.hold(uses);
        MemorySegment node;
        try {
            kernelNodes.resolveBeforeGraphChanges();
            useDevice();
            node = add.get();
        } catch (RuntimeException e) {
            held.drop(uses);
            throw e;
        }
        return new GraphNode(this, node, null);
    }

    List<MemorySegment> handles(GraphNode... dependencies) {
        List<MemorySegment> handles = new ArrayList<>(dependencies.length);
        for (GraphNode dependency : dependencies) {
            if (dependency.graph() != this) {
                throw new IllegalArgumentException(dependency + " belongs to another graph");
            }
            handles.add(dependency.handle());
        }
        return handles;
    }

    private static void free(MemorySegment handle, HeldResources held, List<CudaGraph> bodies,
            GraphAllocations allocations) {
        try {
            Graphs.destroy(handle);
        } finally {
            allocations.closeViews();
            closeBodies(bodies, held);
        }
    }

    private static void closeBodies(List<CudaGraph> bodies, HeldResources held) {
        try {
            bodies.forEach(nested -> nested.lifetime().close());
        } finally {
            held.dropAll();
        }
    }

    private ConditionalNode addConditional(ConditionalHandle condition, ConditionalType type, int size,
            GraphNode... dependencies) {
        Objects.requireNonNull(condition, "condition");
        MemorySegment graph = handle();
        if (!condition.belongsTo(graph)) {
            throw new IllegalArgumentException(condition + " was made for another graph: a conditional node takes a "
                    + "handle made by the graph that holds it");
        }
        kernelNodes.resolveBeforeGraphChanges();
        useDevice();
        Graphs.ConditionalNode added = condition.addNode(graph, handles(dependencies), type, size);
        ConditionalNode node = new ConditionalNode(this, added.node(), type, condition,
                bodies(added.bodies(), device, type, toString(), allocations, this));
        register(node);
        return node;
    }

    private void register(ConditionalNode node) {
        conditionals.put(node.address(), node);
        bodies.addAll(node.bodies());
    }

    /** The node kinds CUDA allows in a conditional node's body. */
    private static final Set<GraphNodeType> BODY_NODE_TYPES = EnumSet.of(GraphNodeType.KERNEL, GraphNodeType.EMPTY,
            GraphNodeType.GRAPH, GraphNodeType.MEMSET, GraphNodeType.MEMCPY, GraphNodeType.CONDITIONAL);

    private void ensureAllowedHere(GraphNodeType type) {
        if (body && !BODY_NODE_TYPES.contains(type)) {
            throw new IllegalStateException(bodyRule(type));
        }
    }

    private String bodyRule(GraphNodeType type) {
        return this + " is a conditional node's body, where CUDA allows only kernel, empty, child graph, memset, "
                + "memcpy and conditional nodes, not a " + type + " node";
    }

    /** The node kinds CUDA does not clone ({@code cudaGraphClone}). */
    private static final Set<GraphNodeType> NOT_CLONED = EnumSet.of(GraphNodeType.MEM_ALLOC, GraphNodeType.MEM_FREE,
            GraphNodeType.CONDITIONAL);

    /** The kind of the first node of {@code graph}, at any depth, that CUDA does not clone; {@code null} if none. */
    private static GraphNodeType firstNotCloned(MemorySegment graph) {
        for (MemorySegment node : Graphs.nodes(graph)) {
            GraphNodeType type = CudaEnum.find(GraphNodeType.class, Graphs.nodeType(node)).orElse(null);
            if (type != null && NOT_CLONED.contains(type)) {
                return type;
            }
            if (type == GraphNodeType.GRAPH) {
                GraphNodeType nested = firstNotCloned(Graphs.childGraph(node));
                if (nested != null) {
                    return nested;
                }
            }
        }
        return null;
    }

    private IllegalStateException notCloned(GraphNodeType type) {
        return new IllegalStateException("cannot copy " + this + ": it holds a " + type + " node, and CUDA does not "
                + "clone a graph with conditional, memory allocation or memory free nodes; build or capture the graph "
                + "again instead");
    }

    /** Refuses a child graph with a node kind a body may not hold, at any depth. */
    private void checkBodyChild(MemorySegment child, String name) {
        for (MemorySegment node : Graphs.nodes(child)) {
            GraphNodeType type = GraphNodeType.fromValue(Graphs.nodeType(node));
            if (!BODY_NODE_TYPES.contains(type)) {
                throw new IllegalArgumentException(name + " holds a " + type + " node: " + bodyRule(type));
            }
            if (type == GraphNodeType.GRAPH) {
                checkBodyChild(Graphs.childGraph(node), name);
            }
        }
    }
}
