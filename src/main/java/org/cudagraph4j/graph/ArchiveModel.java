package org.cudagraph4j.graph;

import java.util.List;
import org.cudagraph4j.Dim3;

/**
 * What a {@link GraphArchive} holds, as plain values: no pointer, handle or library object, so that
 * it means the same in the process that reads it as in the one that saved it. Slots, libraries,
 * event slots and nodes are referred to by their index in these lists.
 *
 * @param libraryVersion the version of cudagraph4j that saved it
 * @param major the compute capability's major number of the GPU it was saved on
 * @param minor its minor number
 * @param deviceName the name of that GPU
 * @param libraries the libraries its kernels come from
 * @param buffers the buffer slots, in order of first use
 * @param events the event slots' names, in order of first use
 * @param nodes the nodes, in the saved graph's node order
 * @param edges the dependencies between node indices
 */
record ArchiveModel(String libraryVersion, int major, int minor, String deviceName, List<Library> libraries,
        List<Slot> buffers, List<String> events, List<Node> nodes, List<Edge> edges) {
    ArchiveModel {
        libraries = List.copyOf(libraries);
        buffers = List.copyOf(buffers);
        events = List.copyOf(events);
        nodes = List.copyOf(nodes);
        edges = List.copyOf(edges);
    }

    /** {@return the compute capability it was saved on, as major * 10 + minor} */
    int computeCapability() {
        return major * 10 + minor;
    }

    /** A library, by the hash a loading process matches it on; the name is only for messages. */
    record Library(String hash, String name) {}

    /** A buffer slot: a name to bind, and the byte size a bound buffer must at least have. */
    record Slot(String name, long byteSize) {}

    /** One kernel parameter's place in the argument block, checked against the kernel at load. */
    record Param(long offset, long size) {}

    /** A kernel argument. */
    sealed interface Argument permits Pointer, Scalar {}

    /** A pointer as a byte offset into a slot, never as an address, which would mean nothing elsewhere. */
    record Pointer(int slot, long offset) implements Argument {}

    /** A scalar of 1, 2, 4 or 8 bytes, by value (its raw bits, for a float or a double). */
    record Scalar(int size, long bits) implements Argument {}

    /** A node of a kind the archive holds. */
    sealed interface Node permits KernelNode, CopyNode, SetNode, EmptyNode, EventNode {}

    record KernelNode(int library, String symbol, List<Param> params, Dim3 grid, Dim3 block, int sharedMemBytes,
            List<Argument> arguments) implements Node {}

    record CopyNode(int destinationSlot, long destinationOffset, int sourceSlot, long sourceOffset, long byteSize)
            implements Node {}

    record SetNode(int slot, long offset, long byteSize, int value) implements Node {}

    record EmptyNode() implements Node {}

    /** An event record node ({@code record} true) or an event wait node, on an event slot. */
    record EventNode(boolean record, int event) implements Node {}

    /**
     * {@code to} runs after {@code from}: once it ends, or for a programmatic edge once it allows
     * ({@link CudaGraph#addProgrammaticDependency}).
     */
    record Edge(int from, int to, boolean programmatic) {}
}
