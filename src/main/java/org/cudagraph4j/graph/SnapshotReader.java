package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.cudagraph4j.internal.Graphs;

/** Reads a graph's nodes, edges and node details from the runtime into a {@link GraphSnapshot}. */
final class SnapshotReader {
    private SnapshotReader() {}

    /** {@link CudaGraph#snapshot()}: the graph as it is now, with each conditional node's bodies. */
    static GraphSnapshot read(CudaGraph graph) {
        List<GraphNode> nodes = graph.nodes();
        List<GraphSnapshot.Edge> edges = GraphTopology.edgesById(nodes, graph.edges());
        int[] order = GraphTopology.order(nodes.size(), edges, GraphTopology.Ties.LOWEST_ID);
        int[] topoIds = new int[nodes.size()];
        for (int position = 0; position < order.length; position++) {
            topoIds[order[position]] = position;
        }
        List<GraphSnapshot.Node> snapshotNodes = new ArrayList<>(nodes.size());
        for (int id = 0; id < nodes.size(); id++) {
            GraphNode node = nodes.get(id);
            snapshotNodes.add(new GraphSnapshot.Node(id, topoIds[id], node.type(), fields(graph, node)));
        }
        Map<Integer, List<GraphSnapshot>> bodySnapshots = new HashMap<>();
        for (int id = 0; id < nodes.size(); id++) {
            int node = id;
            graph.conditionalOf(nodes.get(id).rawHandle()).ifPresent(conditional ->
                    bodySnapshots.put(node, conditional.bodies().stream().map(SnapshotReader::read).toList()));
        }
        return new GraphSnapshot(snapshotNodes, edges, bodySnapshots);
    }

    private static List<GraphSnapshot.Field> fields(CudaGraph graph, GraphNode node) {
        List<GraphSnapshot.Field> fields = new ArrayList<>();
        MemorySegment raw = node.rawHandle();
        switch (node.type()) {
            case KERNEL -> {
                KernelNodeInfo info;
                try {
                    info = node.kernelInfo();
                } catch (IllegalStateException unreadable) { // neither the driver nor the runtime can read it
                    fields.add(new GraphSnapshot.Field("Kernel", "(not readable)"));
                    fields.add(handleField("Node handle", raw.address()));
                    return fields;
                }
                fields.add(new GraphSnapshot.Field("Kernel", info.name()));
                fields.add(new GraphSnapshot.Field("", info.shape()));
                fields.add(handleField("Node handle", raw.address()));
                fields.add(handleField("Func handle", info.functionHandle()));
                return fields;
            }
            case MEMCPY -> {
                Graphs.CopyNode copy = Graphs.memcpyNodeParams(raw);
                fields.add(new GraphSnapshot.Field("Bytes", Long.toString(copy.byteSize())));
                fields.add(handleField("From", copy.source()));
                fields.add(handleField("To", copy.destination()));
            }
            case MEMSET -> {
                Graphs.SetNode set = Graphs.memsetNodeParams(raw);
                fields.add(new GraphSnapshot.Field("Bytes", set.byteSize() + String.format(" of 0x%02X", set.value())));
                fields.add(handleField("To", set.destination()));
            }
            case EVENT_RECORD -> fields.add(handleField("Event", Graphs.eventOf(raw, true).address()));
            case WAIT_EVENT -> fields.add(handleField("Event", Graphs.eventOf(raw, false).address()));
            case GRAPH -> fields.add(new GraphSnapshot.Field("Child nodes",
                    Integer.toString(Graphs.nodes(Graphs.childGraph(raw)).size())));
            case CONDITIONAL -> {
                graph.conditionalOf(raw).ifPresent(conditional -> {
                    fields.add(new GraphSnapshot.Field("Condition", conditional.describe()));
                    fields.add(handleField("Handle", conditional.handle().value()));
                    fields.add(new GraphSnapshot.Field("Bodies", conditional.bodies().stream()
                            .map(b -> Integer.toString(Graphs.nodes(b.handle()).size()))
                            .collect(Collectors.joining(", ", "", " nodes"))));
                });
            }
            default -> {
                // Other node types show their handle only.
            }
        }
        fields.add(handleField("Node handle", raw.address()));
        return fields;
    }

    private static GraphSnapshot.Field handleField(String label, long address) {
        return new GraphSnapshot.Field(label, String.format("0x%016X", address));
    }
}
