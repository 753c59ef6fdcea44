package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.graph.ArchiveModel.CopyNode;
import org.cudagraph4j.graph.ArchiveModel.Edge;
import org.cudagraph4j.graph.ArchiveModel.EmptyNode;
import org.cudagraph4j.graph.ArchiveModel.EventNode;
import org.cudagraph4j.graph.ArchiveModel.KernelNode;
import org.cudagraph4j.graph.ArchiveModel.Library;
import org.cudagraph4j.graph.ArchiveModel.Param;
import org.cudagraph4j.graph.ArchiveModel.Pointer;
import org.cudagraph4j.graph.ArchiveModel.Scalar;
import org.cudagraph4j.graph.ArchiveModel.SetNode;
import org.cudagraph4j.graph.ArchiveModel.Slot;
import org.cudagraph4j.graph.GraphArchiveException.Reason;
import org.junit.jupiter.api.Test;

/** The archive format without a GPU: it round-trips, and bad bytes are a CORRUPT error, never anything else. */
class GraphArchiveFormatTest {
    private static final int DIGEST = 32;

    /**
     * {@link #sample()} as format version 1 lays it out, field by field (big-endian; a string is its
     * byte length, then UTF-8). Pinned, so that no change to the writer or the reader moves the format
     * unnoticed: an archive saved by one release must load in the next.
     */
    private static final String SAMPLE_BYTES = """
            4347344a47524146 00000001          # signature CG4JGRAF, format version 1
            00000005 302e312e30                # library version "0.1.0"
            00000009 00000000                  # compute capability 9.0
            0000000b 4e56494449412048323030    # device name "NVIDIA H200"
            00000001                           # 1 library:
            00000040                           # its hash, "ab" x 32,
            61626162616261626162616261626162
            61626162616261626162616261626162
            61626162616261626162616261626162
            61626162616261626162616261626162
            0000000b 746573742e66617462696e    # and its name "test.fatbin"
            00000002                           # 2 buffer slots:
            00000001 78 0000000000001000       # "x", 4096 bytes
            00000001 79 0000000000002000       # "y", 8192 bytes
            00000001 00000004 646f6e65         # 1 event slot, "done"
            00000006                           # 6 nodes:
            00 00000000 00000005 7361787079    # kernel 0: library 0, symbol "saxpy",
            00000004                           # 4 parameters (offset, size),
            0000000000000000 0000000000000004
            0000000000000004 0000000000000004
            0000000000000008 0000000000000008
            0000000000000010 0000000000000008
            00000004 00000002 00000001         # grid 4x2x1,
            00000100 00000001 00000001         # block 256x1x1,
            00000080                           # 128 bytes of shared memory,
            00000004                           # 4 arguments:
            01 04 0000000000000400             # scalar, 4 bytes, 1024
            01 04 0000000040000000             # scalar, 4 bytes, 2.0f
            00 00000000 0000000000000000       # pointer, slot 0, offset 0
            00 00000001 0000000000000080       # pointer, slot 1, offset 128
            01 00000001 0000000000000000       # memcpy 1: to slot 1 @ 0,
            00000000 0000000000000000          # from slot 0 @ 0,
            0000000000001000                   # 4096 bytes
            02 00000000 0000000000000010       # memset 2: slot 0 @ 16,
            0000000000000040 ab                # 64 bytes of 0xAB
            03                                 # empty 3
            04 00000000                        # event record 4, slot 0
            05 00000000                        # event wait 5, slot 0
            00000006                           # 6 edges (from, to, programmatic):
            00000000 00000001 00
            00000001 00000002 00
            00000002 00000003 00
            00000003 00000004 00
            00000000 00000003 01
            00000004 00000005 00
            086a08d382d3637db180df81656314a5   # SHA-256 of all the above
            445a161c2637e3b5452b79198dcb3d6a
            """;

    static GraphArchive sample() {
        List<Slot> slots = List.of(new Slot("x", 4096), new Slot("y", 8192));
        KernelNode saxpy = new KernelNode(0, "saxpy", List.of(new Param(0, 4), new Param(4, 4), new Param(8, 8),
                new Param(16, 8)), Dim3.of(4, 2, 1), Dim3.of(256), 128, List.of(new Scalar(4, 1024),
                new Scalar(4, Float.floatToRawIntBits(2f)), new Pointer(0, 0), new Pointer(1, 128)));
        return new GraphArchive(new ArchiveModel("0.1.0", 9, 0, "NVIDIA H200",
                List.of(new Library("ab".repeat(32), "test.fatbin")), slots, List.of("done"),
                List.of(saxpy, new CopyNode(1, 0, 0, 0, 4096), new SetNode(0, 16, 64, 0xAB), new EmptyNode(),
                        new EventNode(true, 0), new EventNode(false, 0)),
                List.of(new Edge(0, 1, false), new Edge(1, 2, false), new Edge(2, 3, false), new Edge(3, 4, false),
                        new Edge(0, 3, true), new Edge(4, 5, false))));
    }

    @Test
    void anArchiveRoundTripsByteForByte() {
        byte[] bytes = sample().toBytes();
        GraphArchive back = GraphArchive.fromBytes(bytes);
        assertArrayEquals(bytes, back.toBytes());
        assertEquals(90, back.computeCapability());
        assertEquals("NVIDIA H200", back.deviceName());
        assertEquals("0.1.0", back.libraryVersion());
        assertEquals(List.of("ab".repeat(32)), back.libraryHashes());
        Map<String, Long> slots = new LinkedHashMap<>();
        slots.put("x", 4096L);
        slots.put("y", 8192L);
        assertEquals(slots, back.bufferSlots());
        assertEquals(List.of("done"), back.eventSlots());
        assertEquals(6, back.nodeCount());
        assertEquals(sample().nodes(), back.nodes());
        assertEquals(sample().edges(), back.edges());
        assertTrue(new String(bytes, 0, 8, StandardCharsets.US_ASCII).equals("CG4JGRAF"));
    }

    @Test
    void theSampleIsWrittenAndReadAsFormatVersion1LaysItOut() {
        byte[] expected = HexFormat.of().parseHex(SAMPLE_BYTES.replaceAll("#.*", "").replaceAll("\\s", ""));
        assertEquals(HexFormat.of().formatHex(expected), HexFormat.of().formatHex(sample().toBytes()));
        GraphArchive read = GraphArchive.fromBytes(expected);
        assertEquals(sample().nodes(), read.nodes());
        assertEquals(sample().edges(), read.edges());
        assertEquals(sample().toString(), read.toString());
    }

    @Test
    void whatIsNotAWholeArchiveOfThisVersionIsNamed() {
        byte[] bytes = sample().toBytes();
        assertRefused(Reason.CORRUPT, "not a valid graph archive: it does not start with the graph archive signature "
                + "CG4JGRAF", "PK\u0003\u0004 a zip file".getBytes(StandardCharsets.ISO_8859_1));
        assertRefused(Reason.CORRUPT, "not a valid graph archive: it does not start with the graph archive signature "
                + "CG4JGRAF", new byte[0]);
        byte[] later = bytes.clone();
        ByteBuffer.wrap(later).putInt(8, 2);
        assertRefused(Reason.FORMAT_VERSION, "graph archive format version 2 is not one this library reads (it reads 1)",
                later);
        byte[] flipped = bytes.clone();
        flipped[40] ^= 0x10;
        assertRefused(Reason.CORRUPT, "not a valid graph archive: its SHA-256 does not match its contents: the archive "
                + "is truncated or corrupted", flipped);
        assertRefused(Reason.CORRUPT, "not a valid graph archive: its SHA-256 does not match its contents: the archive "
                + "is truncated or corrupted", Arrays.copyOf(bytes, bytes.length - 1));
        // Past the digest, the structure is checked too: a copy that reaches past its slot.
        GraphArchive outside = new GraphArchive(new ArchiveModel("0.1.0", 9, 0, "g", List.of(),
                List.of(new Slot("x", 64)), List.of(), List.of(new CopyNode(0, 32, 0, 0, 64)), List.of()));
        assertRefused(Reason.CORRUPT, "not a valid graph archive: node 0 reaches bytes [32, 32 + 64) of slot 'x', "
                + "which has 64", outside.toBytes());
    }

    @Test
    void mutatedArchivesWithAValidDigestAreRefusedOrStayInsideTheirSlots() {
        byte[] original = sample().toBytes();
        SplittableRandom random = new SplittableRandom(20_261_129L);
        int parsed = 0;
        int refused = 0;
        for (int i = 0; i < 3000; i++) {
            byte[] content = Arrays.copyOf(original, original.length - DIGEST);
            switch (i % 3) {
                case 0 -> content = Arrays.copyOf(content, 12 + random.nextInt(content.length - 12));
                case 1 -> {
                    for (int flips = 1 + random.nextInt(8); flips > 0; flips--) {
                        int bit = 96 + random.nextInt((content.length - 12) * 8);
                        content[bit / 8] ^= (byte) (1 << (bit % 8));
                    }
                }
                default -> {
                    int at = 12 + random.nextInt(content.length - 16);
                    int[] extremes = {-1, 0, 1, Integer.MAX_VALUE, Integer.MIN_VALUE, 1 << 20, 0x7F7F7F7F};
                    ByteBuffer.wrap(content).putInt(at, extremes[random.nextInt(extremes.length)]);
                }
            }
            byte[] mutated = withDigest(content);
            try {
                GraphArchive archive = GraphArchive.fromBytes(mutated);
                parsed++;
                assertStaysInsideItsSlots(archive, i);
            } catch (GraphArchiveException e) {
                refused++;
                assertTrue(e.reason() == Reason.CORRUPT || e.reason() == Reason.FORMAT_VERSION, e.getMessage());
            } catch (RuntimeException e) {
                fail("mutation " + i + " escaped as " + e, e);
            }
        }
        assertEquals(3000, parsed + refused);
        assertTrue(refused > 1000, "most mutations are refused: " + refused);
    }

    private static void assertStaysInsideItsSlots(GraphArchive archive, int mutation) {
        List<Long> sizes = List.copyOf(archive.bufferSlots().values());
        for (ArchiveModel.Node node : archive.nodes()) {
            switch (node) {
                case KernelNode kernel -> kernel.arguments().forEach(argument -> {
                    if (argument instanceof Pointer pointer) {
                        assertTrue(pointer.offset() >= 0 && pointer.offset() < sizes.get(pointer.slot()),
                                "mutation " + mutation);
                    }
                });
                case CopyNode copy -> {
                    assertTrue(copy.destinationOffset() + copy.byteSize() <= sizes.get(copy.destinationSlot()));
                    assertTrue(copy.sourceOffset() + copy.byteSize() <= sizes.get(copy.sourceSlot()));
                }
                case SetNode set -> assertTrue(set.offset() + set.byteSize() <= sizes.get(set.slot()));
                default -> { }
            }
        }
    }

    private static byte[] withDigest(byte[] content) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(content);
            byte[] archive = Arrays.copyOf(content, content.length + DIGEST);
            System.arraycopy(digest, 0, archive, content.length, DIGEST);
            return archive;
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static void assertRefused(Reason reason, String message, byte[] bytes) {
        GraphArchiveException e = assertThrows(GraphArchiveException.class, () -> GraphArchive.fromBytes(bytes));
        assertEquals(reason, e.reason());
        assertEquals(message, e.getMessage());
    }
}
