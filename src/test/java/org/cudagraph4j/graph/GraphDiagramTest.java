package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GraphDiagramTest {
    /** The seed's captured torch.nn.Linear: a CUTLASS SIMT sgemm, then a cublasLt epilogue. */
    static GraphSnapshot seedLinear() {
        return new GraphSnapshot(List.of(
                new GraphSnapshot.Node(0, 1, GraphNodeType.KERNEL, List.of(
                        new GraphSnapshot.Field("Kernel",
                                "cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x32x16_1x1x1_3_tnn_align1_bias_f32_relu"),
                        new GraphSnapshot.Field("", "<<<{32,20},64,19200>>>"),
                        new GraphSnapshot.Field("Node handle", "0x0000564604539520"),
                        new GraphSnapshot.Field("Func handle", "0x0000564603AFCC00"))),
                new GraphSnapshot.Node(1, 0, GraphNodeType.KERNEL, List.of(
                        new GraphSnapshot.Field("Kernel", "_ZN8cublasLt8epilogue4impl12globalKernelILi8E..."),
                        new GraphSnapshot.Field("", "<<<{256,2},{8,32},0>>>"),
                        new GraphSnapshot.Field("Node handle", "0x0000564604539C88"),
                        new GraphSnapshot.Field("Func handle", "0x00005646044770F0")))),
                List.of(new GraphSnapshot.Edge(0, 1)));
    }

    @Test
    void drawsTheSeedLinearLayerExactlyAsTheSeedDoes() throws IOException {
        assertEquals(resource("seed-linear.txt"), GraphDiagram.draw(seedLinear()));
    }

    @Test
    void dependenciesOnNonAdjacentNodesAreListedAndOtherTypesShowTheirFields() {
        GraphSnapshot fork = new GraphSnapshot(List.of(
                new GraphSnapshot.Node(0, 0, GraphNodeType.MEMSET, List.of(
                        new GraphSnapshot.Field("Bytes", "4096 of 0xFF"),
                        new GraphSnapshot.Field("To", "0x0000700000000000"),
                        new GraphSnapshot.Field("Node handle", "0x0000000000000010"))),
                new GraphSnapshot.Node(1, 1, GraphNodeType.EMPTY, List.of(
                        new GraphSnapshot.Field("Node handle", "0x0000000000000020"))),
                new GraphSnapshot.Node(2, 2, GraphNodeType.EMPTY, List.of(
                        new GraphSnapshot.Field("Node handle", "0x0000000000000030")))),
                List.of(new GraphSnapshot.Edge(0, 1), new GraphSnapshot.Edge(0, 2)));

        String expected = """
                ┌─────────────────────────────────────────────────────────────────────────┐
                │  ┌───────────────────────────────────────────────────────────────────┐  │
                │  │                          NODE 0: MEMSET                           │  │
                │  ├───────────────────────────────────────────────────────────────────┤  │
                │  │  ID:         0 (topoId: 0)                                        │  │
                │  │  Bytes:      4096 of 0xFF                                         │  │
                │  │  To:         0x0000700000000000                                   │  │
                │  │  Node handle: 0x0000000000000010                                  │  │
                │  └───────────────────────────────────────────────────────────────────┘  │
                │                              │                                          │
                │                              │                                          │
                │                              ▼                                          │
                │  ┌───────────────────────────────────────────────────────────────────┐  │
                │  │                           NODE 1: EMPTY                           │  │
                │  ├───────────────────────────────────────────────────────────────────┤  │
                │  │  ID:         1 (topoId: 1)                                        │  │
                │  │  Node handle: 0x0000000000000020                                  │  │
                │  └───────────────────────────────────────────────────────────────────┘  │
                │                                                                         │
                │  ┌───────────────────────────────────────────────────────────────────┐  │
                │  │                           NODE 2: EMPTY                           │  │
                │  ├───────────────────────────────────────────────────────────────────┤  │
                │  │  ID:         2 (topoId: 2)                                        │  │
                │  │  Node handle: 0x0000000000000030                                  │  │
                │  │  Depends on: NODE 0                                               │  │
                │  └───────────────────────────────────────────────────────────────────┘  │
                └─────────────────────────────────────────────────────────────────────────┘
                """;
        assertEquals(expected, GraphDiagram.draw(fork));
    }

    @Test
    void namesWithoutUnderscoresAreSplitNeverCut() {
        String name = "x".repeat(120);
        List<String> lines = GraphDiagram.wrap(name, 53);
        assertEquals(List.of("x".repeat(53), "x".repeat(53), "x".repeat(14)), lines);
    }

    @Test
    void emptyGraphIsDrawnAsAnEmptyFrame() {
        assertEquals("""
                ┌─────────────────────────────────────────────────────────────────────────┐
                │  (empty graph)                                                          │
                └─────────────────────────────────────────────────────────────────────────┘
                """, GraphDiagram.draw(new GraphSnapshot(List.of(), List.of())));
    }

    @Test
    void dotListsEveryNodeWithItsFieldsAndEveryEdge() {
        assertEquals("""
                digraph cudaGraph {
                  node [shape=box, fontname="monospace"];
                  n0 [label="NODE 0: KERNEL\\lID: 0 (topoId: 1)\\lKernel: cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x32x16_1x1x1_3_tnn_align1_bias_f32_relu\\l<<<{32,20},64,19200>>>\\lNode handle: 0x0000564604539520\\lFunc handle: 0x0000564603AFCC00\\l"];
                  n1 [label="NODE 1: KERNEL\\lID: 1 (topoId: 0)\\lKernel: _ZN8cublasLt8epilogue4impl12globalKernelILi8E...\\l<<<{256,2},{8,32},0>>>\\lNode handle: 0x0000564604539C88\\lFunc handle: 0x00005646044770F0\\l"];
                  n0 -> n1;
                }
                """, GraphDot.write(seedLinear()));
    }

    @Test
    void conditionalBodiesAreDrawnAfterTheGraphAndAsDotClusters() {
        GraphSnapshot body = new GraphSnapshot(List.of(
                new GraphSnapshot.Node(0, 0, GraphNodeType.EMPTY, List.of()),
                new GraphSnapshot.Node(1, 1, GraphNodeType.MEMSET, List.of(new GraphSnapshot.Field("Bytes", "64 of 0x00")))),
                List.of(new GraphSnapshot.Edge(0, 1)));
        GraphSnapshot graph = new GraphSnapshot(List.of(
                new GraphSnapshot.Node(0, 0, GraphNodeType.CONDITIONAL, List.of(
                        new GraphSnapshot.Field("Condition", "WHILE")))),
                List.of(), Map.of(0, List.of(body)));
        String drawing = GraphDiagram.draw(graph);
        assertEquals(GraphDiagram.draw(new GraphSnapshot(graph.nodes(), graph.edges())) + "\nNODE 0, body 0:\n"
                + GraphDiagram.draw(body), drawing);
        assertEquals("""
                digraph cudaGraph {
                  node [shape=box, fontname="monospace"];
                  n0 [label="NODE 0: CONDITIONAL\\lID: 0 (topoId: 0)\\lCondition: WHILE\\l"];
                  subgraph cluster_n0_b0 {
                    label="NODE 0, body 0";
                    style=dashed;
                    n0_b0_n0 [label="NODE 0: EMPTY\\lID: 0 (topoId: 0)\\l"];
                    n0_b0_n1 [label="NODE 1: MEMSET\\lID: 1 (topoId: 1)\\lBytes: 64 of 0x00\\l"];
                    n0_b0_n0 -> n0_b0_n1;
                  }
                  n0 -> n0_b0_n0 [style=dashed];
                }
                """, GraphDot.write(graph));
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = GraphDiagramTest.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
