package org.cudagraph4j.graph;

import java.util.Optional;
import org.cudagraph4j.CudaException;

/** {@code cudaGraphInstantiateWithParams} failed; carries the reason and the node at fault. */
public final class GraphInstantiateException extends CudaException {
    private static final long serialVersionUID = 1L;

    private final InstantiateResult result;
    private final transient GraphNode node;

    public GraphInstantiateException(CudaException cause, InstantiateResult result, GraphNode node) {
        super(cause, result.cudaName() + (node == null ? "" : " at " + node));
        this.result = result;
        this.node = node;
    }

    public InstantiateResult result() {
        return result;
    }

    /** The node that made instantiation fail, when the runtime names one. */
    public Optional<GraphNode> node() {
        return Optional.ofNullable(node);
    }
}
