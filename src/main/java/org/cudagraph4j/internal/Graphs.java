package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.cudagraph4j.cudart.cudaConditionalNodeParams;
import org.cudagraph4j.cudart.cudaExtent;
import org.cudagraph4j.cudart.cudaGraphEdgeData;
import org.cudagraph4j.cudart.cudaGraphExecUpdateResultInfo;
import org.cudagraph4j.cudart.cudaGraphInstantiateParams;
import org.cudagraph4j.cudart.cudaGraphNodeParams;
import org.cudagraph4j.cudart.cudaKernelNodeParams;
import org.cudagraph4j.cudart.cudaMemcpy3DParms;
import org.cudagraph4j.cudart.cudaMemsetParams;
import org.cudagraph4j.cudart.cudaPitchedPtr;
import org.cudagraph4j.cudart.dim3;
import org.cudagraph4j.error.CudaException;

/**
 * CUDA Graph calls: capture, construction, introspection, instantiation, launch and update.
 * Node, graph and executable-graph handles are opaque pointers owned by the graph package.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">Graph management</a>
 */
public final class Graphs {
    private Graphs() {}

    // Capture.

    /**
     * Begins capturing the work queued on {@code stream}, in {@code cudaStreamCaptureMode} {@code mode}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamBeginCapture</a>
     */
    public static void beginCapture(MemorySegment stream, int mode) {
        Status.check(cudaStreamBeginCapture(stream, mode), "cudaStreamBeginCapture");
    }

    /**
     * Begins capturing the work queued on {@code stream} into the existing {@code graph}, after
     * {@code dependencies} (nodes of it; none for root nodes), in {@code cudaStreamCaptureMode}
     * {@code mode}. The capture ends with {@link #endCaptureToGraph}, never with {@link #endCapture},
     * which would destroy the graph on failure.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamBeginCaptureToGraph</a>
     */
    public static void beginCaptureToGraph(MemorySegment stream, MemorySegment graph, List<MemorySegment> dependencies,
            int mode) {
        try (Arena arena = Arena.ofConfined()) {
            Status.check(cudaStreamBeginCaptureToGraph(stream, graph, array(arena, dependencies), MemorySegment.NULL,
                    dependencies.size(), mode), "cudaStreamBeginCaptureToGraph");
        }
    }

    /**
     * Ends a capture begun with {@link #beginCaptureToGraph}. The graph was the caller's before the
     * capture and stays the caller's, whatever the outcome: it is never destroyed here.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamEndCapture</a>
     */
    public static void endCaptureToGraph(MemorySegment stream) {
        MemorySegment graph = CAPTURE_QUERY.get().dependencies(); // a pointer-sized out-parameter
        graph.set(ADDRESS, 0, MemorySegment.NULL);
        Status.check(cudaStreamEndCapture(stream, graph), "cudaStreamEndCapture");
    }

    /**
     * Ends capture. Returns the graph, or the failure: an invalidated capture ends with
     * {@code cudaErrorStreamCaptureInvalidated} and no graph.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamEndCapture</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphDestroy</a>
     */
    public static MemorySegment endCapture(MemorySegment stream) {
        MemorySegment graph = CAPTURE_QUERY.get().dependencies(); // a pointer-sized out-parameter
        graph.set(ADDRESS, 0, MemorySegment.NULL);
        int status = cudaStreamEndCapture(stream, graph);
        MemorySegment result = graph.get(ADDRESS, 0);
        if (status != Status.SUCCESS) {
            if (!result.equals(MemorySegment.NULL)) {
                cudaGraphDestroy(result);
            }
            throw Status.error(status, "cudaStreamEndCapture", null);
        }
        return result;
    }

    /**
     * A stream's capture state.
     *
     * @param status the {@code cudaStreamCaptureStatus}
     * @param id the capture's unique id; 0 when the stream is not capturing
     */
    public record CaptureInfo(int status, long id) {}

    /**
     * The capture status and id of {@code stream}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamGetCaptureInfo</a>
     */
    public static CaptureInfo captureInfo(MemorySegment stream) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(JAVA_INT);
            MemorySegment id = arena.allocate(JAVA_LONG);
            Status.check(cudaStreamGetCaptureInfo(stream, status, id, MemorySegment.NULL, MemorySegment.NULL,
                    MemorySegment.NULL, MemorySegment.NULL), "cudaStreamGetCaptureInfo");
            int captureStatus = status.get(JAVA_INT, 0);
            return new CaptureInfo(captureStatus, captureStatus == 0 ? 0 : id.get(JAVA_LONG, 0));
        }
    }

    /**
     * Per-thread out-parameters of the launch-time capture query and of the capture's end, so that
     * neither allocates. An automatic arena lets the collector free them with their (possibly
     * virtual) thread.
     */
    private static final ThreadLocal<CaptureQuery> CAPTURE_QUERY = ThreadLocal.withInitial(CaptureQuery::new);

    /** The out-parameters of {@code cudaStreamGetCaptureInfo}, sliced once per thread. */
    private record CaptureQuery(MemorySegment status, MemorySegment dependencies, MemorySegment edgeData,
            MemorySegment count) {
        CaptureQuery() {
            this(Arena.ofAuto().allocate(4 * ADDRESS.byteSize(), ADDRESS.byteAlignment()));
        }

        private CaptureQuery(MemorySegment slots) {
            this(slots.asSlice(0, JAVA_INT), slots.asSlice(ADDRESS.byteSize(), ADDRESS),
                    slots.asSlice(2 * ADDRESS.byteSize(), ADDRESS), slots.asSlice(3 * ADDRESS.byteSize(), JAVA_LONG));
        }
    }

    /**
     * The one node the next operation captured on {@code stream} would depend on: right after a
     * launch, the node that launch became. 0 when there is not exactly one such node.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamGetCaptureInfo</a>
     */
    public static long capturedNode(MemorySegment stream) {
        CaptureQuery query = CAPTURE_QUERY.get();
        // Edge data is asked for but unused: without it the query fails (cudaErrorLossyQuery) when
        // the dependencies carry non-default edge data.
        Status.check(cudaStreamGetCaptureInfo(stream, query.status(), MemorySegment.NULL, MemorySegment.NULL,
                query.dependencies(), query.edgeData(), query.count()), "cudaStreamGetCaptureInfo");
        if (query.count().get(JAVA_LONG, 0) != 1) {
            return 0;
        }
        @SuppressWarnings("restricted") // the runtime owns an array of one node handle here
        MemorySegment array = query.dependencies().get(ADDRESS, 0).reinterpret(ADDRESS.byteSize());
        return array.get(ADDRESS, 0).address();
    }

    /**
     * The graph a capture on {@code stream} is recording into and the nodes the next captured
     * operation would depend on; both owned by the runtime.
     */
    public record CaptureGraph(MemorySegment graph, List<MemorySegment> dependencies) {}

    /**
     * The graph and dependencies of the capture on {@code stream}; throws if it is not capturing.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamGetCaptureInfo</a>
     */
    public static CaptureGraph captureGraph(MemorySegment stream) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(JAVA_INT);
            MemorySegment graph = arena.allocate(ADDRESS);
            MemorySegment dependencies = arena.allocate(ADDRESS);
            MemorySegment edgeData = arena.allocate(ADDRESS); // see capturedNode
            MemorySegment count = arena.allocate(JAVA_LONG);
            Status.check(cudaStreamGetCaptureInfo(stream, status, MemorySegment.NULL, graph, dependencies, edgeData,
                    count), "cudaStreamGetCaptureInfo");
            if (status.get(JAVA_INT, 0) != cudaStreamCaptureStatusActive()) {
                throw new IllegalStateException("the stream is not capturing (cudaStreamCaptureStatus "
                        + status.get(JAVA_INT, 0) + ")");
            }
            long n = count.get(JAVA_LONG, 0);
            if (n == 0) {
                return new CaptureGraph(graph.get(ADDRESS, 0), List.of());
            }
            @SuppressWarnings("restricted") // the runtime owns an array of n node handles here
            MemorySegment array = dependencies.get(ADDRESS, 0).reinterpret(n * ADDRESS.byteSize());
            return new CaptureGraph(graph.get(ADDRESS, 0), list(array, n));
        }
    }

    /**
     * Makes {@code nodes} the only dependencies of the next operation captured on {@code stream}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamUpdateCaptureDependencies</a>
     */
    public static void setCaptureDependencies(MemorySegment stream, List<MemorySegment> nodes) {
        try (Arena arena = Arena.ofConfined()) {
            Status.check(cudaStreamUpdateCaptureDependencies(stream, array(arena, nodes), MemorySegment.NULL,
                    nodes.size(), cudaStreamSetCaptureDependencies()), "cudaStreamUpdateCaptureDependencies");
        }
    }

    // Construction.

    /**
     * A new empty graph.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphCreate</a>
     */
    public static MemorySegment create() {
        CudartLoader.ensureLoaded();
        return Out.pointer("cudaGraphCreate", null, (arena, graph) -> cudaGraphCreate(graph, 0));
    }

    /**
     * A copy of {@code graph} with every node and edge, child graphs copied too; each changes
     * independently of the other afterwards. CUDA does not clone a graph that holds memory
     * allocation, memory free or conditional nodes.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphClone</a>
     */
    public static MemorySegment clone(MemorySegment graph) {
        return Out.pointer("cudaGraphClone", null, (arena, clone) -> cudaGraphClone(clone, graph));
    }

    /**
     * The node of {@code clone} that {@code node}, a node of the graph it was cloned from, became.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphNodeFindInClone</a>
     */
    public static MemorySegment findInClone(MemorySegment node, MemorySegment clone) {
        return Out.pointer("cudaGraphNodeFindInClone", null,
                (arena, found) -> cudaGraphNodeFindInClone(found, node, clone));
    }

    /**
     * Destroys {@code graph} and its nodes.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphDestroy</a>
     */
    public static void destroy(MemorySegment graph) {
        Status.check(cudaGraphDestroy(graph), "cudaGraphDestroy");
    }

    /**
     * Adds a kernel node that launches {@code function} with {@code arguments} as {@code launch}
     * describes: its grid, block and shared memory as the node's parameters, its cluster shape and
     * cooperative launch as node attributes. The node runs after {@code dependencies}, and after
     * {@code programmaticDependencies} through programmatic edges, the form a launch with
     * programmatic stream serialization takes in a graph. A node whose attributes or edges the runtime
     * refuses is removed again.
     *
     * @param dependencies nodes the new one depends on fully
     * @param programmaticDependencies kernel nodes the new one depends on through a programmatic edge
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddKernelNode</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphKernelNodeSetAttribute</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphDestroyNode</a>
     */
    public static MemorySegment addKernelNode(MemorySegment graph, List<MemorySegment> dependencies,
            List<MemorySegment> programmaticDependencies, NativeLaunch launch, MemorySegment function,
            MemorySegment arguments) {
        MemorySegment node = Out.pointer("cudaGraphAddKernelNode", null, (arena, out) -> cudaGraphAddKernelNode(out,
                graph, array(arena, dependencies), dependencies.size(),
                launch.nodeParams(cudaKernelNodeParams.allocate(arena), function, arguments)));
        try {
            launch.setNodeAttributes(node);
            for (MemorySegment from : programmaticDependencies) {
                addProgrammaticDependency(graph, from, node);
            }
        } catch (RuntimeException e) {
            cudaGraphDestroyNode(node); // its edges go with it
            throw e;
        }
        return node;
    }

    /**
     * Adds a one-dimensional copy node after {@code dependencies}; the direction is inferred
     * ({@code cudaMemcpyDefault}).
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddMemcpyNode1D</a>
     */
    public static MemorySegment addMemcpyNode(MemorySegment graph, List<MemorySegment> dependencies,
            long destination, long source, long byteSize) {
        return Out.pointer("cudaGraphAddMemcpyNode1D", null, (arena, node) -> cudaGraphAddMemcpyNode1D(node, graph,
                array(arena, dependencies), dependencies.size(), MemorySegment.ofAddress(destination),
                MemorySegment.ofAddress(source), byteSize, cudaMemcpyDefault()));
    }

    /**
     * A memset of {@code byteSize} bytes, one byte per element.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddMemsetNode</a>
     */
    public static MemorySegment addMemsetNode(MemorySegment graph, List<MemorySegment> dependencies,
            long destination, int byteValue, long byteSize) {
        return Out.pointer("cudaGraphAddMemsetNode", null, (arena, node) -> {
            MemorySegment params = cudaMemsetParams.allocate(arena);
            cudaMemsetParams.dst(params, MemorySegment.ofAddress(destination));
            cudaMemsetParams.value(params, byteValue & 0xFF);
            cudaMemsetParams.elementSize(params, 1);
            cudaMemsetParams.width(params, byteSize);
            cudaMemsetParams.height(params, 1);
            cudaMemsetParams.pitch(params, 0);
            return cudaGraphAddMemsetNode(node, graph, array(arena, dependencies), dependencies.size(), params);
        });
    }

    /**
     * Adds an empty node after {@code dependencies}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddEmptyNode</a>
     */
    public static MemorySegment addEmptyNode(MemorySegment graph, List<MemorySegment> dependencies) {
        return Out.pointer("cudaGraphAddEmptyNode", null,
                (arena, node) -> cudaGraphAddEmptyNode(node, graph, array(arena, dependencies), dependencies.size()));
    }

    /**
     * Adds a node that records {@code event}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddEventRecordNode</a>
     */
    public static MemorySegment addEventRecordNode(MemorySegment graph, List<MemorySegment> dependencies,
            MemorySegment event) {
        return Out.pointer("cudaGraphAddEventRecordNode", null, (arena, node) -> cudaGraphAddEventRecordNode(node,
                graph, array(arena, dependencies), dependencies.size(), event));
    }

    /**
     * Adds a node that waits for {@code event}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddEventWaitNode</a>
     */
    public static MemorySegment addEventWaitNode(MemorySegment graph, List<MemorySegment> dependencies,
            MemorySegment event) {
        return Out.pointer("cudaGraphAddEventWaitNode", null, (arena, node) -> cudaGraphAddEventWaitNode(node, graph,
                array(arena, dependencies), dependencies.size(), event));
    }

    /**
     * Adds a copy of {@code child} as one node.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddChildGraphNode</a>
     */
    public static MemorySegment addChildGraphNode(MemorySegment graph, List<MemorySegment> dependencies,
            MemorySegment child) {
        return Out.pointer("cudaGraphAddChildGraphNode", null, (arena, node) -> cudaGraphAddChildGraphNode(node,
                graph, array(arena, dependencies), dependencies.size(), child));
    }

    // Introspection.

    /**
     * A conditional node's handle for {@code graph}, the graph that will hold the node.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphConditionalHandleCreate</a>
     */
    public static long createConditionalHandle(MemorySegment graph, int defaultValue, boolean assignDefault) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(JAVA_LONG);
            Status.check(cudaGraphConditionalHandleCreate(handle, graph, defaultValue,
                    assignDefault ? cudaGraphCondAssignDefault() : 0), "cudaGraphConditionalHandleCreate");
            return handle.get(JAVA_LONG, 0);
        }
    }

    /** A new conditional node and the body graphs the runtime made for it, which the node owns. */
    public record ConditionalNode(MemorySegment node, List<MemorySegment> bodies) {}

    /**
     * Adds a conditional node ({@code cudaGraphAddNode} with {@code cudaConditionalNodeParams}).
     *
     * @param type {@code cudaGraphCondTypeIf}, {@code While} or {@code Switch}
     * @param size the number of bodies: 1 or 2 for IF, 1 for WHILE, any positive count for SWITCH
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddNode</a>
     */
    public static ConditionalNode addConditionalNode(MemorySegment graph, List<MemorySegment> dependencies,
            long handle, int type, int size) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaGraphNodeParams.allocate(arena); // zeroed, as the reserved fields must be
            cudaGraphNodeParams.type(params, cudaGraphNodeTypeConditional());
            MemorySegment conditional = cudaGraphNodeParams.conditional(params);
            cudaConditionalNodeParams.handle(conditional, handle);
            cudaConditionalNodeParams.type(conditional, type);
            cudaConditionalNodeParams.size(conditional, size);
            MemorySegment node = arena.allocate(ADDRESS);
            Status.check(cudaGraphAddNode(node, graph, array(arena, dependencies), MemorySegment.NULL,
                    dependencies.size(), params), "cudaGraphAddNode");
            @SuppressWarnings("restricted") // the runtime fills an array of size body graphs, owned by the node
            MemorySegment bodies = cudaConditionalNodeParams.phGraph_out(conditional)
                    .reinterpret(size * ADDRESS.byteSize());
            return new ConditionalNode(node.get(ADDRESS, 0), list(bodies, size));
        }
    }

    /**
     * Every node of {@code graph}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphGetNodes</a>
     */
    public static List<MemorySegment> nodes(MemorySegment graph) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_LONG);
            Status.check(cudaGraphGetNodes(graph, MemorySegment.NULL, count), "cudaGraphGetNodes");
            long n = count.get(JAVA_LONG, 0);
            if (n == 0) {
                return List.of();
            }
            MemorySegment nodes = arena.allocate(ADDRESS, n);
            Status.check(cudaGraphGetNodes(graph, nodes, count), "cudaGraphGetNodes");
            return list(nodes, count.get(JAVA_LONG, 0));
        }
    }

    /**
     * A dependency: {@code to} runs after {@code from}.
     *
     * @param from the node that runs first
     * @param to the node that depends on it
     * @param programmatic whether the edge is programmatic ({@code cudaGraphDependencyTypeProgrammatic}):
     *     {@code to} may start before {@code from} completes, and waits for it on the device
     */
    public record Edge(MemorySegment from, MemorySegment to, boolean programmatic) {}

    /**
     * Every edge with its type. The edge data is always asked for: without it, the query fails
     * ({@code cudaErrorLossyQuery}) on a graph with a programmatic edge, as a PDL capture makes.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphGetEdges</a>
     */
    public static List<Edge> edges(MemorySegment graph) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_LONG);
            Status.check(cudaGraphGetEdges(graph, MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL, count),
                    "cudaGraphGetEdges");
            long n = count.get(JAVA_LONG, 0);
            if (n == 0) {
                return List.of();
            }
            MemorySegment from = arena.allocate(ADDRESS, n);
            MemorySegment to = arena.allocate(ADDRESS, n);
            MemorySegment data = cudaGraphEdgeData.allocateArray(n, arena);
            Status.check(cudaGraphGetEdges(graph, from, to, data, count), "cudaGraphGetEdges");
            List<Edge> edges = new ArrayList<>();
            for (long i = 0; i < count.get(JAVA_LONG, 0); i++) {
                boolean programmatic = cudaGraphEdgeData.type(cudaGraphEdgeData.asSlice(data, i))
                        == cudaGraphDependencyTypeProgrammatic();
                edges.add(new Edge(from.getAtIndex(ADDRESS, i), to.getAtIndex(ADDRESS, i), programmatic));
            }
            return edges;
        }
    }

    /**
     * Adds a programmatic edge from kernel node {@code from}'s programmatic port to kernel node
     * {@code to} ({@code cudaGraphDependencyTypeProgrammatic}, {@code cudaGraphKernelNodePortProgrammatic}).
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphAddDependencies</a>
     */
    public static void addProgrammaticDependency(MemorySegment graph, MemorySegment from, MemorySegment to) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = cudaGraphEdgeData.allocate(arena); // zeroed: to_port default, reserved 0
            cudaGraphEdgeData.type(data, (byte) cudaGraphDependencyTypeProgrammatic());
            cudaGraphEdgeData.from_port(data, (byte) cudaGraphKernelNodePortProgrammatic());
            Status.check(cudaGraphAddDependencies(graph, arena.allocateFrom(ADDRESS, from),
                    arena.allocateFrom(ADDRESS, to), data, 1), "cudaGraphAddDependencies");
        }
    }

    /**
     * The {@code cudaGraphNodeType} of {@code node}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphNodeGetType</a>
     */
    public static int nodeType(MemorySegment node) {
        return Out.intValue("cudaGraphNodeGetType", null, (arena, type) -> cudaGraphNodeGetType(node, type));
    }

    /**
     * A kernel node's function, launch shape and shared memory, as the runtime reads them back, in the
     * driver's form ({@link Driver.KernelNode}, with no {@code CUkernel}).
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphKernelNodeGetParams</a>
     */
    public static Driver.KernelNode kernelNodeParams(MemorySegment node) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaKernelNodeParams.allocate(arena);
            Status.check(cudaGraphKernelNodeGetParams(node, params), "cudaGraphKernelNodeGetParams");
            MemorySegment grid = cudaKernelNodeParams.gridDim(params);
            MemorySegment block = cudaKernelNodeParams.blockDim(params);
            return new Driver.KernelNode(cudaKernelNodeParams.func(params).address(), 0, dim3.x(grid), dim3.y(grid),
                    dim3.z(grid), dim3.x(block), dim3.y(block), dim3.z(block),
                    cudaKernelNodeParams.sharedMemBytes(params));
        }
    }

    /** What a one-dimensional copy node copies: device or host addresses, and the byte count. */
    public record CopyNode(long destination, long source, long byteSize) {}

    /**
     * What a copy node copies.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphMemcpyNodeGetParams</a>
     */
    public static CopyNode memcpyNodeParams(MemorySegment node) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaMemcpy3DParms.allocate(arena);
            Status.check(cudaGraphMemcpyNodeGetParams(node, params), "cudaGraphMemcpyNodeGetParams");
            MemorySegment extent = cudaMemcpy3DParms.extent(params);
            return new CopyNode(cudaPitchedPtr.ptr(cudaMemcpy3DParms.dstPtr(params)).address(),
                    cudaPitchedPtr.ptr(cudaMemcpy3DParms.srcPtr(params)).address(),
                    cudaExtent.width(extent) * cudaExtent.height(extent) * cudaExtent.depth(extent));
        }
    }

    /** What a memset node sets: the device address, the element value, and the byte count. */
    public record SetNode(long destination, long value, long byteSize) {}

    /**
     * What a memset node sets.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphMemsetNodeGetParams</a>
     */
    public static SetNode memsetNodeParams(MemorySegment node) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaMemsetParams.allocate(arena);
            Status.check(cudaGraphMemsetNodeGetParams(node, params), "cudaGraphMemsetNodeGetParams");
            return new SetNode(cudaMemsetParams.dst(params).address(), cudaMemsetParams.value(params) & 0xFFFFFFFFL,
                    cudaMemsetParams.width(params) * cudaMemsetParams.height(params)
                            * cudaMemsetParams.elementSize(params));
        }
    }

    /**
     * The graph embedded in a child-graph node, owned by the node.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphChildGraphNodeGetGraph</a>
     */
    public static MemorySegment childGraph(MemorySegment node) {
        return Out.pointer("cudaGraphChildGraphNodeGetGraph", null,
                (arena, graph) -> cudaGraphChildGraphNodeGetGraph(node, graph));
    }

    /**
     * The event of an event-record node ({@code record}) or of an event-wait node.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphEventRecordNodeGetEvent</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphEventWaitNodeGetEvent</a>
     */
    public static MemorySegment eventOf(MemorySegment node, boolean record) {
        return record
                ? Out.pointer("cudaGraphEventRecordNodeGetEvent", null,
                        (arena, event) -> cudaGraphEventRecordNodeGetEvent(node, event))
                : Out.pointer("cudaGraphEventWaitNodeGetEvent", null,
                        (arena, event) -> cudaGraphEventWaitNodeGetEvent(node, event));
    }

    /**
     * Writes a DOT description of {@code graph} to the file {@code path}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphDebugDotPrint</a>
     */
    public static void debugDotPrint(MemorySegment graph, String path, boolean verbose) {
        try (Arena arena = Arena.ofConfined()) {
            Status.check(cudaGraphDebugDotPrint(graph, arena.allocateFrom(path),
                    verbose ? cudaGraphDebugDotFlagsVerbose() : 0), "cudaGraphDebugDotPrint", path);
        }
    }

    // Instantiation, launch, update.

    /**
     * Why an instantiation or update failed.
     *
     * @param error the failed call, e.g. {@code cudaGraphExecUpdate}
     * @param result the runtime's reason: a {@code cudaGraphInstantiateResult} or a {@code cudaGraphExecUpdateResult}
     * @param node the node at fault, or {@code NULL} if the runtime names none; where topologies
     *     differ, the node an edge that differs goes to
     * @param fromNode where topologies differ, the node that edge comes from; else {@code NULL}
     */
    public record GraphFailure(CudaException error, int result, MemorySegment node, MemorySegment fromNode) {}

    /**
     * {@code cudaGraphInstantiateWithParams}.
     *
     * @param onFailure the exception to throw for a failure, made by the caller, which knows its types
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphInstantiateWithParams</a>
     */
    public static MemorySegment instantiate(MemorySegment graph, long flags, MemorySegment uploadStream,
            Function<GraphFailure, RuntimeException> onFailure) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment exec = arena.allocate(ADDRESS);
            MemorySegment params = cudaGraphInstantiateParams.allocate(arena);
            cudaGraphInstantiateParams.flags(params, flags);
            cudaGraphInstantiateParams.uploadStream(params, uploadStream);
            cudaGraphInstantiateParams.errNode_out(params, MemorySegment.NULL);
            int status = cudaGraphInstantiateWithParams(exec, graph, params);
            if (status != Status.SUCCESS) {
                throw onFailure.apply(new GraphFailure(Status.error(status, "cudaGraphInstantiateWithParams", null),
                        cudaGraphInstantiateParams.result_out(params), cudaGraphInstantiateParams.errNode_out(params),
                        MemorySegment.NULL));
            }
            return exec.get(ADDRESS, 0);
        }
    }

    /**
     * Destroys an executable graph.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphExecDestroy</a>
     */
    public static void destroyExec(MemorySegment exec) {
        Status.check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
    }

    /**
     * Uploads {@code exec} to the device in {@code stream}'s order, ahead of its launches.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphUpload</a>
     */
    public static void upload(MemorySegment exec, MemorySegment stream) {
        Status.check(cudaGraphUpload(exec, stream), "cudaGraphUpload");
    }

    /**
     * Launches {@code exec} on {@code stream}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphLaunch</a>
     */
    public static void launch(MemorySegment exec, MemorySegment stream) {
        int status = cudaGraphLaunch(exec, stream);
        if (status != Status.SUCCESS) {
            throw Status.error(status, "cudaGraphLaunch", null);
        }
    }

    /**
     * {@code cudaGraphExecUpdate}.
     *
     * @param onFailure the exception to throw for a failure, made by the caller, which knows its types
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphExecUpdate</a>
     */
    public static void update(MemorySegment exec, MemorySegment graph,
            Function<GraphFailure, RuntimeException> onFailure) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = cudaGraphExecUpdateResultInfo.allocate(arena);
            int status = cudaGraphExecUpdate(exec, graph, info);
            if (status != Status.SUCCESS) {
                throw onFailure.apply(new GraphFailure(Status.error(status, "cudaGraphExecUpdate", null),
                        cudaGraphExecUpdateResultInfo.result(info), cudaGraphExecUpdateResultInfo.errorNode(info),
                        cudaGraphExecUpdateResultInfo.errorFromNode(info)));
            }
        }
    }

    /**
     * Per-thread {@code cudaKernelNodeParams} for single-node updates, written in full by each, so
     * that an update allocates nothing; freed with its (possibly virtual) thread.
     */
    private static final ThreadLocal<MemorySegment> NODE_UPDATE =
            ThreadLocal.withInitial(() -> cudaKernelNodeParams.allocate(Arena.ofAuto()));

    /**
     * Sets the parameters of kernel node {@code node} in {@code exec} to launch {@code function} with
     * {@code arguments} in {@code launch}'s grid, block and shared memory; the node's attributes and
     * the graph it came from are unchanged.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphExecKernelNodeSetParams</a>
     */
    public static void setKernelNodeParams(MemorySegment exec, MemorySegment node, NativeLaunch launch,
            MemorySegment function, MemorySegment arguments) {
        Status.check(cudaGraphExecKernelNodeSetParams(exec, node,
                launch.nodeParams(NODE_UPDATE.get(), function, arguments)), "cudaGraphExecKernelNodeSetParams");
    }

    /**
     * Turns {@code node} of {@code exec} on or off without an update; a disabled node does nothing
     * at launch, and its dependencies still order the rest.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphNodeSetEnabled</a>
     */
    public static void setNodeEnabled(MemorySegment exec, MemorySegment node, boolean enabled) {
        Status.check(cudaGraphNodeSetEnabled(exec, node, enabled ? 1 : 0), "cudaGraphNodeSetEnabled");
    }

    /**
     * Whether {@code node} of {@code exec} is enabled.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphNodeGetEnabled</a>
     */
    public static boolean isNodeEnabled(MemorySegment exec, MemorySegment node) {
        return Out.intValue("cudaGraphNodeGetEnabled", null, (arena, out) -> cudaGraphNodeGetEnabled(exec, node, out))
                != 0;
    }

    static MemorySegment array(Arena arena, List<MemorySegment> handles) {
        if (handles.isEmpty()) {
            return MemorySegment.NULL;
        }
        MemorySegment array = arena.allocate(ADDRESS, handles.size());
        for (int i = 0; i < handles.size(); i++) {
            array.setAtIndex(ADDRESS, i, handles.get(i));
        }
        return array;
    }

    private static List<MemorySegment> list(MemorySegment array, long count) {
        List<MemorySegment> handles = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            handles.add(array.getAtIndex(ADDRESS, i));
        }
        return handles;
    }
}
