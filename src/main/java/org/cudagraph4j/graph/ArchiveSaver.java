package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.DeviceProperties;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.KernelParameter;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.graph.ArchiveModel.Argument;
import org.cudagraph4j.graph.ArchiveModel.CopyNode;
import org.cudagraph4j.graph.ArchiveModel.Edge;
import org.cudagraph4j.graph.ArchiveModel.EmptyNode;
import org.cudagraph4j.graph.ArchiveModel.EventNode;
import org.cudagraph4j.graph.ArchiveModel.KernelNode;
import org.cudagraph4j.graph.ArchiveModel.Library;
import org.cudagraph4j.graph.ArchiveModel.Node;
import org.cudagraph4j.graph.ArchiveModel.Param;
import org.cudagraph4j.graph.ArchiveModel.Pointer;
import org.cudagraph4j.graph.ArchiveModel.Scalar;
import org.cudagraph4j.graph.ArchiveModel.SetNode;
import org.cudagraph4j.graph.ArchiveModel.Slot;
import org.cudagraph4j.graph.GraphArchiveException.Reason;
import org.cudagraph4j.internal.Graphs;

/**
 * Describes a live graph as an {@link ArchiveModel}: each address becomes a (slot, offset) in the
 * bindings and each library its content hash, so that nothing of this process is saved. Libraries,
 * slots and events are numbered in order of first use, so only what the graph uses is recorded.
 */
final class ArchiveSaver {
    private final CudaGraph graph;
    private final GraphBindings bindings;
    private final Map<String, Integer> libraryIndex = new LinkedHashMap<>();
    private final List<Library> libraries = new ArrayList<>();
    private final Map<String, Integer> slotIndex = new LinkedHashMap<>();
    private final List<Slot> slots = new ArrayList<>();
    private final Map<String, Integer> eventIndex = new LinkedHashMap<>();

    private ArchiveSaver(CudaGraph graph, GraphBindings bindings) {
        this.graph = Objects.requireNonNull(graph, "graph");
        this.bindings = Objects.requireNonNull(bindings, "bindings");
    }

    /** Describes {@code graph} against {@code bindings}, refusing the first node or argument the format cannot hold. */
    static ArchiveModel save(CudaGraph graph, GraphBindings bindings) {
        return new ArchiveSaver(graph, bindings).save();
    }

    private ArchiveModel save() {
        List<GraphNode> graphNodes = graph.nodes();
        List<Node> nodes = new ArrayList<>(graphNodes.size());
        for (GraphNode node : graphNodes) {
            nodes.add(node(node));
        }
        Map<GraphNode, Integer> ids = GraphTopology.ids(graphNodes);
        List<Edge> edges = graph.edges().stream()
                .map(e -> new Edge(ids.get(e.from()), ids.get(e.to()), e.programmatic())).toList();
        DeviceProperties properties = bindings.device().properties();
        return new ArchiveModel(Cuda.libraryVersion(), properties.major(), properties.minor(), properties.name(),
                libraries, slots, List.copyOf(eventIndex.keySet()), nodes, edges);
    }

    private Node node(GraphNode node) {
        MemorySegment raw = node.rawHandle();
        return switch (node.type()) {
            case KERNEL -> kernel(node);
            case MEMCPY -> {
                Graphs.CopyNode copy = Graphs.memcpyNodeParams(raw);
                Pointer destination = pointer(copy.destination(), copy.byteSize(), node, "its destination");
                Pointer source = pointer(copy.source(), copy.byteSize(), node, "its source");
                yield new CopyNode(destination.slot(), destination.offset(), source.slot(), source.offset(),
                        copy.byteSize());
            }
            case MEMSET -> {
                Graphs.SetNode set = Graphs.memsetNodeParams(raw);
                if (set.value() > 0xFF) {
                    throw new GraphArchiveException(Reason.UNSUPPORTED, node + " sets elements wider than a byte "
                            + "(value 0x" + Long.toHexString(set.value()) + "), which the archive does not hold");
                }
                Pointer destination = pointer(set.destination(), set.byteSize(), node, "its destination");
                yield new SetNode(destination.slot(), destination.offset(), set.byteSize(), (int) set.value());
            }
            case EMPTY -> new EmptyNode();
            case EVENT_RECORD, WAIT_EVENT -> {
                boolean record = node.type() == GraphNodeType.EVENT_RECORD;
                long event = Graphs.eventOf(raw, record).address();
                yield new EventNode(record, event(event, node));
            }
            default -> throw new GraphArchiveException(Reason.UNSUPPORTED, node + " is a " + node.type()
                    + " node, which a graph archive does not hold (it holds kernel, memcpy, memset, empty and "
                    + "event nodes)");
        };
    }

    private KernelNode kernel(GraphNode node) {
        KernelLaunch params = node.kernelParams().orElseThrow(() -> new GraphArchiveException(
                Reason.UNSUPPORTED, node + " (" + node.kernelInfo().name() + ") is a kernel node whose launch this "
                + "library did not record (it was captured from a launch made outside cudagraph4j, such as another "
                + "library's kernel)"));
        LaunchConfig config = params.config();
        if (config.cluster() != null || config.cooperative()) {
            throw new GraphArchiveException(Reason.UNSUPPORTED, node + " (" + params.kernel().name() + ") launches "
                    + (config.cluster() != null ? "in clusters of " + config.cluster() : "cooperatively")
                    + ", which a graph archive does not hold: it keeps a kernel node's grid, block and shared memory");
        }
        CudaKernel kernel = params.kernel();
        CudaLibrary library = kernel.library();
        String hash = library.contentHash();
        Integer index = libraryIndex.get(hash);
        if (index == null) {
            index = libraries.size();
            libraryIndex.put(hash, index);
            libraries.add(new Library(hash, library.source()));
        }
        List<KernelParameter> parameters = kernel.parameters();
        List<Argument> arguments = new ArrayList<>(params.arguments().size());
        for (int i = 0; i < params.arguments().size(); i++) {
            Object argument = params.arguments().get(i);
            String where = "parameter " + i + " of kernel " + kernel.name();
            arguments.add(switch (argument) {
                case DeviceBuffer buffer -> pointer(buffer.address(), 1, node, where);
                case Integer value -> new Scalar(4, value);
                case Float value -> new Scalar(4, Float.floatToRawIntBits(value));
                case Long value -> {
                    for (Map.Entry<String, DeviceBuffer> bound : bindings.buffers().entrySet()) {
                        long start = bound.getValue().address();
                        if (value >= start && value - start < bound.getValue().byteSize()) {
                            throw new GraphArchiveException(Reason.UNSUPPORTED, node + ": " + where + " is the "
                                    + "address 0x" + Long.toHexString(value) + " inside slot '" + bound.getKey()
                                    + "', given as a long: pass the DeviceBuffer, so that it is saved as a slot");
                        }
                    }
                    yield new Scalar(8, value);
                }
                case Double value -> new Scalar(8, Double.doubleToRawLongBits(value));
                case Short value -> new Scalar(2, value);
                case Byte value -> new Scalar(1, value);
                case Boolean value -> new Scalar(1, value ? 1 : 0);
                case null, default -> throw new GraphArchiveException(Reason.UNSUPPORTED, node + ": " + where
                        + " is " + (argument == null ? "null" : "a " + argument.getClass().getName())
                        + ", which a graph archive does not hold");
            });
        }
        return new KernelNode(index, kernel.name(),
                parameters.stream().map(p -> new Param(p.offsetBytes(), p.sizeBytes())).toList(),
                params.config().grid(), params.config().block(), params.config().sharedMemBytes(), arguments);
    }

    /** The smallest bound buffer holding {@code [address, address + extent)}. */
    private Pointer pointer(long address, long extent, GraphNode node, String where) {
        String best = null;
        DeviceBuffer bestBuffer = null;
        for (Map.Entry<String, DeviceBuffer> bound : bindings.buffers().entrySet()) {
            DeviceBuffer buffer = bound.getValue();
            long start = buffer.address();
            if (address >= start && address - start < buffer.byteSize()
                    && extent <= buffer.byteSize() - (address - start)
                    && (bestBuffer == null || buffer.byteSize() < bestBuffer.byteSize())) {
                best = bound.getKey();
                bestBuffer = buffer;
            }
        }
        if (bestBuffer == null) {
            throw new GraphArchiveException(Reason.UNBOUND_POINTER, node + ": " + where + ", 0x"
                    + Long.toHexString(address) + " (" + extent + " bytes), lies in no bound buffer");
        }
        Integer slot = slotIndex.get(best);
        if (slot == null) {
            slot = slots.size();
            slotIndex.put(best, slot);
            slots.add(new Slot(best, bestBuffer.byteSize()));
        }
        return new Pointer(slot, address - bestBuffer.address());
    }

    private int event(long handle, GraphNode node) {
        for (Map.Entry<String, CudaEvent> bound : bindings.events().entrySet()) {
            if (bound.getValue().handle().address() == handle) {
                return eventIndex.computeIfAbsent(bound.getKey(), name -> eventIndex.size());
            }
        }
        throw new GraphArchiveException(Reason.UNBOUND_POINTER, node + ": its event 0x" + Long.toHexString(handle)
                + " is bound to no event slot");
    }
}
