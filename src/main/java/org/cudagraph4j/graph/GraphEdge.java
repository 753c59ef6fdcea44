package org.cudagraph4j.graph;

/** A dependency: {@code to} runs after {@code from}. */
public record GraphEdge(GraphNode from, GraphNode to) {}
