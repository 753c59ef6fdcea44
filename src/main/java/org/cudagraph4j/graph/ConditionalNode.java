package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A conditional node and the body graphs it runs: from {@link CudaGraph#ifThen},
 * {@link CudaGraph#ifThenElse}, {@link CudaGraph#whileLoop} and {@link CudaGraph#switchOf}, or their
 * {@link StreamCapture} twins. Fill the bodies with {@link CudaGraph}'s methods; they hold only
 * the node kinds CUDA allows there (kernel, empty, child graph, memset, memcpy and conditional), and
 * the graph that holds the node owns them: they are closed with it.
 *
 * <p>Thread safety: as the graph that holds the node.
 */
public final class ConditionalNode {
    private final MemorySegment node;
    private final ConditionalType type;
    private final ConditionalHandle handle;
    private final List<CudaGraph> bodies;
    private volatile CudaGraph graph;

    ConditionalNode(CudaGraph graph, MemorySegment node, ConditionalType type, ConditionalHandle handle,
            List<CudaGraph> bodies) {
        this.graph = graph;
        this.node = node;
        this.type = type;
        this.handle = handle;
        this.bodies = List.copyOf(bodies);
    }

    /**
     * The node in its graph, to make other nodes depend on it.
     *
     * @return the node
     * @throws IllegalStateException if the node was added in a capture that has not ended yet: the
     *     captured graph, and so its nodes, exist once {@link StreamCapture#end()} returned
     */
    public GraphNode node() {
        CudaGraph owner = graph;
        if (owner == null) {
            throw new IllegalStateException("this conditional node was captured: its graph exists once the capture "
                    + "has ended");
        }
        return owner.node(node);
    }

    /**
     * What the value decides.
     *
     * @return the kind of node
     */
    public ConditionalType type() {
        return type;
    }

    /**
     * The value the node reads.
     *
     * @return the handle given when the node was added
     */
    public ConditionalHandle handle() {
        return handle;
    }

    /**
     * Every body, in the runtime's order: one for IF and WHILE, THEN and ELSE for IF/ELSE, one per
     * case for SWITCH.
     *
     * @return the body graphs, unmodifiable
     */
    public List<CudaGraph> bodies() {
        return bodies;
    }

    /**
     * The body that runs when the value is non-zero: the only body of IF and WHILE, the THEN body
     * of IF/ELSE.
     *
     * @return the first body
     * @throws IllegalStateException for a SWITCH node, whose bodies are {@link #caseBody(int)}
     */
    public CudaGraph body() {
        if (type == ConditionalType.SWITCH) {
            throw new IllegalStateException("a SWITCH node has one body per case: use caseBody(n)");
        }
        return bodies.get(0);
    }

    /**
     * The body an IF/ELSE node runs when the value is zero.
     *
     * @return the second body
     * @throws IllegalStateException unless this is an IF node with an ELSE body
     */
    public CudaGraph elseBody() {
        if (type != ConditionalType.IF || bodies.size() != 2) {
            throw new IllegalStateException("only an IF/ELSE node has an ELSE body; this is " + describe());
        }
        return bodies.get(1);
    }

    /**
     * The body a SWITCH node runs when the value is {@code n}.
     *
     * @param n the case, from 0
     * @return that case's body
     * @throws IllegalStateException unless this is a SWITCH node
     * @throws IndexOutOfBoundsException if the node has no case {@code n}
     */
    public CudaGraph caseBody(int n) {
        if (type != ConditionalType.SWITCH) {
            throw new IllegalStateException("only a SWITCH node has cases; this is " + describe());
        }
        return bodies.get(n);
    }

    /** {@code IF}, {@code IF/ELSE}, {@code WHILE} or {@code SWITCH(n)}. */
    String describe() {
        return switch (type) {
            case IF -> bodies.size() == 2 ? "IF/ELSE" : "IF";
            case WHILE -> "WHILE";
            case SWITCH -> "SWITCH(" + bodies.size() + ")";
        };
    }

    /** A captured node joins the graph its capture ended with. */
    void adoptedBy(CudaGraph owner) {
        graph = owner;
    }

    long address() {
        return node.address();
    }

    @Override
    public String toString() {
        return describe() + " node on " + handle;
    }
}
