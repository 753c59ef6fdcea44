package org.cudagraph4j.graph;

import java.util.Optional;
import org.cudagraph4j.CudaException;

/**
 * {@code cudaGraphExecUpdate} refused the new graph. {@link #result()} says why, e.g.
 * {@link UpdateResult#TOPOLOGY_CHANGED}, and {@link #node()} names the node at fault when the
 * runtime reports one. The executable graph is unchanged and still launchable.
 */
public final class GraphUpdateException extends CudaException {
    private static final long serialVersionUID = 1L;

    private final UpdateResult result;
    private final transient GraphNode node;

    public GraphUpdateException(CudaException cause, UpdateResult result, GraphNode node) {
        super(cause, result.cudaName() + (node == null ? "" : " at " + node));
        this.result = result;
        this.node = node;
    }

    public UpdateResult result() {
        return result;
    }

    /** The node of the new graph at fault, if the runtime names one. */
    public Optional<GraphNode> node() {
        return Optional.ofNullable(node);
    }
}
