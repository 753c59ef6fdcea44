package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Driver;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.Libraries;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * A node of a {@link CudaGraph}. It is valid while its graph is open.
 *
 * <p>{@link #id()} is the node's position in the graph's node list ({@code cudaGraphGetNodes},
 * creation order) and {@link #topologicalIndex()} its position in a topological order that breaks
 * ties by id.
 *
 * <p>Thread safety: as its graph.
 */
public final class GraphNode {
    private final CudaGraph graph;
    private final MemorySegment handle;
    private final KernelLaunch kernelParams;
    /** A node's type never changes: asked of the runtime once (a benign race may ask twice). */
    private GraphNodeType type;

    GraphNode(CudaGraph graph, MemorySegment handle, KernelLaunch kernelParams) {
        this.graph = graph;
        this.handle = handle;
        this.kernelParams = kernelParams;
    }

    /**
     * The graph this node belongs to.
     *
     * @return the graph, open or not
     */
    public CudaGraph graph() {
        return graph;
    }

    /**
     * The kind of this node ({@code cudaGraphNodeGetType}).
     *
     * @return the node type
     * @throws IllegalStateException if the graph is closed
     * @throws IllegalArgumentException if the runtime reports a type this library does not know
     */
    public GraphNodeType type() {
        MemorySegment node = handle(); // a closed graph's nodes have no type to give
        GraphNodeType known = type;
        if (known == null) {
            known = GraphNodeType.fromValue(Graphs.nodeType(node));
            type = known;
        }
        return known;
    }

    /**
     * Position in the graph's node list.
     *
     * @return the index, from 0, in {@link CudaGraph#nodes()}
     */
    public int id() {
        return graph.indexOf(this);
    }

    /**
     * Position in the graph's topological order.
     *
     * @return the index, from 0, in {@link CudaGraph#topologicalOrder()}
     */
    public int topologicalIndex() {
        return graph.topologicalOrder().indexOf(this);
    }

    /**
     * Nodes this one runs after.
     *
     * @return the direct dependencies, unmodifiable; empty for a root node
     */
    public List<GraphNode> dependencies() {
        return graph.edges().stream().filter(e -> e.to().equals(this)).map(GraphEdge::from).toList();
    }

    /**
     * Nodes that run after this one.
     *
     * @return the direct dependents, unmodifiable; empty for a leaf node
     */
    public List<GraphNode> dependents() {
        return graph.edges().stream().filter(e -> e.from().equals(this)).map(GraphEdge::to).toList();
    }

    /**
     * The kernel, launch shape and function handle of a kernel node: as the library recorded them
     * for nodes it added or captured, else as the driver reports them, which it does for any
     * kernel, also one that another library (cuBLAS, cuBLASLt, TensorRT) loaded through the driver
     * and queued on a capturing stream. The runtime cannot name such kernels
     * ({@code cudaGraphKernelNodeGetParams} answers {@code cudaErrorInvalidDeviceFunction}); the
     * driver's entry points come through {@code cudaGetDriverEntryPointByVersion}, so the library
     * still does not link against {@code libcuda}.
     *
     * @return the kernel's names, launch shape and function handle
     * @throws IllegalStateException if this is not a kernel node, or neither the driver nor the
     *     runtime can read it (the message says why)
     */
    public KernelNodeInfo kernelInfo() {
        requireType(GraphNodeType.KERNEL);
        if (kernelParams != null) {
            String name = kernelParams.kernel().name();
            LaunchConfig config = kernelParams.config();
            return new KernelNodeInfo(Demangler.demangle(name), name, config.grid(), config.block(),
                    config.sharedMemBytes(), kernelParams.kernel().handle().address());
        }
        MemorySegment node = handle();
        Driver.KernelNode params = Driver.kernelNode(node);
        if (params == null) {
            return runtimeKernelInfo(node);
        }
        long function = params.function() != 0 ? params.function() : params.kernel();
        String mangled = Driver.kernelName(params);
        if (mangled == null) {
            mangled = String.format("function 0x%X", function); // the driver gave the shape, not the name
        }
        return new KernelNodeInfo(Demangler.demangle(mangled), mangled,
                new Dim3(params.gridX(), params.gridY(), params.gridZ()),
                new Dim3(params.blockX(), params.blockY(), params.blockZ()), params.sharedMemBytes(), function);
    }

    /** A driver without {@code cuGraphKernelNodeGetParams}: the runtime reads the kernels it registered itself. */
    private KernelNodeInfo runtimeKernelInfo(MemorySegment node) {
        Driver.KernelNode params;
        try {
            params = Graphs.kernelNodeParams(node);
        } catch (CudaException unreadable) {
            throw new IllegalStateException("kernel node " + id() + " cannot be read: the driver gives no "
                    + "cuGraphKernelNodeGetParams, and " + unreadable.getMessage(), unreadable);
        }
        String mangled = Libraries.name(MemorySegment.ofAddress(params.function()));
        return new KernelNodeInfo(Demangler.demangle(mangled), mangled,
                new Dim3(params.gridX(), params.gridY(), params.gridZ()),
                new Dim3(params.blockX(), params.blockY(), params.blockZ()), params.sharedMemBytes(),
                params.function());
    }

    /**
     * What this kernel node launches, for nodes added with {@link CudaGraph#addKernel} or captured
     * from a launch through this library; empty for other nodes, such as the kernels another
     * library queued on a capturing stream, whose arguments the library does not know.
     *
     * @return the recorded launch, or empty
     */
    public Optional<KernelLaunch> kernelParams() {
        return Optional.ofNullable(kernelParams);
    }

    /**
     * The conditional node this is, with its kind, handle and bodies, when it was added through
     * this library ({@link CudaGraph#ifThen} and the like, or their {@link StreamCapture} twins).
     *
     * @return the conditional node, or empty for other nodes
     */
    public Optional<ConditionalNode> conditional() {
        return graph.conditionalOf(handle);
    }

    /**
     * The {@code cudaGraphNode_t}, for interop; valid while the graph is open.
     *
     * @return the native handle
     * @throws IllegalStateException if the graph is closed
     */
    public MemorySegment handle() {
        graph.ensureOpen();
        return handle;
    }

    void requireType(GraphNodeType expected) {
        GraphNodeType actual = type();
        if (actual != expected) {
            throw new IllegalStateException("node " + id() + " is a " + actual + " node, not " + expected);
        }
    }

    MemorySegment rawHandle() {
        return handle;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof GraphNode node && node.handle.address() == handle.address() && node.graph == graph;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(handle.address());
    }

    @Override
    public String toString() {
        return Lifetime.named("GraphNode", handle);
    }
}
