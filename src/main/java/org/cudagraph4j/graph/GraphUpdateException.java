package org.cudagraph4j.graph;

import java.util.Optional;
import org.cudagraph4j.error.CudaException;

/**
 * {@code cudaGraphExecUpdate} refused the new graph. {@link #result()} says why, e.g.
 * {@link UpdateResult#TOPOLOGY_CHANGED}, and {@link #node()} names the node of the new graph at
 * fault when the runtime reports one; where the topologies differ, that is the node an edge that
 * differs goes to, and {@link #edgeFrom()} the node it comes from. The executable graph is
 * unchanged and still launchable.
 */
public final class GraphUpdateException extends GraphRefusedException {
    private static final long serialVersionUID = 1L;

    private final transient GraphNode edgeFrom;

    GraphUpdateException(CudaException cause, UpdateResult result, GraphNode node, GraphNode edgeFrom) {
        super(cause, result, result.cudaName() + where(node, edgeFrom), node);
        this.edgeFrom = edgeFrom;
    }

    private static String where(GraphNode node, GraphNode edgeFrom) {
        if (edgeFrom != null && node != null) {
            return " on the edge from " + edgeFrom + " to " + node;
        }
        return node == null ? "" : " at " + node;
    }

    /**
     * Why the update was refused.
     *
     * @return the runtime's reason, e.g. {@link UpdateResult#TOPOLOGY_CHANGED}
     */
    public UpdateResult result() {
        return (UpdateResult) reason();
    }

    /**
     * Where the topologies differ, the node of the new graph that the edge that differs comes from.
     *
     * @return the node; empty if the runtime named none, or after deserialization (the node is transient)
     */
    public Optional<GraphNode> edgeFrom() {
        return Optional.ofNullable(edgeFrom);
    }
}
