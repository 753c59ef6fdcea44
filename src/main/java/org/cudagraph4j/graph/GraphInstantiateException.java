package org.cudagraph4j.graph;

import java.util.Optional;
import org.cudagraph4j.error.CudaException;

/** {@code cudaGraphInstantiateWithParams} failed; carries the reason and the node at fault. */
public final class GraphInstantiateException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** Why instantiation failed. */
    private final InstantiateResult result;
    private final transient GraphNode node;

    /**
     * Refines {@code cause} with the reason and the node at fault, both named in the message.
     *
     * @param cause the failed {@code cudaGraphInstantiateWithParams} call
     * @param result the reason the runtime reported
     * @param node the node at fault, or {@code null} if the runtime names none
     */
    GraphInstantiateException(CudaException cause, InstantiateResult result, GraphNode node) {
        super(cause, result.cudaName() + (node == null ? "" : " at " + node));
        this.result = result;
        this.node = node;
    }

    /**
     * Why instantiation failed.
     *
     * @return the runtime's reason, e.g. {@link InstantiateResult#INVALID_STRUCTURE}
     */
    public InstantiateResult result() {
        return result;
    }

    /**
     * The node that made instantiation fail, when the runtime names one.
     *
     * @return the node; empty if the runtime named none, or after deserialization (the node is transient)
     */
    public Optional<GraphNode> node() {
        return Optional.ofNullable(node);
    }
}
