package org.cudagraph4j.internal.image;

import static org.cudagraph4j.ImageMutations.resource;
import static org.cudagraph4j.ImageMutations.shippedImages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.cudagraph4j.ImageMutations;
import org.cudagraph4j.ImageMutations.Mutation;
import org.cudagraph4j.LongRunning;
import org.cudagraph4j.internal.image.ImageValidator.Kind;
import org.junit.jupiter.api.Test;

class ImageValidatorTest {
    private static final String KERNELS = "org/cudagraph4j/kernels/";
    private static final String TEST_FATBIN = "org/cudagraph4j/test_kernels.fatbin";
    private static final long SEED = 20_251_129L;
    private static final int MUTATIONS_PER_IMAGE = 1500;

    @Test
    void everyShippedImagePasses() {
        List<String> images = shippedImages();
        // The four cubins and the kernels' PTX, the conditional kernels' PTX and the test fatbin.
        assertTrue(images.size() >= 7, images.toString());
        for (String name : images) {
            Kind expected = name.endsWith(".ptx") ? Kind.PTX : name.endsWith(".cubin") ? Kind.CUBIN : Kind.FATBIN;
            assertEquals(expected, ImageValidator.validate(name, resource(name)), name);
        }
    }

    /**
     * Every corruption is either accepted or rejected with the documented exception; nothing else
     * escapes (no IndexOutOfBoundsException or ArithmeticException), and nothing loops. A cubin's
     * header tables and a fatbin's entries reach its last byte, so every truncation of those is
     * rejected.
     */
    @Test
    @LongRunning // 18,000 mutations: 26 s under mvn test on two cores
    void mutationsAreRejectedCleanlyOrAccepted() {
        List<String> failures = new ArrayList<>();
        for (String name : shippedImages()) {
            List<Mutation> mutations = ImageMutations.of(name, resource(name), SEED, MUTATIONS_PER_IMAGE);
            boolean truncationsMustFail = !name.endsWith(".ptx");
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                for (Mutation mutation : mutations) {
                    try {
                        ImageValidator.validate(name, mutation.bytes());
                        if (truncationsMustFail && mutation.description().contains(": truncated to ")) {
                            failures.add(mutation.description() + ": accepted");
                        }
                    } catch (IllegalArgumentException e) {
                        if (!e.getMessage().startsWith("library image " + name + " ")) {
                            failures.add(mutation.description() + ": message " + e.getMessage());
                        }
                    } catch (RuntimeException e) {
                        failures.add(mutation.description() + ": " + e);
                    }
                }
            }, name);
        }
        assertEquals(List.of(), failures.subList(0, Math.min(20, failures.size())), failures.size() + " failures");
    }

    @Test
    void emptyImage() {
        assertRejected("library image empty is empty", "empty", new byte[0]);
    }

    @Test
    void randomBytesAreNoKnownFormat() {
        byte[] image = new byte[4096];
        new SplittableRandom(SEED).nextBytes(image);
        assertRejected(String.format("library image noise is not a cubin, fatbin or PTX image (it starts with "
                + "0x%02x 0x%02x 0x%02x 0x%02x)", image[0], image[1], image[2], image[3]), "noise", image);
    }

    @Test
    void cubinTruncatedToHalf() {
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        byte[] half = Arrays.copyOf(cubin, cubin.length / 2);
        Elf elf = new Elf(cubin);
        assertRejected("library image half.cubin is not a valid cubin: program header table [" + elf.phoff() + ", "
                + (elf.phoff() + 56L * elf.phnum()) + ") extends past the end of the " + half.length + "-byte image",
                "half.cubin", half);
    }

    @Test
    void sectionHeaderTablePastTheEnd() {
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        Elf elf = new Elf(cubin);
        le(cubin).putLong(0x28, cubin.length);
        assertRejected("library image foo.cubin is not a valid cubin: section header table [" + cubin.length + ", "
                + (cubin.length + 64L * elf.shnum()) + ") extends past the end of the " + cubin.length + "-byte image",
                "foo.cubin", cubin);
    }

    @Test
    void aFatbinAsNvccWritesItByDefaultIsDecompressedAndRebuilt() {
        // The test fatbin as nvcc 13 writes it by default: its PTX entry is zstd-compressed.
        byte[] fatbin = resource("org/cudagraph4j/internal/image/compressed_ptx_entry.fatbin");
        byte[] rebuilt = ImageValidator.prepare("default.fatbin", fatbin);
        assertTrue(rebuilt.length > fatbin.length, "the PTX entry is stored uncompressed");
        assertEquals(Kind.FATBIN, ImageValidator.validate("rebuilt.fatbin", rebuilt));
        assertSame(rebuilt, ImageValidator.prepare("rebuilt.fatbin", rebuilt), "nothing left to decompress");
    }

    @Test
    void infoOfTheNvInfoSectionNamingNoSection() {
        // Crashed the driver in the H200 fuzz run (sm_90 cubin, .nv.info sh_info = -1).
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        Elf elf = new Elf(cubin);
        int nvInfo = elf.section(".nv.info");
        le(cubin).putInt(elf.header(nvInfo) + 44, -1);
        assertRejected("library image foo.cubin is not a valid cubin: section " + nvInfo + " (.nv.info): sh_info"
                + " 4294967295 names no section (there are " + elf.shnum() + ")", "foo.cubin", cubin);
    }

    @Test
    void hugeSectionCount() {
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        Elf elf = new Elf(cubin);
        le(cubin).putShort(0x3c, (short) 0xffff);
        assertRejected("library image foo.cubin is not a valid cubin: section header table [" + elf.shoff() + ", "
                + (elf.shoff() + 64L * 0xffff) + ") extends past the end of the " + cubin.length + "-byte image",
                "foo.cubin", cubin);
    }

    @Test
    void sectionPastTheEnd() {
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        Elf elf = new Elf(cubin);
        int symtab = elf.section(".symtab");
        long size = le(cubin).getLong(elf.header(symtab) + 32);
        le(cubin).putLong(elf.header(symtab) + 24, 1L << 63);
        BigInteger start = BigInteger.ONE.shiftLeft(63);
        assertRejected("library image foo.cubin is not a valid cubin: section " + symtab + " (.symtab) [" + start + ", "
                + start.add(BigInteger.valueOf(size)) + ") extends past the end of the " + cubin.length + "-byte image",
                "foo.cubin", cubin);
    }

    @Test
    void symbolTableWithTheWrongEntrySize() {
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        Elf elf = new Elf(cubin);
        int symtab = elf.section(".symtab");
        le(cubin).putLong(elf.header(symtab) + 56, 16);
        assertRejected("library image foo.cubin is not a valid cubin: section " + symtab
                + " (.symtab): sh_entsize is 16, not 24", "foo.cubin", cubin);
    }

    @Test
    void nvInfoRecordPastItsSection() {
        byte[] cubin = resource(KERNELS + "cg4j_kernels.sm_90.cubin");
        Elf elf = new Elf(cubin);
        int info = elf.section(".nv.info");
        ByteBuffer bytes = le(cubin);
        long offset = bytes.getLong(elf.header(info) + 24);
        long size = bytes.getLong(elf.header(info) + 32);
        bytes.put((int) offset, (byte) 4).putShort((int) offset + 2, (short) 0xfff0);
        assertRejected(String.format("library image foo.cubin is not a valid cubin: section %d (.nv.info): the EIATTR "
                + "record at offset 0 (format 0x04, attribute 0x%02x) needs %d bytes but only %d remain", info,
                cubin[(int) offset + 1], 4 + 0xfff0, size), "foo.cubin", cubin);
        bytes.put((int) offset, (byte) 7);
        assertRejected(String.format("library image foo.cubin is not a valid cubin: section %d (.nv.info): the EIATTR "
                + "record at offset 0 (attribute 0x%02x) has unknown format 0x07", info, cubin[(int) offset + 1]),
                "foo.cubin", cubin);
    }

    @Test
    void fatbinWithABadMagicIsNoKnownFormat() {
        byte[] fatbin = resource(TEST_FATBIN);
        fatbin[0] ^= 1;
        assertRejected("library image x.fatbin is not a cubin, fatbin or PTX image (it starts with 0x51 0xed 0x55 "
                + "0xba)", "x.fatbin", fatbin);
    }

    @Test
    void fatbinWithAnUnknownVersion() {
        byte[] fatbin = resource(TEST_FATBIN);
        le(fatbin).putShort(4, (short) 2);
        assertRejected("library image x.fatbin is not a valid fatbin: the version is 2, not FATBIN_VERSION (1)",
                "x.fatbin", fatbin);
    }

    @Test
    void fatbinEntriesPastTheEnd() {
        byte[] fatbin = resource(TEST_FATBIN);
        le(fatbin).putLong(8, fatbin.length);
        assertRejected("library image x.fatbin is not a valid fatbin: its entries [16, " + (fatbin.length + 16)
                + ") (fatSize " + fatbin.length + ") extend past the end of the " + fatbin.length + "-byte image",
                "x.fatbin", fatbin);
    }

    @Test
    void fatbinEntryPayloadPastTheEnd() {
        byte[] fatbin = resource(TEST_FATBIN);
        ByteBuffer bytes = le(fatbin);
        long headerSize = Integer.toUnsignedLong(bytes.getInt(16 + 4));
        bytes.putLong(16 + 8, fatbin.length);
        long payload = 16 + headerSize;
        assertRejected("library image x.fatbin is not a valid fatbin: entry 0 at offset 16: its payload [" + payload
                + ", " + (payload + fatbin.length) + ") extends past the end of the entries at "
                + (16 + bytes.getLong(8)), "x.fatbin", fatbin);
    }

    @Test
    void fatbinElfEntryIsCheckedAsACubin() {
        byte[] fatbin = resource(TEST_FATBIN);
        ByteBuffer bytes = le(fatbin);
        int payload = 16 + bytes.getInt(16 + 4);
        long payloadSize = bytes.getLong(16 + 8);
        int shnum = Short.toUnsignedInt(bytes.getShort(payload + 0x3c));
        bytes.putLong(payload + 0x28, payloadSize);
        assertRejected("library image x.fatbin is not a valid fatbin: entry 0 at offset 16 (ELF for sm_"
                + bytes.getInt(16 + 28) + "): section header table [" + payloadSize + ", " + (payloadSize + 64L * shnum)
                + ") extends past the end of the " + payloadSize + "-byte payload", "x.fatbin", fatbin);
    }

    @Test
    void ptxWithoutTarget() {
        String ptx = ".version 9.0\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";
        assertRejected("library image k.ptx is not a valid PTX image: it has no .target directive after .version",
                "k.ptx", ptx.getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void ptxWithANulBeforeTarget() {
        byte[] ptx = "//\n.version 9.0\n\0.target sm_90\n".getBytes(StandardCharsets.US_ASCII);
        assertRejected("library image k.ptx is not a valid PTX image: a NUL byte at offset 16 ends the text before its "
                + ".target directive", "k.ptx", ptx);
    }

    @Test
    void ptxWithTextAfterANul() {
        byte[] ptx = ".version 9.0\n.target sm_90\n\0.entry k()\n".getBytes(StandardCharsets.US_ASCII);
        assertRejected("library image k.ptx is not a valid PTX image: a NUL byte at offset 27 ends the text the driver "
                + "reads, but more text follows at offset 28", "k.ptx", ptx);
        byte[] terminated = ".version 9.0\n.target sm_90\n\0\0".getBytes(StandardCharsets.US_ASCII);
        assertEquals(Kind.PTX, ImageValidator.validate("k.ptx", terminated));
    }

    @Test
    void ptxWithAStrayQuoteIsRefusedBeforeTheDriverParsesIt() {
        // The fuzz's mutation #251 of the shipped compute_120 PTX: one flipped bit turned a space into
        // a quote, and the driver's PTX parser aborted the process.
        String header = ".version 9.0\n.target sm_90\n.address_size 64\n";
        byte[] stray = (header + "\tselp.b32 \t%r630,\"%r663, 0, %p136;\n").getBytes(StandardCharsets.US_ASCII);
        assertRejected("library image k.ptx is not a valid PTX image: line 4 has an unterminated string literal (the \" "
                + "at offset 61)", "k.ptx", stray);
        byte[] atTheEnd = (header + ".pragma \"nounroll;").getBytes(StandardCharsets.US_ASCII);
        assertRejected("library image k.ptx is not a valid PTX image: line 4 has an unterminated string literal (the \" "
                + "at offset 52)", "k.ptx", atTheEnd);
    }

    @Test
    void ptxStringsAndCommentsMayHoldQuotes() {
        String ptx = ".version 9.0\n.target sm_90 // a \"quoted\" target\n.file 1 \"a \\\"b\\\".cu\"\n"
                + "/* an \" unpaired quote\n in a block comment */\n// and \" in a line comment\n"
                + ".pragma \"nounroll\";\r\n";
        assertEquals(Kind.PTX, ImageValidator.validate("k.ptx", ptx.getBytes(StandardCharsets.US_ASCII)));
    }

    @Test
    void ptxIsPrintableAscii() {
        // Past the first 64 bytes, which decide whether an image is text at all.
        String text = "// " + "-".repeat(70) + "\n.version 9.0\n.target sm_90\nadd.s32 %r1, %r2, 1;\n";
        byte[] ptx = text.getBytes(StandardCharsets.US_ASCII);
        int at = text.indexOf("%r2");
        for (int bad : new int[] {0xA5, 0x02, 0x7F}) {
            ptx[at] = (byte) bad;
            assertRejected(String.format("library image k.ptx is not a valid PTX image: byte 0x%02x at offset %d (line 4)"
                    + " is not PTX text, which is printable ASCII", bad, at), "k.ptx", ptx);
        }
    }

    private static void assertRejected(String message, String name, byte[] image) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ImageValidator.validate(name, image));
        assertEquals(message, e.getMessage());
    }

    private static ByteBuffer le(byte[] image) {
        return ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Just enough ELF reading to aim the targeted corruptions. */
    private record Elf(byte[] image) {
        long phoff() {
            return le(image).getLong(0x20);
        }

        int phnum() {
            return Short.toUnsignedInt(le(image).getShort(0x38));
        }

        long shoff() {
            return le(image).getLong(0x28);
        }

        int shnum() {
            return Short.toUnsignedInt(le(image).getShort(0x3c));
        }

        int header(int section) {
            return (int) (shoff() + 64L * section);
        }

        int section(String name) {
            ByteBuffer bytes = le(image);
            long names = bytes.getLong(header(Short.toUnsignedInt(bytes.getShort(0x3e))) + 24);
            for (int i = 0; i < shnum(); i++) {
                int start = (int) (names + bytes.getInt(header(i)));
                int end = start;
                while (image[end] != 0) {
                    end++;
                }
                if (new String(image, start, end - start, StandardCharsets.US_ASCII).equals(name)) {
                    return i;
                }
            }
            throw new IllegalArgumentException("no section " + name);
        }
    }
}
