package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.List;
import org.cudagraph4j.graph.GraphSnapshot.Edge;
import org.cudagraph4j.graph.GraphTopology.Ties;
import org.junit.jupiter.api.Test;

/** The shared topological sort, without a GPU: both tie rules, which its two callers depend on. */
class GraphTopologyTest {
    @Test
    void theTwoTieRulesDifferWhenAHigherIdIsReadyFirst() {
        List<Edge> edges = List.of(new Edge(0, 3), new Edge(1, 2));
        assertArrayEquals(new int[] {0, 1, 2, 3}, GraphTopology.order(4, edges, Ties.LOWEST_ID));
        assertArrayEquals(new int[] {0, 1, 3, 2}, GraphTopology.order(4, edges, Ties.FIRST_READY));
    }

    @Test
    void firstReadyFollowsTheEdgeOrderAndLowestIdDoesNot() {
        List<Edge> edges = List.of(new Edge(0, 2), new Edge(0, 1));
        assertArrayEquals(new int[] {0, 1, 2}, GraphTopology.order(3, edges, Ties.LOWEST_ID));
        assertArrayEquals(new int[] {0, 2, 1}, GraphTopology.order(3, edges, Ties.FIRST_READY));
    }

    @Test
    void aNodeComesAfterEveryDependencyWhateverItsId() {
        List<Edge> edges = List.of(new Edge(3, 0), new Edge(2, 0), new Edge(1, 3));
        for (Ties ties : Ties.values()) {
            assertArrayEquals(new int[] {1, 2, 3, 0}, GraphTopology.order(4, edges, ties), ties.name());
        }
        assertArrayEquals(new int[0], GraphTopology.order(0, List.of(), Ties.LOWEST_ID));
    }

    @Test
    void aCycleLeavesOutItsNodesAndThoseAfterThem() {
        List<Edge> edges = List.of(new Edge(1, 2), new Edge(2, 1), new Edge(2, 3));
        for (Ties ties : Ties.values()) {
            assertArrayEquals(new int[] {0, 4}, GraphTopology.order(5, edges, ties), ties.name());
        }
    }
}
