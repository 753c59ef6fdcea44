package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What {@link GraphExec#setEnabled} and {@link GraphExec#isEnabled} refuse, named as the tests expect. */
public final class EnableRefusals {
    private EnableRefusals() {}

    /**
     * {@code exec} refuses to toggle {@code wrongType}, a node of a type CUDA never toggles, naming
     * {@code type}; and to say whether {@code foreign}, a node of another graph, is enabled.
     */
    public static void assertRefused(GraphExec exec, GraphNode wrongType, String type, GraphNode foreign) {
        IllegalArgumentException wrongTypeRefusal = assertThrows(IllegalArgumentException.class,
                () -> exec.setEnabled(wrongType, false));
        assertTrue(wrongTypeRefusal.getMessage().contains("is of type " + type + ", and CUDA enables and disables "
                + "only kernel, memcpy and memset nodes"), wrongTypeRefusal.getMessage());
        IllegalArgumentException wrongGraph = assertThrows(IllegalArgumentException.class,
                () -> exec.isEnabled(foreign));
        assertTrue(wrongGraph.getMessage().contains("is not a node of the graph this executable was made from"));
    }

    /** A closed executable of {@code graph} refuses to toggle {@code node}. */
    public static void assertClosedRefuses(CudaGraph graph, GraphNode node) {
        GraphExec closed = graph.instantiate();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.setEnabled(node, false));
    }
}
