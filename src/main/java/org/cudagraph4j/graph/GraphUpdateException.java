package org.cudagraph4j.graph;

import java.util.Optional;
import org.cudagraph4j.error.CudaException;

/**
 * {@code cudaGraphExecUpdate} refused the new graph. {@link #result()} says why, e.g.
 * {@link UpdateResult#TOPOLOGY_CHANGED}, and {@link #node()} names the node at fault when the
 * runtime reports one. The executable graph is unchanged and still launchable.
 */
public final class GraphUpdateException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** Why the update was refused. */
    private final UpdateResult result;
    private final transient GraphNode node;

    /**
     * Refines {@code cause} with the reason and the node at fault, both named in the message.
     *
     * @param cause the failed {@code cudaGraphExecUpdate} call
     * @param result the reason the runtime reported
     * @param node the node of the new graph at fault, or {@code null} if the runtime names none
     */
    GraphUpdateException(CudaException cause, UpdateResult result, GraphNode node) {
        super(cause, result.cudaName() + (node == null ? "" : " at " + node));
        this.result = result;
        this.node = node;
    }

    /**
     * Why the update was refused.
     *
     * @return the runtime's reason, e.g. {@link UpdateResult#TOPOLOGY_CHANGED}
     */
    public UpdateResult result() {
        return result;
    }

    /**
     * The node of the new graph at fault, if the runtime names one.
     *
     * @return the node; empty if the runtime named none, or after deserialization (the node is transient)
     */
    public Optional<GraphNode> node() {
        return Optional.ofNullable(node);
    }
}
