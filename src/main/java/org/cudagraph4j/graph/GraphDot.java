package org.cudagraph4j.graph;

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
            dot.append("  n").append(node.id()).append(" [label=\"").append(label).append("\"];\n");
        }
        for (GraphSnapshot.Edge edge : graph.edges()) {
            dot.append("  n").append(edge.from()).append(" -> n").append(edge.to()).append(";\n");
        }
        dot.append("}\n");
        return dot.toString();
    }

    private static String escape(String text) {
        return text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\l");
    }
}
