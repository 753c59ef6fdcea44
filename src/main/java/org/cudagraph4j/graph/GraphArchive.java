package org.cudagraph4j.graph;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.graph.ArchiveModel.Edge;
import org.cudagraph4j.graph.ArchiveModel.Library;
import org.cudagraph4j.graph.ArchiveModel.Node;
import org.cudagraph4j.graph.GraphArchiveException.Reason;

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

    private final ArchiveModel model;

    GraphArchive(ArchiveModel model) {
        this.model = model;
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
        return new GraphArchive(ArchiveSaver.save(graph, bindings));
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
        return ArchiveFormat.write(model);
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
        return new GraphArchive(ArchiveFormat.read(archive));
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
        return ArchiveBuilder.build(model, libraries, bindings);
    }

    // ---------------------------------------------------------------------------------------------
    // What it holds
    // ---------------------------------------------------------------------------------------------

    /** {@return the version of cudagraph4j that saved it} */
    public String libraryVersion() {
        return model.libraryVersion();
    }

    /** {@return the compute capability it was saved on, as major * 10 + minor, e.g. 90} */
    public int computeCapability() {
        return model.computeCapability();
    }

    /** {@return the name of the GPU it was saved on} */
    public String deviceName() {
        return model.deviceName();
    }

    /** {@return the content hashes of the libraries its kernels come from} */
    public List<String> libraryHashes() {
        return model.libraries().stream().map(Library::hash).toList();
    }

    /** {@return the buffer slots its nodes use, with each one's byte size at save, in order of first use} */
    public Map<String, Long> bufferSlots() {
        Map<String, Long> slots = new LinkedHashMap<>();
        model.buffers().forEach(slot -> slots.put(slot.name(), slot.byteSize()));
        return slots;
    }

    /** {@return the event slots its event nodes use} */
    public List<String> eventSlots() {
        return model.events();
    }

    /** {@return the number of nodes} */
    public int nodeCount() {
        return model.nodes().size();
    }

    List<Node> nodes() {
        return model.nodes();
    }

    List<Edge> edges() {
        return model.edges();
    }

    @Override
    public String toString() {
        return String.format("GraphArchive v%d: %d nodes, %d edges, saved by cudagraph4j %s on %s (sm_%d)",
                FORMAT_VERSION, nodeCount(), model.edges().size(), libraryVersion(), deviceName(),
                computeCapability());
    }
}
