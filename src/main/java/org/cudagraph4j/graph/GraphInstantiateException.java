package org.cudagraph4j.graph;

import org.cudagraph4j.error.CudaException;

/** {@code cudaGraphInstantiateWithParams} failed; carries the reason and the node at fault. */
public final class GraphInstantiateException extends GraphRefusedException {
    private static final long serialVersionUID = 1L;

    GraphInstantiateException(CudaException cause, InstantiateResult result, GraphNode node) {
        super(cause, result, result.cudaName() + (node == null ? "" : " at " + node), node);
    }

    /**
     * Why instantiation failed.
     *
     * @return the runtime's reason, e.g. {@link InstantiateResult#INVALID_STRUCTURE}
     */
    public InstantiateResult result() {
        return (InstantiateResult) reason();
    }
}
