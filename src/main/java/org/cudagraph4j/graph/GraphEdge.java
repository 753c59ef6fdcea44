package org.cudagraph4j.graph;

/**
 * A dependency: {@code to} runs after {@code from}.
 *
 * @param from the node that runs first
 * @param to the node that waits for {@code from}
 */
public record GraphEdge(GraphNode from, GraphNode to) {}
