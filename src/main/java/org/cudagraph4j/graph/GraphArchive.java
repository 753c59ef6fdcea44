package org.cudagraph4j.graph;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.DeviceProperties;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.KernelParameter;
import org.cudagraph4j.graph.GraphArchiveException.Reason;
import org.cudagraph4j.internal.Graphs;

/**
 * A graph saved in one process and rebuilt in another: CUDA has no serialization of graphs (their
 * nodes hold raw pointers), but this library knows what each node was made from. A kernel is
 * recorded as its library's content hash ({@link CudaLibrary#contentHash()}), its symbol and its
 * parameter layout; a pointer as a (slot, byte offset) in the {@link GraphBindings} given at save;
 * a scalar by value. Loading checks all of it against the libraries and bindings it is given
 * before it builds anything, and refuses with a {@link GraphArchiveException} that names what
 * differs.
 *
 * <pre>{@code
 * GraphArchive.save(graph, new GraphBindings().buffer("x", x).buffer("y", y), path);
 * // ... in another process, with the same library image and new buffers:
 * GraphBindings fresh = new GraphBindings().buffer("x", x2).buffer("y", y2);
 * try (CudaGraph graph = GraphArchive.load(path, List.of(library), fresh);
 *      GraphExec exec = graph.instantiate()) { exec.launch(stream); }
 * }</pre>
 *
 * <p><b>What it holds.</b> Kernel, memcpy, memset, empty, event record and event wait nodes, and
 * the edges between them, programmatic ones included. Child graph and conditional nodes are
 * refused at save, naming the node. Kernel nodes need their launch recorded by this library
 * (added with {@link CudaGraph#addKernel}, or launched through {@link CudaKernel} during a
 * capture); pointer arguments must be {@link DeviceBuffer}s that lie in a bound buffer. An 8-byte
 * scalar is saved by value: pass pointers as buffers, never as addresses, or the loaded graph would
 * point into the old process.
 *
 * <p><b>Format, version {@value #FORMAT_VERSION}.</b> Big-endian: the 8 ASCII bytes
 * {@code CG4JGRAF}; the format version (int); the body; the SHA-256 of everything before it (32
 * bytes). The body: the library version and the compute capability and name of the device it was
 * saved on; the libraries (hash, name); the buffer slots (name, byte size at save); the event slots;
 * the nodes in the graph's order; the edges. Strings are an int length and UTF-8; counts are ints.
 * <b>Compatibility:</b> a library reads the format versions it knows (today only 1) and refuses
 * others with {@link Reason#FORMAT_VERSION}; an archive loads only on a GPU of the compute
 * capability it was saved on, and only with library images of the recorded hashes. The digest
 * detects corruption, not forgery: scalars are trusted as recorded, so load archives you made.
 *
 * <p>Thread safety: immutable.
 */
public final class GraphArchive {
    /** The archive format this library writes, and the only one it reads. */
    public static final int FORMAT_VERSION = 1;

    private static final byte[] MAGIC = "CG4JGRAF".getBytes(StandardCharsets.US_ASCII);
    private static final int DIGEST_BYTES = 32;
    private static final int MAX_STRING_BYTES = 1 << 16;

    record Library(String hash, String name) {}

    record Slot(String name, long byteSize) {}

    record Param(long offset, long size) {}

    sealed interface Argument permits Pointer, Scalar {}

    record Pointer(int slot, long offset) implements Argument {}

    record Scalar(int size, long bits) implements Argument {}

    sealed interface Node permits KernelNode, CopyNode, SetNode, EmptyNode, EventNode {}

    record KernelNode(int library, String symbol, List<Param> params, Dim3 grid, Dim3 block, int sharedMemBytes,
            List<Argument> arguments) implements Node {}

    record CopyNode(int destinationSlot, long destinationOffset, int sourceSlot, long sourceOffset, long byteSize)
            implements Node {}

    record SetNode(int slot, long offset, long byteSize, int value) implements Node {}

    record EmptyNode() implements Node {}

    record EventNode(boolean record, int event) implements Node {}

    record Edge(int from, int to, boolean programmatic) {}

    private final String libraryVersion;
    private final int major;
    private final int minor;
    private final String deviceName;
    private final List<Library> libraries;
    private final List<Slot> buffers;
    private final List<String> events;
    private final List<Node> nodes;
    private final List<Edge> edges;

    GraphArchive(String libraryVersion, int major, int minor, String deviceName, List<Library> libraries,
            List<Slot> buffers, List<String> events, List<Node> nodes, List<Edge> edges) {
        this.libraryVersion = libraryVersion;
        this.major = major;
        this.minor = minor;
        this.deviceName = deviceName;
        this.libraries = List.copyOf(libraries);
        this.buffers = List.copyOf(buffers);
        this.events = List.copyOf(events);
        this.nodes = List.copyOf(nodes);
        this.edges = List.copyOf(edges);
    }

    // ---------------------------------------------------------------------------------------------
    // Saving
    // ---------------------------------------------------------------------------------------------

    /**
     * Describes {@code graph} against {@code bindings}.
     *
     * @param graph the graph to save; it is not changed
     * @param bindings the named buffers its pointers lie in and the named events its event nodes use
     * @return the archive, to write with {@link #toBytes()}
     * @throws GraphArchiveException {@link Reason#UNBOUND_POINTER} naming the node and the parameter of
     *     a pointer (or the event) that lies in no bound slot; {@link Reason#UNSUPPORTED} naming a node
     *     kind or argument the format cannot hold
     * @throws IllegalStateException if the graph or a bound buffer is closed
     */
    public static GraphArchive of(CudaGraph graph, GraphBindings bindings) {
        return new Saver(graph, bindings).save();
    }

    /**
     * Saves {@code graph} as bytes: {@link #of} then {@link #toBytes()}.
     *
     * @param graph the graph to save
     * @param bindings the named buffers and events
     * @return the archive's bytes
     * @throws GraphArchiveException as {@link #of} does
     */
    public static byte[] save(CudaGraph graph, GraphBindings bindings) {
        return of(graph, bindings).toBytes();
    }

    /**
     * Saves {@code graph} to {@code file}: {@link #of} then {@link #toBytes()}.
     *
     * @param graph the graph to save
     * @param bindings the named buffers and events
     * @param file the file to write, replaced if it exists
     * @throws GraphArchiveException as {@link #of} does
     * @throws UncheckedIOException if the file cannot be written
     */
    public static void save(CudaGraph graph, GraphBindings bindings, Path file) {
        try {
            Files.write(file, of(graph, bindings).toBytes());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write graph archive " + file, e);
        }
    }

    /**
     * The archive in the documented format.
     *
     * @return the bytes, ending with their digest
     */
    public byte[] toBytes() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.write(MAGIC);
            out.writeInt(FORMAT_VERSION);
            writeString(out, libraryVersion);
            out.writeInt(major);
            out.writeInt(minor);
            writeString(out, deviceName);
            out.writeInt(libraries.size());
            for (Library library : libraries) {
                writeString(out, library.hash());
                writeString(out, library.name());
            }
            out.writeInt(buffers.size());
            for (Slot slot : buffers) {
                writeString(out, slot.name());
                out.writeLong(slot.byteSize());
            }
            out.writeInt(events.size());
            for (String event : events) {
                writeString(out, event);
            }
            out.writeInt(nodes.size());
            for (Node node : nodes) {
                writeNode(out, node);
            }
            out.writeInt(edges.size());
            for (Edge edge : edges) {
                out.writeInt(edge.from());
                out.writeInt(edge.to());
                out.writeBoolean(edge.programmatic());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        byte[] content = bytes.toByteArray();
        byte[] archive = Arrays.copyOf(content, content.length + DIGEST_BYTES);
        System.arraycopy(sha256(content, content.length), 0, archive, content.length, DIGEST_BYTES);
        return archive;
    }

    // ---------------------------------------------------------------------------------------------
    // Loading
    // ---------------------------------------------------------------------------------------------

    /**
     * Reads an archive, checking its structure and digest; nothing touches the GPU.
     *
     * @param archive the bytes {@link #toBytes()} wrote
     * @return the archive, to {@link #build} a graph from
     * @throws GraphArchiveException {@link Reason#CORRUPT} for anything that is not a whole, intact
     *     archive; {@link Reason#FORMAT_VERSION} for another format version
     */
    public static GraphArchive fromBytes(byte[] archive) {
        Objects.requireNonNull(archive, "archive");
        if (archive.length < MAGIC.length + Integer.BYTES + DIGEST_BYTES
                || !Arrays.equals(archive, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw corrupt("it does not start with the graph archive signature CG4JGRAF");
        }
        int version = ByteBuffer.wrap(archive, MAGIC.length, Integer.BYTES).getInt();
        if (version != FORMAT_VERSION) {
            throw new GraphArchiveException(Reason.FORMAT_VERSION, "graph archive format version " + version
                    + " is not one this library reads (it reads " + FORMAT_VERSION + ")");
        }
        int contentLength = archive.length - DIGEST_BYTES;
        if (!MessageDigest.isEqual(sha256(archive, contentLength),
                Arrays.copyOfRange(archive, contentLength, archive.length))) {
            throw corrupt("its SHA-256 does not match its contents: the archive is truncated or corrupted");
        }
        try {
            return new Reader(ByteBuffer.wrap(archive, MAGIC.length + Integer.BYTES,
                    contentLength - MAGIC.length - Integer.BYTES)).read();
        } catch (BufferUnderflowException e) {
            throw corrupt("it ends in the middle of a record");
        }
    }

    /**
     * Reads an archive file; see {@link #fromBytes}.
     *
     * @param file the archive
     * @return the archive
     * @throws GraphArchiveException as {@link #fromBytes} does
     * @throws UncheckedIOException if the file cannot be read
     */
    public static GraphArchive read(Path file) {
        try {
            return fromBytes(Files.readAllBytes(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read graph archive " + file, e);
        }
    }

    /**
     * Reads archive bytes and builds their graph: {@link #fromBytes} then {@link #build}.
     *
     * @param archive the bytes {@link #save(CudaGraph, GraphBindings)} returned
     * @param libraries the loaded libraries its kernels come from
     * @param bindings the buffers and events to bind its slots to
     * @return the graph, which the caller closes
     * @throws GraphArchiveException if a check fails
     */
    public static CudaGraph load(byte[] archive, List<CudaLibrary> libraries, GraphBindings bindings) {
        return fromBytes(archive).build(libraries, bindings);
    }

    /**
     * Reads {@code file} and builds its graph: {@link #read} then {@link #build}.
     *
     * @param file the archive
     * @param libraries the loaded libraries its kernels come from
     * @param bindings the buffers and events to bind its slots to
     * @return the graph, which the caller closes
     * @throws GraphArchiveException if a check fails
     */
    public static CudaGraph load(Path file, List<CudaLibrary> libraries, GraphBindings bindings) {
        return read(file).build(libraries, bindings);
    }

    /**
     * Builds the graph with the explicit-construction API, after checking, before anything is
     * built, that this GPU has the recorded compute capability, that a library of each recorded
     * hash is given and holds each kernel with the recorded parameter layout, and that every slot
     * is bound to a buffer at least as large as it was at save. The graph is built for the device
     * of the bound buffers (device 0 with none), which becomes current on the calling thread.
     *
     * @param libraries the loaded libraries the kernels come from (matched by content hash)
     * @param bindings the buffers and events to bind the slots to
     * @return a new graph, ready to instantiate, which the caller closes; it holds what its nodes use
     * @throws GraphArchiveException naming what differs: {@link Reason#ARCHITECTURE},
     *     {@link Reason#LIBRARY_MISSING}, {@link Reason#PARAMETER_LAYOUT}, {@link Reason#SLOT_MISSING},
     *     {@link Reason#SLOT_TOO_SMALL}, or {@link Reason#CORRUPT} for an archive whose records
     *     contradict each other
     * @throws IllegalStateException if a library or a bound buffer is closed
     */
    public CudaGraph build(List<CudaLibrary> libraries, GraphBindings bindings) {
        return new Builder(this, libraries, bindings).build();
    }

    // ---------------------------------------------------------------------------------------------
    // What it holds
    // ---------------------------------------------------------------------------------------------

    /** {@return the version of cudagraph4j that saved it} */
    public String libraryVersion() {
        return libraryVersion;
    }

    /** {@return the compute capability it was saved on, as major * 10 + minor, e.g. 90} */
    public int computeCapability() {
        return major * 10 + minor;
    }

    /** {@return the name of the GPU it was saved on} */
    public String deviceName() {
        return deviceName;
    }

    /** {@return the content hashes of the libraries its kernels come from} */
    public List<String> libraryHashes() {
        return libraries.stream().map(Library::hash).toList();
    }

    /** {@return the buffer slots its nodes use, with each one's byte size at save, in order of first use} */
    public Map<String, Long> bufferSlots() {
        Map<String, Long> slots = new LinkedHashMap<>();
        buffers.forEach(slot -> slots.put(slot.name(), slot.byteSize()));
        return slots;
    }

    /** {@return the event slots its event nodes use} */
    public List<String> eventSlots() {
        return events;
    }

    /** {@return the number of nodes} */
    public int nodeCount() {
        return nodes.size();
    }

    List<Node> nodes() {
        return nodes;
    }

    List<Edge> edges() {
        return edges;
    }

    @Override
    public String toString() {
        return String.format("GraphArchive v%d: %d nodes, %d edges, saved by cudagraph4j %s on %s (sm_%d)",
                FORMAT_VERSION, nodes.size(), edges.size(), libraryVersion, deviceName, computeCapability());
    }

    private static void writeNode(DataOutputStream out, Node node) throws IOException {
        switch (node) {
            case KernelNode kernel -> {
                out.writeByte(0);
                out.writeInt(kernel.library());
                writeString(out, kernel.symbol());
                out.writeInt(kernel.params().size());
                for (Param param : kernel.params()) {
                    out.writeLong(param.offset());
                    out.writeLong(param.size());
                }
                for (Dim3 dim : List.of(kernel.grid(), kernel.block())) {
                    out.writeInt(dim.x());
                    out.writeInt(dim.y());
                    out.writeInt(dim.z());
                }
                out.writeInt(kernel.sharedMemBytes());
                out.writeInt(kernel.arguments().size());
                for (Argument argument : kernel.arguments()) {
                    switch (argument) {
                        case Pointer pointer -> {
                            out.writeByte(0);
                            out.writeInt(pointer.slot());
                            out.writeLong(pointer.offset());
                        }
                        case Scalar scalar -> {
                            out.writeByte(1);
                            out.writeByte(scalar.size());
                            out.writeLong(scalar.bits());
                        }
                    }
                }
            }
            case CopyNode copy -> {
                out.writeByte(1);
                out.writeInt(copy.destinationSlot());
                out.writeLong(copy.destinationOffset());
                out.writeInt(copy.sourceSlot());
                out.writeLong(copy.sourceOffset());
                out.writeLong(copy.byteSize());
            }
            case SetNode set -> {
                out.writeByte(2);
                out.writeInt(set.slot());
                out.writeLong(set.offset());
                out.writeLong(set.byteSize());
                out.writeByte(set.value());
            }
            case EmptyNode _ -> out.writeByte(3);
            case EventNode event -> {
                out.writeByte(event.record() ? 4 : 5);
                out.writeInt(event.event());
            }
        }
    }

    private static void writeString(DataOutputStream out, String text) throws IOException {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
    }

    private static byte[] sha256(byte[] bytes, int length) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(bytes, 0, length);
            return digest.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /** The device of the first bound buffer, or device 0: where the graph's memory is. */
    private static CudaDevice deviceOf(GraphBindings bindings) {
        return bindings.buffers().values().stream().findFirst().map(DeviceBuffer::device)
                .orElseGet(() -> Cuda.device(0));
    }

    private static GraphArchiveException corrupt(String why) {
        return new GraphArchiveException(Reason.CORRUPT, "not a valid graph archive: " + why);
    }

    /** Strict reading: every count and index is checked against what can follow or what exists. */
    private static final class Reader {
        private final ByteBuffer in;

        Reader(ByteBuffer in) {
            this.in = in;
        }

        GraphArchive read() {
            String version = string("library version");
            int major = in.getInt();
            int minor = in.getInt();
            String device = string("device name");
            int libraryCount = count("libraries", 8);
            List<Library> libraries = new ArrayList<>(libraryCount);
            for (int i = 0; i < libraryCount; i++) {
                libraries.add(new Library(string("library hash"), string("library name")));
            }
            int slotCount = count("buffer slots", 12);
            List<Slot> slots = new ArrayList<>(slotCount);
            for (int i = 0; i < slotCount; i++) {
                String name = string("slot name");
                long size = in.getLong();
                if (size <= 0) {
                    throw corrupt("buffer slot '" + name + "' has byte size " + size);
                }
                if (slots.stream().anyMatch(slot -> slot.name().equals(name))) {
                    throw corrupt("buffer slot '" + name + "' is named twice");
                }
                slots.add(new Slot(name, size));
            }
            int eventCount = count("event slots", 4);
            List<String> events = new ArrayList<>(eventCount);
            for (int i = 0; i < eventCount; i++) {
                String name = string("event slot name");
                if (events.contains(name)) {
                    throw corrupt("event slot '" + name + "' is named twice");
                }
                events.add(name);
            }
            int nodeCount = count("nodes", 1);
            List<Node> nodes = new ArrayList<>(nodeCount);
            for (int i = 0; i < nodeCount; i++) {
                nodes.add(node(i, libraryCount, slots, eventCount));
            }
            int edgeCount = count("edges", 9);
            List<Edge> edges = new ArrayList<>(edgeCount);
            for (int i = 0; i < edgeCount; i++) {
                int from = index("edge source", nodeCount);
                int to = index("edge target", nodeCount);
                edges.add(new Edge(from, to, bool("edge kind")));
            }
            if (in.hasRemaining()) {
                throw corrupt(in.remaining() + " bytes follow the last record");
            }
            return new GraphArchive(version, major, minor, device, libraries, slots, events, nodes, edges);
        }

        private Node node(int id, int libraryCount, List<Slot> slots, int eventCount) {
            int kind = in.get();
            return switch (kind) {
                case 0 -> {
                    int library = index("library", libraryCount);
                    String symbol = string("kernel symbol");
                    int paramCount = count("kernel parameters", 16);
                    List<Param> params = new ArrayList<>(paramCount);
                    for (int p = 0; p < paramCount; p++) {
                        params.add(new Param(in.getLong(), in.getLong()));
                    }
                    Dim3 grid = dim("grid");
                    Dim3 block = dim("block");
                    int shared = in.getInt();
                    if (shared < 0) {
                        throw corrupt("node " + id + " has " + shared + " bytes of shared memory");
                    }
                    int argumentCount = count("kernel arguments", 10);
                    List<Argument> arguments = new ArrayList<>(argumentCount);
                    for (int a = 0; a < argumentCount; a++) {
                        int tag = in.get();
                        if (tag == 0) {
                            int slot = index("pointer slot", slots.size());
                            arguments.add(new Pointer(slot, offsetIn(slots.get(slot), in.getLong(), 0, id)));
                        } else if (tag == 1) {
                            int size = in.get();
                            if (size != 1 && size != 2 && size != 4 && size != 8) {
                                throw corrupt("node " + id + " has a " + size + "-byte scalar");
                            }
                            arguments.add(new Scalar(size, in.getLong()));
                        } else {
                            throw corrupt("node " + id + " has an argument of unknown kind " + tag);
                        }
                    }
                    yield new KernelNode(library, symbol, params, grid, block, shared, arguments);
                }
                case 1 -> {
                    int destination = index("memcpy destination slot", slots.size());
                    long destinationOffset = in.getLong();
                    int source = index("memcpy source slot", slots.size());
                    long sourceOffset = in.getLong();
                    long bytes = in.getLong();
                    offsetIn(slots.get(destination), destinationOffset, bytes, id);
                    offsetIn(slots.get(source), sourceOffset, bytes, id);
                    yield new CopyNode(destination, destinationOffset, source, sourceOffset, bytes);
                }
                case 2 -> {
                    int slot = index("memset slot", slots.size());
                    long offset = in.getLong();
                    long bytes = in.getLong();
                    offsetIn(slots.get(slot), offset, bytes, id);
                    yield new SetNode(slot, offset, bytes, Byte.toUnsignedInt(in.get()));
                }
                case 3 -> new EmptyNode();
                case 4, 5 -> new EventNode(kind == 4, index("event slot", eventCount));
                default -> throw corrupt("node " + id + " is of unknown kind " + kind);
            };
        }

        /** An offset into {@code slot} with {@code extent} bytes from it, all inside the slot's saved size. */
        private static long offsetIn(Slot slot, long offset, long extent, int id) {
            if (offset < 0 || extent < 0 || offset >= slot.byteSize() || extent > slot.byteSize() - offset) {
                throw corrupt("node " + id + " reaches bytes [" + offset + ", " + offset + " + " + extent
                        + ") of slot '" + slot.name() + "', which has " + slot.byteSize());
            }
            return offset;
        }

        private Dim3 dim(String what) {
            int x = in.getInt();
            int y = in.getInt();
            int z = in.getInt();
            if (x < 1 || y < 1 || z < 1) {
                throw corrupt("a " + what + " of " + x + "x" + y + "x" + z);
            }
            return Dim3.of(x, y, z);
        }

        private boolean bool(String what) {
            int value = in.get();
            if (value != 0 && value != 1) {
                throw corrupt(what + " byte " + value + " is neither 0 nor 1");
            }
            return value == 1;
        }

        private int count(String what, int minimumBytesEach) {
            int count = in.getInt();
            if (count < 0 || (long) count * minimumBytesEach > in.remaining()) {
                throw corrupt("it claims " + count + " " + what + " with " + in.remaining() + " bytes left");
            }
            return count;
        }

        private int index(String what, int size) {
            int index = in.getInt();
            if (index < 0 || index >= size) {
                throw corrupt(what + " index " + index + " is outside [0, " + size + ")");
            }
            return index;
        }

        private String string(String what) {
            int length = in.getInt();
            if (length < 0 || length > MAX_STRING_BYTES || length > in.remaining()) {
                throw corrupt("a " + what + " of " + length + " bytes");
            }
            ByteBuffer utf8 = in.slice(in.position(), length);
            in.position(in.position() + length);
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(utf8).toString();
            } catch (CharacterCodingException e) {
                throw corrupt("a " + what + " that is not UTF-8");
            }
        }
    }

    /** Turns a graph into an archive. */
    private static final class Saver {
        private final CudaGraph graph;
        private final GraphBindings bindings;
        private final Map<String, Integer> libraryIndex = new LinkedHashMap<>();
        private final List<Library> libraries = new ArrayList<>();
        private final Map<String, Integer> slotIndex = new LinkedHashMap<>();
        private final List<Slot> slots = new ArrayList<>();
        private final Map<String, Integer> eventIndex = new LinkedHashMap<>();

        Saver(CudaGraph graph, GraphBindings bindings) {
            this.graph = Objects.requireNonNull(graph, "graph");
            this.bindings = Objects.requireNonNull(bindings, "bindings");
        }

        GraphArchive save() {
            List<GraphNode> graphNodes = graph.nodes();
            List<Node> nodes = new ArrayList<>(graphNodes.size());
            for (GraphNode node : graphNodes) {
                nodes.add(node(node));
            }
            Map<GraphNode, Integer> ids = new HashMap<>();
            for (int i = 0; i < graphNodes.size(); i++) {
                ids.put(graphNodes.get(i), i);
            }
            List<Edge> edges = graph.edges().stream()
                    .map(e -> new Edge(ids.get(e.from()), ids.get(e.to()), e.programmatic())).toList();
            CudaDevice device = deviceOf(bindings);
            DeviceProperties properties = device.properties();
            return new GraphArchive(Cuda.libraryVersion(), properties.major(), properties.minor(), properties.name(),
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
                    Reason.UNSUPPORTED, node + " is a kernel node whose launch this library did not record (it was "
                    + "captured from a launch made outside cudagraph4j, or a cluster or cooperative launch, which a "
                    + "KernelLaunch does not describe)"));
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
                    params.grid(), params.block(), params.sharedMemBytes(), arguments);
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

    /** Checks an archive against libraries and bindings, then builds its graph. */
    private static final class Builder {
        private final GraphArchive archive;
        private final List<CudaLibrary> given;
        private final GraphBindings bindings;

        Builder(GraphArchive archive, List<CudaLibrary> given, GraphBindings bindings) {
            this.archive = archive;
            this.given = List.copyOf(Objects.requireNonNull(given, "libraries"));
            this.bindings = Objects.requireNonNull(bindings, "bindings");
        }

        CudaGraph build() {
            CudaDevice device = deviceOf(bindings);
            DeviceProperties here = device.properties();
            if (here.major() != archive.major || here.minor() != archive.minor) {
                throw new GraphArchiveException(Reason.ARCHITECTURE, "the archive was saved on " + archive.deviceName
                        + " (sm_" + archive.computeCapability() + "), but this is " + here.name() + " (sm_"
                        + (here.major() * 10 + here.minor()) + ")");
            }
            device.makeCurrent(); // kernel nodes go onto the calling thread's current device
            List<CudaLibrary> libraries = libraries();
            List<DeviceBuffer> slots = slots();
            List<CudaEvent> events = events();
            List<CudaKernel> kernels = kernels(libraries);
            int[] order = topologicalOrder();

            List<List<Integer>> before = new ArrayList<>(archive.nodes.size());
            for (int id = 0; id < archive.nodes.size(); id++) {
                before.add(new ArrayList<>(1));
            }
            for (Edge edge : archive.edges) {
                if (!edge.programmatic()) {
                    before.get(edge.to()).add(edge.from());
                }
            }
            CudaGraph graph = CudaGraph.create();
            try {
                GraphNode[] built = new GraphNode[archive.nodes.size()];
                for (int id : order) {
                    GraphNode[] dependencies = before.get(id).stream().map(from -> built[from])
                            .toArray(GraphNode[]::new);
                    built[id] = add(graph, archive.nodes.get(id), kernels.get(id), slots, events, dependencies);
                }
                for (Edge edge : archive.edges) {
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
                    yield graph.addKernel(KernelLaunch.of(kernel, k.grid(), k.block(), k.sharedMemBytes(),
                            arguments), dependencies);
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
            List<CudaLibrary> matched = new ArrayList<>(archive.libraries.size());
            for (Library library : archive.libraries) {
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
            List<CudaKernel> kernels = new ArrayList<>(archive.nodes.size());
            // Each library's names and each kernel's layout are asked of the runtime once, not per node.
            Map<Integer, Set<String>> names = new HashMap<>();
            Map<String, List<Param>> layouts = new HashMap<>();
            for (int id = 0; id < archive.nodes.size(); id++) {
                if (!(archive.nodes.get(id) instanceof KernelNode node)) {
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
            List<DeviceBuffer> bound = new ArrayList<>(archive.buffers.size());
            for (Slot slot : archive.buffers) {
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
            List<CudaEvent> bound = new ArrayList<>(archive.events.size());
            for (String name : archive.events) {
                CudaEvent event = bindings.events().get(name);
                if (event == null) {
                    throw new GraphArchiveException(Reason.SLOT_MISSING, "event slot '" + name + "' is not bound; "
                            + "bound: " + bindings.events().keySet());
                }
                bound.add(event);
            }
            return bound;
        }

        /** Node ids so that each comes after its dependencies; refuses a cycle. */
        private int[] topologicalOrder() {
            int count = archive.nodes.size();
            int[] pending = new int[count];
            List<List<Integer>> successors = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                successors.add(new ArrayList<>());
            }
            for (Edge edge : archive.edges) {
                if (edge.from() == edge.to()) {
                    throw corrupt("node " + edge.from() + " depends on itself");
                }
                successors.get(edge.from()).add(edge.to());
                pending[edge.to()]++;
            }
            int[] order = new int[count];
            int filled = 0;
            for (int i = 0; i < count; i++) {
                if (pending[i] == 0) {
                    order[filled++] = i;
                }
            }
            for (int next = 0; next < filled; next++) {
                for (int successor : successors.get(order[next])) {
                    if (--pending[successor] == 0) {
                        order[filled++] = successor;
                    }
                }
            }
            if (filled != count) {
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
}
