package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.KernelArguments;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.Lifetime;
import org.cudagraph4j.internal.RetainedSet;

/**
 * An executable graph ({@code cudaGraphExec_t}), made by {@link CudaGraph#instantiate}. One
 * {@link #launch} submits the whole graph.
 *
 * <p>It is independent of the template it came from (which may be closed), and keeps alive what
 * its nodes use: the kernels' libraries and the buffers and events they touch.
 *
 * <p>Thread safety: launching from several threads is allowed, but an executable graph runs one
 * launch at a time (launches are ordered); updates must not race with launches or each other.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphLaunch</a>
 */
public final class GraphExec implements AutoCloseable {
    private final MemorySegment handle;
    private final Lifetime lifetime;
    private final RetainedSet retained = new RetainedSet();
    private final CudaGraph template;

    GraphExec(MemorySegment handle, RetainedSet graphResources, CudaGraph template) {
        this.handle = handle;
        this.template = template;
        this.retained.addAll(graphResources);
        this.lifetime = new Lifetime(String.format("GraphExec 0x%016X", handle.address()), this::free);
    }

    /** Queues the whole graph on {@code stream}. */
    public void launch(CudaStream stream) {
        Graphs.launch(handle(), stream.handle());
    }

    /** Uploads the graph's work to the device ahead of the first launch, ordered on {@code stream}. */
    public void upload(CudaStream stream) {
        Graphs.upload(handle(), stream.handle());
    }

    /**
     * Takes the parameters of {@code graph}, which must have this graph's topology, node types and
     * functions ({@code cudaGraphExecUpdate}).
     *
     * @throws GraphUpdateException naming the result kind (e.g. {@link UpdateResult#TOPOLOGY_CHANGED})
     *     and the node at fault; this executable is then unchanged
     */
    public void update(CudaGraph graph) {
        try {
            Graphs.update(handle(), graph.handle());
        } catch (Graphs.UpdateFailure failure) {
            GraphNode node = failure.node.equals(MemorySegment.NULL) ? null : graph.node(failure.node);
            throw new GraphUpdateException(failure.error, UpdateResult.fromValue(failure.result), node);
        }
        retained.addAll(graph.retained());
    }

    /**
     * Changes one kernel node's arguments or launch shape in this executable only
     * ({@code cudaGraphExecKernelNodeSetParams}): no re-instantiation, and the template is untouched.
     * The kernel must stay the same.
     *
     * @param node a kernel node of the graph this was instantiated from
     */
    public void updateKernelNode(GraphNode node, KernelNodeParams params) {
        if (node.graph() != template) {
            throw new IllegalArgumentException(node + " is not a node of the graph this executable was made from");
        }
        node.requireType(GraphNodeType.KERNEL);
        try (KernelArguments arguments = CudaGraph.temporaryArguments(params)) {
            Graphs.setKernelNodeParams(handle(), node.handle(), CudaGraph.kernelParams(params, arguments));
        }
        CudaGraph.retainResources(params, retained);
    }

    /** The {@code cudaGraphExec_t}, for interop; valid until closed. */
    public MemorySegment handle() {
        lifetime.ensureOpen();
        return handle;
    }

    public boolean isOpen() {
        return lifetime.isOpen();
    }

    /** Destroys the executable; launches already queued still complete. Idempotent. */
    @Override
    public void close() {
        lifetime.close();
    }

    @Override
    public String toString() {
        return lifetime.toString();
    }

    private void free() {
        try {
            Graphs.destroyExec(handle);
        } finally {
            retained.releaseAll();
        }
    }
}
