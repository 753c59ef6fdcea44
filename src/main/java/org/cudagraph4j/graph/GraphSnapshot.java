package org.cudagraph4j.graph;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A plain description of a graph, detached from the runtime: what {@link CudaGraph#describe()} and
 * {@link CudaGraph#toDot()} draw. It can also be built by hand, to draw a graph that exists
 * elsewhere.
 *
 * @param nodes the nodes, ordered by {@link Node#id()}
 * @param edges dependencies between node ids
 * @param bodies the body graphs of each conditional node, by node id, in the node's body order
 */
public record GraphSnapshot(List<Node> nodes, List<Edge> edges, Map<Integer, List<GraphSnapshot>> bodies) {
    /**
     * Copies the lists and the map, so that the snapshot is immutable.
     *
     * @throws NullPointerException if a list, the map, or an element of one, is null
     */
    public GraphSnapshot {
        nodes = List.copyOf(nodes);
        edges = List.copyOf(edges);
        bodies = Map.copyOf(bodies.entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> List.copyOf(e.getValue()))));
    }

    /**
     * A snapshot of a graph without conditional nodes.
     *
     * @param nodes the nodes, ordered by {@link Node#id()}
     * @param edges dependencies between node ids
     */
    public GraphSnapshot(List<Node> nodes, List<Edge> edges) {
        this(nodes, edges, Map.of());
    }

    /**
     * One node.
     *
     * @param id position in the graph's node list
     * @param topoId position in a topological order of the graph
     * @param type the node type
     * @param fields what to show about the node, in order, e.g. {@code Kernel}, {@code Node handle}
     */
    public record Node(int id, int topoId, GraphNodeType type, List<Field> fields) {
        /**
         * Copies the fields, so that the node is immutable.
         *
         * @throws NullPointerException if {@code fields}, or an element of it, is null
         */
        public Node {
            fields = List.copyOf(fields);
        }
    }

    /**
     * A labelled value. An empty label continues the previous field on a new line, as the launch
     * shape continues the kernel name in the seed diagram.
     *
     * @param label what the value is, e.g. {@code Kernel}; empty to continue the previous field
     * @param value the text shown
     */
    public record Field(String label, String value) {}

    /**
     * A dependency: {@code to} runs after {@code from}.
     *
     * @param from the id of the node that runs first
     * @param to the id of the node that waits for it
     */
    public record Edge(int from, int to) {}
}
