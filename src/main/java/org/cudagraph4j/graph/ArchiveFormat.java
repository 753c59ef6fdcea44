package org.cudagraph4j.graph;

import static org.cudagraph4j.graph.GraphArchiveException.corrupt;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.cudagraph4j.Dim3;
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

/**
 * The bytes of {@link GraphArchive}'s format, whose layout and compatibility promise it documents:
 * each record's writer and reader side by side, so that they cannot drift apart. The reader is
 * strict: every count and index is checked against what can follow or what exists, so that bytes
 * with a valid digest but contradictory records are {@link Reason#CORRUPT}, never another exception
 * or a pointer outside its slot.
 */
final class ArchiveFormat {
    private static final byte[] MAGIC = "CG4JGRAF".getBytes(StandardCharsets.US_ASCII);
    private static final int DIGEST_BYTES = 32;
    private static final int MAX_STRING_BYTES = 1 << 16;

    // The tag bytes are part of the format: renumbering one would misread every archive saved before.
    private static final byte KERNEL = 0;
    private static final byte MEMCPY = 1;
    private static final byte MEMSET = 2;
    private static final byte EMPTY = 3;
    private static final byte EVENT_RECORD = 4;
    private static final byte EVENT_WAIT = 5;
    private static final byte POINTER = 0;
    private static final byte SCALAR = 1;

    private final ByteBuffer in;

    private ArchiveFormat(ByteBuffer in) {
        this.in = in;
    }

    /** {@return {@code archive} in the format, ending with its digest} */
    static byte[] write(ArchiveModel archive) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.write(MAGIC);
            out.writeInt(GraphArchive.FORMAT_VERSION);
            writeString(out, archive.libraryVersion());
            out.writeInt(archive.major());
            out.writeInt(archive.minor());
            writeString(out, archive.deviceName());
            out.writeInt(archive.libraries().size());
            for (Library library : archive.libraries()) {
                writeString(out, library.hash());
                writeString(out, library.name());
            }
            out.writeInt(archive.buffers().size());
            for (Slot slot : archive.buffers()) {
                writeString(out, slot.name());
                out.writeLong(slot.byteSize());
            }
            out.writeInt(archive.events().size());
            for (String event : archive.events()) {
                writeString(out, event);
            }
            out.writeInt(archive.nodes().size());
            for (Node node : archive.nodes()) {
                writeNode(out, node);
            }
            out.writeInt(archive.edges().size());
            for (Edge edge : archive.edges()) {
                out.writeInt(edge.from());
                out.writeInt(edge.to());
                out.writeBoolean(edge.programmatic());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        byte[] content = bytes.toByteArray();
        byte[] archiveBytes = Arrays.copyOf(content, content.length + DIGEST_BYTES);
        System.arraycopy(sha256(content, content.length), 0, archiveBytes, content.length, DIGEST_BYTES);
        return archiveBytes;
    }

    /**
     * Reads what {@link #write} wrote, checking the signature, then the version, then the digest,
     * then every record.
     *
     * @throws GraphArchiveException {@link Reason#CORRUPT} or {@link Reason#FORMAT_VERSION}
     */
    static ArchiveModel read(byte[] archive) {
        if (archive.length < MAGIC.length + Integer.BYTES + DIGEST_BYTES
                || !Arrays.equals(archive, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw corrupt("it does not start with the graph archive signature CG4JGRAF");
        }
        int version = ByteBuffer.wrap(archive, MAGIC.length, Integer.BYTES).getInt();
        if (version != GraphArchive.FORMAT_VERSION) {
            throw new GraphArchiveException(Reason.FORMAT_VERSION, "graph archive format version " + version
                    + " is not one this library reads (it reads " + GraphArchive.FORMAT_VERSION + ")");
        }
        int contentLength = archive.length - DIGEST_BYTES;
        if (!MessageDigest.isEqual(sha256(archive, contentLength),
                Arrays.copyOfRange(archive, contentLength, archive.length))) {
            throw corrupt("its SHA-256 does not match its contents: the archive is truncated or corrupted");
        }
        try {
            return new ArchiveFormat(ByteBuffer.wrap(archive, MAGIC.length + Integer.BYTES,
                    contentLength - MAGIC.length - Integer.BYTES)).body();
        } catch (BufferUnderflowException e) {
            throw corrupt("it ends in the middle of a record");
        }
    }

    /** The records between the version and the digest, in {@link #write}'s order. */
    private ArchiveModel body() {
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
        return new ArchiveModel(version, major, minor, device, libraries, slots, events, nodes, edges);
    }

    private static void writeNode(DataOutputStream out, Node node) throws IOException {
        switch (node) {
            case KernelNode kernel -> {
                out.writeByte(KERNEL);
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
                            out.writeByte(POINTER);
                            out.writeInt(pointer.slot());
                            out.writeLong(pointer.offset());
                        }
                        case Scalar scalar -> {
                            out.writeByte(SCALAR);
                            out.writeByte(scalar.size());
                            out.writeLong(scalar.bits());
                        }
                    }
                }
            }
            case CopyNode copy -> {
                out.writeByte(MEMCPY);
                out.writeInt(copy.destinationSlot());
                out.writeLong(copy.destinationOffset());
                out.writeInt(copy.sourceSlot());
                out.writeLong(copy.sourceOffset());
                out.writeLong(copy.byteSize());
            }
            case SetNode set -> {
                out.writeByte(MEMSET);
                out.writeInt(set.slot());
                out.writeLong(set.offset());
                out.writeLong(set.byteSize());
                out.writeByte(set.value());
            }
            case EmptyNode _ -> out.writeByte(EMPTY);
            case EventNode event -> {
                out.writeByte(event.record() ? EVENT_RECORD : EVENT_WAIT);
                out.writeInt(event.event());
            }
        }
    }

    private Node node(int id, int libraryCount, List<Slot> slots, int eventCount) {
        int kind = in.get();
        return switch (kind) {
            case KERNEL -> {
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
                    if (tag == POINTER) {
                        int slot = index("pointer slot", slots.size());
                        arguments.add(new Pointer(slot, offsetIn(slots.get(slot), in.getLong(), 0, id)));
                    } else if (tag == SCALAR) {
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
            case MEMCPY -> {
                int destination = index("memcpy destination slot", slots.size());
                long destinationOffset = in.getLong();
                int source = index("memcpy source slot", slots.size());
                long sourceOffset = in.getLong();
                long bytes = in.getLong();
                offsetIn(slots.get(destination), destinationOffset, bytes, id);
                offsetIn(slots.get(source), sourceOffset, bytes, id);
                yield new CopyNode(destination, destinationOffset, source, sourceOffset, bytes);
            }
            case MEMSET -> {
                int slot = index("memset slot", slots.size());
                long offset = in.getLong();
                long bytes = in.getLong();
                offsetIn(slots.get(slot), offset, bytes, id);
                yield new SetNode(slot, offset, bytes, Byte.toUnsignedInt(in.get()));
            }
            case EMPTY -> new EmptyNode();
            case EVENT_RECORD, EVENT_WAIT -> new EventNode(kind == EVENT_RECORD, index("event slot", eventCount));
            default -> throw corrupt("node " + id + " is of unknown kind " + kind);
        };
    }

    private static void writeString(DataOutputStream out, String text) throws IOException {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
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

    private static byte[] sha256(byte[] bytes, int length) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(bytes, 0, length);
            return digest.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
