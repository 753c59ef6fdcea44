package org.cudagraph4j.graph;

import java.util.Optional;
import org.cudagraph4j.error.CudaException;

/**
 * The runtime refused a graph, for instantiation ({@link GraphInstantiateException}) or for an
 * update ({@link GraphUpdateException}), with a reason and, where it names one, the node at fault.
 */
public abstract sealed class GraphRefusedException extends CudaException
        permits GraphInstantiateException, GraphUpdateException {
    private static final long serialVersionUID = 1L;

    /** Why the runtime refused the graph: an {@link InstantiateResult} or an {@link UpdateResult}. */
    private final Enum<?> result;
    private final transient GraphNode node;

    /**
     * Refines {@code cause} with the reason and where the runtime found it.
     *
     * @param cause the failed call
     * @param result the runtime's reason
     * @param detail the reason and its place, as the message gives them
     * @param node the node at fault, or {@code null} if the runtime names none
     */
    GraphRefusedException(CudaException cause, Enum<?> result, String detail, GraphNode node) {
        super(cause, detail);
        this.result = result;
        this.node = node;
    }

    /** The runtime's reason, which the subclass's {@code result()} gives with its own type. */
    final Enum<?> reason() {
        return result;
    }

    /**
     * The node at fault, when the runtime names one.
     *
     * @return the node; empty if the runtime named none, or after deserialization (the node is transient)
     */
    public Optional<GraphNode> node() {
        return Optional.ofNullable(node);
    }
}
