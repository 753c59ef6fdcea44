package org.cudagraph4j.graph;

import java.util.List;
import java.util.Map;

/**
 * Writes a {@link GraphSnapshot} in Graphviz DOT, one box per node with the fields the diagram
 * shows. Unlike {@code cudaGraphDebugDotPrint} ({@link CudaGraph#debugDotPrint}), it needs no
 * runtime and its output depends only on the snapshot.
 */
public final class GraphDot {
    private GraphDot() {}

    /**
     * Renders {@code graph} as a DOT digraph: each node a box labelled with its id, type and fields,
     * each dependency an arrow.
     *
     * @param graph the graph to render
     * @return the DOT source, ending with a newline
     */
    public static String write(GraphSnapshot graph) {
        StringBuilder dot = new StringBuilder();
        dot.append("digraph cudaGraph {\n");
        dot.append("  node [shape=box, fontname=\"monospace\"];\n");
        writeNodes(graph, "n", "  ", dot);
        dot.append("}\n");
        return dot.toString();
    }

    /**
     * Writes {@code graph}'s nodes and edges with ids prefixed by {@code prefix}; each conditional
     * node's bodies become clusters (ids {@code <prefix><node>_b<body>_n<id>}) joined to it by
     * dashed arrows to their root nodes.
     */
    private static void writeNodes(GraphSnapshot graph, String prefix, String indent, StringBuilder dot) {
        for (GraphSnapshot.Node node : graph.nodes()) {
            StringBuilder label = new StringBuilder();
            label.append("NODE ").append(node.id()).append(": ").append(node.type()).append("\\l");
            label.append("ID: ").append(node.id()).append(" (topoId: ").append(node.topoId()).append(")\\l");
            for (GraphSnapshot.Field field : node.fields()) {
                if (!field.label().isEmpty()) {
                    label.append(escape(field.label())).append(": ");
                }
                label.append(escape(field.value())).append("\\l");
            }
            dot.append(indent).append(prefix).append(node.id()).append(" [label=\"").append(label).append("\"];\n");
        }
        for (GraphSnapshot.Edge edge : graph.edges()) {
            dot.append(indent).append(prefix).append(edge.from()).append(" -> ").append(prefix).append(edge.to())
                    .append(";\n");
        }
        graph.bodies().entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(entry -> {
            List<GraphSnapshot> bodies = entry.getValue();
            for (int i = 0; i < bodies.size(); i++) {
                String cluster = prefix + entry.getKey() + "_b" + i;
                dot.append(indent).append("subgraph cluster_").append(cluster).append(" {\n");
                dot.append(indent).append("  label=\"NODE ").append(entry.getKey()).append(", body ").append(i)
                        .append("\";\n");
                dot.append(indent).append("  style=dashed;\n");
                GraphSnapshot body = bodies.get(i);
                writeNodes(body, cluster + "_n", indent + "  ", dot);
                dot.append(indent).append("}\n");
                for (GraphSnapshot.Node root : body.nodes()) {
                    if (body.edges().stream().noneMatch(e -> e.to() == root.id())) {
                        dot.append(indent).append(prefix).append(entry.getKey()).append(" -> ").append(cluster)
                                .append("_n").append(root.id()).append(" [style=dashed];\n");
                    }
                }
            }
        });
    }

    private static String escape(String text) {
        return text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\l");
    }
}
