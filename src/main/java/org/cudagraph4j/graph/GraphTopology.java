package org.cudagraph4j.graph;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Queue;

/**
 * Node ids and the topological sort, in one place for {@link CudaGraph} and {@link GraphArchive},
 * so that a node has the same id in a graph, its snapshot and its archive: its position in
 * {@link CudaGraph#nodes()}.
 */
final class GraphTopology {
    /**
     * Which of the nodes ready at once comes first. The two orders differ (for edges {@code 0->3}
     * and {@code 1->2}: {@code 0 1 2 3} against {@code 0 1 3 2}), and each is observable where it is
     * used, so each caller keeps its own.
     */
    enum Ties {
        /** The lowest id: the order {@link CudaGraph#topologicalOrder()} documents. */
        LOWEST_ID,
        /**
         * The roots by id, then each node as its last dependency is taken, in edge order: the order
         * an archive's nodes are rebuilt in, which becomes the loaded graph's node order.
         */
        FIRST_READY
    }

    private GraphTopology() {}

    /** {@return each node's id: its position in {@code nodes}} */
    static Map<GraphNode, Integer> ids(List<GraphNode> nodes) {
        Map<GraphNode, Integer> ids = new HashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            ids.put(nodes.get(i), i);
        }
        return ids;
    }

    /** {@return {@code edges} with each node replaced by its position in {@code nodes}} */
    static List<GraphSnapshot.Edge> edgesById(List<GraphNode> nodes, List<GraphEdge> edges) {
        Map<GraphNode, Integer> ids = ids(nodes);
        return edges.stream().map(e -> new GraphSnapshot.Edge(ids.get(e.from()), ids.get(e.to()))).toList();
    }

    /**
     * Node ids {@code 0} to {@code count - 1} so that each comes after its dependencies (Kahn's
     * algorithm), ties broken as {@code ties} says.
     *
     * @return every id once; fewer when the edges hold a cycle, whose nodes, and those after them,
     *     never become ready
     */
    static int[] order(int count, List<GraphSnapshot.Edge> edges, Ties ties) {
        int[] pending = new int[count];
        List<List<Integer>> successors = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            successors.add(new ArrayList<>());
        }
        for (GraphSnapshot.Edge edge : edges) {
            successors.get(edge.from()).add(edge.to());
            pending[edge.to()]++;
        }
        Queue<Integer> ready = ties == Ties.LOWEST_ID ? new PriorityQueue<>() : new ArrayDeque<>();
        for (int i = 0; i < count; i++) {
            if (pending[i] == 0) {
                ready.add(i);
            }
        }
        int[] order = new int[count];
        int filled = 0;
        while (!ready.isEmpty()) {
            int next = ready.remove();
            order[filled++] = next;
            for (int successor : successors.get(next)) {
                if (--pending[successor] == 0) {
                    ready.add(successor);
                }
            }
        }
        return filled == count ? order : Arrays.copyOf(order, filled);
    }
}
