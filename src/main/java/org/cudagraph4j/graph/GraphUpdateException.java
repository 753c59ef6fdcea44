package org.cudagraph4j.graph;

import org.cudagraph4j.error.CudaException;

/**
 * {@code cudaGraphExecUpdate} refused the new graph. {@link #result()} says why, e.g.
 * {@link UpdateResult#TOPOLOGY_CHANGED}, and {@link #node()} names the node of the new graph at
 * fault when the runtime reports one. The executable graph is unchanged and still launchable.
 */
public final class GraphUpdateException extends GraphRefusedException {
    private static final long serialVersionUID = 1L;

    GraphUpdateException(CudaException cause, UpdateResult result, GraphNode node) {
        super(cause, result, result.cudaName(), node);
    }

    /**
     * Why the update was refused.
     *
     * @return the runtime's reason, e.g. {@link UpdateResult#TOPOLOGY_CHANGED}
     */
    public UpdateResult result() {
        return (UpdateResult) reason();
    }
}
