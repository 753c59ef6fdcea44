package org.cudagraph4j.graph;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Draws a {@link GraphSnapshot} as boxes, in the layout of the GPU-glossary diagram of a captured
 * {@code torch.nn.Linear} layer: one box per node, headed {@code NODE i: TYPE}, joined by arrows.
 *
 * <p>Boxes are stacked by node id. An edge from one box to the next is an arrow; any other
 * dependency is listed in the dependent box as {@code Depends on}. Long values wrap after
 * underscores, so kernel names break where CUTLASS names do.
 */
public final class GraphDiagram {
    /** Width of the outer frame, as in the seed diagram. */
    public static final int WIDTH = 75;
    private static final int INNER_WIDTH = WIDTH - 8;
    private static final int TEXT_WIDTH = INNER_WIDTH - 2;
    private static final int LABEL_WIDTH = 12;
    private static final int ARROW_COLUMN = 31;

    private GraphDiagram() {}

    /**
     * Draws {@code graph} inside a frame {@link #WIDTH} characters wide; an empty graph draws as
     * {@code (empty graph)}.
     *
     * @param graph the graph to draw
     * @return the drawing, each line ended by a newline
     */
    public static String draw(GraphSnapshot graph) {
        List<String> lines = new ArrayList<>();
        lines.add("┌" + "─".repeat(WIDTH - 2) + "┐");
        List<GraphSnapshot.Node> nodes = graph.nodes();
        if (nodes.isEmpty()) {
            lines.add(framed(pad("  (empty graph)", WIDTH - 2)));
        }
        for (int i = 0; i < nodes.size(); i++) {
            GraphSnapshot.Node node = nodes.get(i);
            Integer previous = i == 0 ? null : nodes.get(i - 1).id();
            box(node, dependenciesOtherThan(graph, node.id(), previous), lines);
            if (i + 1 < nodes.size()) {
                int next = nodes.get(i + 1).id();
                if (graph.edges().contains(new GraphSnapshot.Edge(node.id(), next))) {
                    lines.add(framed(arrow("│")));
                    lines.add(framed(arrow("│")));
                    lines.add(framed(arrow("▼")));
                } else {
                    lines.add(framed(" ".repeat(WIDTH - 2)));
                }
            }
        }
        lines.add("└" + "─".repeat(WIDTH - 2) + "┘");
        StringBuilder drawing = new StringBuilder(String.join("\n", lines)).append("\n");
        // A conditional node's bodies follow the graph, each drawn the same way under a heading.
        graph.bodies().entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(entry -> {
            List<GraphSnapshot> bodies = entry.getValue();
            for (int i = 0; i < bodies.size(); i++) {
                drawing.append("\nNODE ").append(entry.getKey()).append(", body ").append(i).append(":\n")
                        .append(draw(bodies.get(i)));
            }
        });
        return drawing.toString();
    }

    private static void box(GraphSnapshot.Node node, List<Integer> otherDependencies, List<String> lines) {
        lines.add(framed("  ┌" + "─".repeat(INNER_WIDTH) + "┐  "));
        lines.add(inner(center("NODE " + node.id() + ": " + node.type(), INNER_WIDTH)));
        lines.add(framed("  ├" + "─".repeat(INNER_WIDTH) + "┤  "));
        lines.add(inner(text(field("ID", node.id() + " (topoId: " + node.topoId() + ")"))));
        List<GraphSnapshot.Field> fields = new ArrayList<>(node.fields());
        if (!otherDependencies.isEmpty()) {
            fields.add(new GraphSnapshot.Field("Depends on",
                    otherDependencies.stream().map(id -> "NODE " + id).collect(Collectors.joining(", "))));
        }
        String indent = " ".repeat(LABEL_WIDTH);
        for (GraphSnapshot.Field field : fields) {
            String head = field.label().isEmpty() ? indent : field(field.label(), "");
            List<String> wrapped = wrap(field.value(), TEXT_WIDTH - head.length());
            lines.add(inner(text(head + wrapped.get(0))));
            for (String rest : wrapped.subList(1, wrapped.size())) {
                lines.add(inner(text(" ".repeat(head.length()) + rest)));
            }
        }
        lines.add(framed("  └" + "─".repeat(INNER_WIDTH) + "┘  "));
    }

    private static List<Integer> dependenciesOtherThan(GraphSnapshot graph, int id, Integer previous) {
        return graph.edges().stream()
                .filter(e -> e.to() == id && (previous == null || e.from() != previous))
                .map(GraphSnapshot.Edge::from)
                .sorted()
                .toList();
    }

    /** {@code Label:} padded to the label column; longer labels get one space. */
    private static String field(String label, String value) {
        String head = label + ":";
        return (head.length() < LABEL_WIDTH ? pad(head, LABEL_WIDTH) : head + " ") + value;
    }

    /** Greedy wrap after underscores; a piece longer than a line is split hard, never dropped. */
    static List<String> wrap(String value, int width) {
        List<String> pieces = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < value.length(); i++) {
            if (value.charAt(i) == '_' && i > 0) {
                pieces.add(value.substring(start, i + 1));
                start = i + 1;
            }
        }
        if (start < value.length() || pieces.isEmpty()) {
            pieces.add(value.substring(start));
        }
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String piece : pieces) {
            if (line.length() + piece.length() > width && !line.isEmpty()) {
                lines.add(line.toString());
                line.setLength(0);
            }
            while (piece.length() > width) {
                lines.add(piece.substring(0, width));
                piece = piece.substring(width);
            }
            line.append(piece);
        }
        lines.add(line.toString());
        return lines;
    }

    private static String text(String content) {
        return "  " + pad(content, TEXT_WIDTH);
    }

    private static String inner(String content) {
        return framed("  │" + content + "│  ");
    }

    private static String framed(String content) {
        return "│" + content + "│";
    }

    private static String arrow(String symbol) {
        return pad(" ".repeat(ARROW_COLUMN - 1) + symbol, WIDTH - 2);
    }

    private static String center(String text, int width) {
        int left = (width - text.length()) / 2;
        return pad(" ".repeat(Math.max(left, 0)) + text, width);
    }

    private static String pad(String text, int width) {
        return text.length() >= width ? text : text + " ".repeat(width - text.length());
    }
}
