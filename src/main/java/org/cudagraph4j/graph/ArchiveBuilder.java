package org.cudagraph4j.graph;

import static org.cudagraph4j.graph.GraphArchiveException.corrupt;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.DeviceProperties;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
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

/**
 * Rebuilds an {@link ArchiveModel}'s graph against libraries and bindings. Everything is checked
 * before the graph is created, so that a refused load leaves no graph, and no half-built one,
 * behind.
 */
final class ArchiveBuilder {
    private final ArchiveModel archive;
    private final List<CudaLibrary> given;
    private final GraphBindings bindings;

    private ArchiveBuilder(ArchiveModel archive, List<CudaLibrary> given, GraphBindings bindings) {
        this.archive = archive;
        this.given = List.copyOf(Objects.requireNonNull(given, "libraries"));
        this.bindings = Objects.requireNonNull(bindings, "bindings");
    }

    /** See {@link GraphArchive#build}. */
    static CudaGraph build(ArchiveModel archive, List<CudaLibrary> libraries, GraphBindings bindings) {
        return new ArchiveBuilder(archive, libraries, bindings).build();
    }

    private CudaGraph build() {
        CudaDevice device = bindings.device();
        DeviceProperties here = device.properties();
        if (here.major() != archive.major() || here.minor() != archive.minor()) {
            throw new GraphArchiveException(Reason.ARCHITECTURE, "the archive was saved on " + archive.deviceName()
                    + " (sm_" + archive.computeCapability() + "), but this is " + here.name() + " (sm_"
                    + (here.major() * 10 + here.minor()) + ")");
        }
        device.makeCurrent(); // kernel nodes go onto the calling thread's current device
        List<CudaLibrary> libraries = libraries();
        List<DeviceBuffer> slots = slots();
        List<CudaEvent> events = events();
        List<CudaKernel> kernels = kernels(libraries);
        int[] order = topologicalOrder();

        List<List<Integer>> before = new ArrayList<>(archive.nodes().size());
        for (int id = 0; id < archive.nodes().size(); id++) {
            before.add(new ArrayList<>(1));
        }
        for (Edge edge : archive.edges()) {
            if (!edge.programmatic()) {
                before.get(edge.to()).add(edge.from());
            }
        }
        CudaGraph graph = CudaGraph.create();
        try {
            GraphNode[] built = new GraphNode[archive.nodes().size()];
            for (int id : order) {
                GraphNode[] dependencies = before.get(id).stream().map(from -> built[from])
                        .toArray(GraphNode[]::new);
                built[id] = add(graph, archive.nodes().get(id), kernels.get(id), slots, events, dependencies);
            }
            for (Edge edge : archive.edges()) {
                if (edge.programmatic()) {
                    graph.addProgrammaticDependency(built[edge.from()], built[edge.to()]);
                }
            }
            return graph;
        } catch (RuntimeException e) {
            graph.close();
            throw e;
        }
    }

    private GraphNode add(CudaGraph graph, Node node, CudaKernel kernel, List<DeviceBuffer> slots,
            List<CudaEvent> events, GraphNode[] dependencies) {
        return switch (node) {
            case KernelNode k -> {
                Object[] arguments = new Object[k.arguments().size()];
                for (int i = 0; i < arguments.length; i++) {
                    arguments[i] = switch (k.arguments().get(i)) {
                        case Pointer pointer -> view(slots.get(pointer.slot()), pointer.offset(), -1);
                        case Scalar scalar -> switch (scalar.size()) {
                            case 1 -> (byte) scalar.bits();
                            case 2 -> (short) scalar.bits();
                            case 4 -> (int) scalar.bits();
                            default -> scalar.bits();
                        };
                    };
                }
                LaunchConfig config = LaunchConfig.of(k.grid(), k.block(), k.sharedMemBytes());
                yield graph.addKernel(KernelLaunch.of(kernel, config, arguments), dependencies);
            }
            case CopyNode copy -> graph.addMemcpy(
                    view(slots.get(copy.destinationSlot()), copy.destinationOffset(), copy.byteSize()),
                    view(slots.get(copy.sourceSlot()), copy.sourceOffset(), copy.byteSize()), dependencies);
            case SetNode set -> graph.addMemset(view(slots.get(set.slot()), set.offset(), set.byteSize()),
                    set.value(), dependencies);
            case EmptyNode _ -> graph.addEmpty(dependencies);
            case EventNode event -> event.record() ? graph.addEventRecord(events.get(event.event()), dependencies)
                    : graph.addEventWait(events.get(event.event()), dependencies);
        };
    }

    private List<CudaLibrary> libraries() {
        Map<String, CudaLibrary> byHash = new HashMap<>();
        for (CudaLibrary library : given) {
            byHash.putIfAbsent(library.contentHash(), library);
        }
        List<CudaLibrary> matched = new ArrayList<>(archive.libraries().size());
        for (Library library : archive.libraries()) {
            CudaLibrary found = byHash.get(library.hash());
            if (found == null) {
                throw new GraphArchiveException(Reason.LIBRARY_MISSING, "no library given has content hash "
                        + library.hash() + " (saved from " + library.name() + "); given: "
                        + given.stream().map(l -> l.source() + " " + l.contentHash()).toList());
            }
            matched.add(found);
        }
        return matched;
    }

    /** Each node's kernel (null for other nodes), checked against its recorded parameter layout. */
    private List<CudaKernel> kernels(List<CudaLibrary> libraries) {
        List<CudaKernel> kernels = new ArrayList<>(archive.nodes().size());
        // Each library's names and each kernel's layout are asked of the runtime once, not per node.
        Map<Integer, Set<String>> names = new HashMap<>();
        Map<String, List<Param>> layouts = new HashMap<>();
        for (int id = 0; id < archive.nodes().size(); id++) {
            if (!(archive.nodes().get(id) instanceof KernelNode node)) {
                kernels.add(null);
                continue;
            }
            CudaLibrary library = libraries.get(node.library());
            if (!names.computeIfAbsent(node.library(), i -> Set.copyOf(library.kernelNames()))
                    .contains(node.symbol())) {
                throw new GraphArchiveException(Reason.PARAMETER_LAYOUT, "node " + id + ": library "
                        + library.source() + " has no kernel " + node.symbol());
            }
            CudaKernel kernel = library.kernel(node.symbol());
            List<Param> actual = layouts.computeIfAbsent(node.library() + "/" + node.symbol(),
                    key -> kernel.parameters().stream().map(p -> new Param(p.offsetBytes(), p.sizeBytes()))
                            .toList());
            if (!actual.equals(node.params())) {
                throw new GraphArchiveException(Reason.PARAMETER_LAYOUT, "node " + id + ": kernel "
                        + node.symbol() + " takes parameters " + layout(actual) + ", the archive recorded "
                        + layout(node.params()));
            }
            if (node.arguments().size() != actual.size()) {
                throw corrupt("node " + id + " has " + node.arguments().size() + " arguments for "
                        + actual.size() + " parameters");
            }
            for (int p = 0; p < actual.size(); p++) {
                long size = node.arguments().get(p) instanceof Scalar scalar ? scalar.size() : 8;
                if (size != actual.get(p).size()) {
                    throw corrupt("node " + id + " has a " + size + "-byte argument for " + node.symbol()
                            + "'s " + actual.get(p).size() + "-byte parameter " + p);
                }
            }
            kernels.add(kernel);
        }
        return kernels;
    }

    private List<DeviceBuffer> slots() {
        List<DeviceBuffer> bound = new ArrayList<>(archive.buffers().size());
        for (Slot slot : archive.buffers()) {
            DeviceBuffer buffer = bindings.buffers().get(slot.name());
            if (buffer == null) {
                throw new GraphArchiveException(Reason.SLOT_MISSING, "buffer slot '" + slot.name() + "' ("
                        + slot.byteSize() + " bytes) is not bound; bound: " + bindings.buffers().keySet());
            }
            if (buffer.byteSize() < slot.byteSize()) {
                throw new GraphArchiveException(Reason.SLOT_TOO_SMALL, "buffer slot '" + slot.name() + "' held "
                        + slot.byteSize() + " bytes at save, but " + buffer + " has " + buffer.byteSize());
            }
            bound.add(buffer);
        }
        return bound;
    }

    private List<CudaEvent> events() {
        List<CudaEvent> bound = new ArrayList<>(archive.events().size());
        for (String name : archive.events()) {
            CudaEvent event = bindings.events().get(name);
            if (event == null) {
                throw new GraphArchiveException(Reason.SLOT_MISSING, "event slot '" + name + "' is not bound; "
                        + "bound: " + bindings.events().keySet());
            }
            bound.add(event);
        }
        return bound;
    }

    /**
     * Node ids so that each comes after its dependencies; refuses a cycle. Ties go to the node made
     * ready first, not the lowest id: this order becomes the loaded graph's node order, which must
     * not change under archives already saved.
     */
    private int[] topologicalOrder() {
        for (Edge edge : archive.edges()) {
            if (edge.from() == edge.to()) {
                throw corrupt("node " + edge.from() + " depends on itself");
            }
        }
        int[] order = GraphTopology.order(archive.nodes().size(),
                archive.edges().stream().map(e -> new GraphSnapshot.Edge(e.from(), e.to())).toList(),
                GraphTopology.Ties.FIRST_READY);
        if (order.length != archive.nodes().size()) {
            throw corrupt("its edges form a cycle");
        }
        return order;
    }

    /**
     * The part of {@code buffer} from {@code offset}, {@code extent} bytes long (to its end when
     * negative), as a slice in the buffer's own elements.
     */
    private static DeviceBuffer view(DeviceBuffer buffer, long offset, long extent) {
        long element = buffer.elementType().byteSize();
        long bytes = extent < 0 ? buffer.byteSize() - offset : extent;
        if (offset % element != 0 || bytes % element != 0 || bytes <= 0) {
            throw new GraphArchiveException(Reason.SLOT_TOO_SMALL, buffer + " holds " + element + "-byte "
                    + "elements, so it cannot address bytes [" + offset + ", " + (offset + bytes) + ")");
        }
        return offset == 0 && bytes == buffer.byteSize() ? buffer : buffer.slice(offset / element, bytes / element);
    }

    private static String layout(List<Param> params) {
        return params.stream().map(p -> p.size() + "@" + p.offset()).toList().toString();
    }
}
