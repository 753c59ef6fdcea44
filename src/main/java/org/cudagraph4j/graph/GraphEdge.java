package org.cudagraph4j.graph;

/**
 * A dependency: {@code to} runs after {@code from}.
 *
 * @param from the node that runs first
 * @param to the node that waits for {@code from}
 * @param programmatic whether {@code to} may start before {@code from} has finished and waits for
 *     it on the device (a programmatic edge, from a launch with programmatic dependent launch or
 *     {@link CudaGraph#addProgrammaticDependency}); false for an ordinary edge
 */
public record GraphEdge(GraphNode from, GraphNode to, boolean programmatic) {
    /**
     * An ordinary edge.
     *
     * @param from the node that runs first
     * @param to the node that waits for {@code from}
     */
    public GraphEdge(GraphNode from, GraphNode to) {
        this(from, to, false);
    }
}
