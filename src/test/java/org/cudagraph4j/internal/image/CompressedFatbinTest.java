package org.cudagraph4j.internal.image;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Fatbins as nvcc writes them by default (zstd entries) and with {@code --compress-mode=speed}
 * (LZ4): decompressed in Java to exactly what {@code --no-compress} writes, handed to the driver
 * uncompressed, and every corruption of the compressed bytes refused with a message, never an
 * escape, a hang or an allocation the bytes did not earn. The fixtures' README says how they were made.
 */
class CompressedFatbinTest {
    private static final String DIR = "compressed/";
    private static final long COMPRESSION_FLAGS = 0x1000 | 0x2000 | 0x8000;

    @Test
    void zstdFramesOfEveryLevelDecodeToTheirInput() throws Exception {
        byte[] ptx = resource("mid.ptx");
        byte[] six = new byte[ptx.length * 6]; // over one 128 KiB block
        for (int i = 0; i < 6; i++) {
            System.arraycopy(ptx, 0, six, i * ptx.length, ptx.length);
        }
        for (String level : List.of("1", "3", "19", "22")) {
            byte[] frame = resource("mid.ptx." + level + ".zst");
            assertArrayEquals(ptx, Zstd.decompress(frame, 0, frame.length, ptx.length), "level " + level);
        }
        for (String level : List.of("3", "fast")) {
            byte[] frame = resource("mid.ptx.x6." + level + ".zst");
            assertArrayEquals(six, Zstd.decompress(frame, 0, frame.length, six.length), "x6 " + level);
        }
        byte[] elf = payloads(resource("mid-none.fatbin")).get(1);
        byte[] frame = resource("mid.elf.19.zst");
        assertArrayEquals(elf, Zstd.decompress(frame, 0, frame.length, elf.length));
    }

    @Test
    void compressedFatbinsAreRebuiltUncompressedWithWhatNoCompressWrites() {
        byte[] plain = resource("mid-none.fatbin");
        assertSame(plain, ImageValidator.prepare("mid-none.fatbin", plain), "nothing to rebuild");
        List<byte[]> expected = payloads(plain).stream().map(CompressedFatbinTest::withoutTrailingNuls).toList();
        for (String mode : List.of("default", "size", "speed")) {
            String name = "mid-" + mode + ".fatbin";
            byte[] image = resource(name);
            assertTrue(flags(image).stream().anyMatch(f -> (f & COMPRESSION_FLAGS) != 0), name + " is compressed");
            byte[] rebuilt = ImageValidator.prepare(name, image);
            assertEquals(ImageValidator.Kind.FATBIN, ImageValidator.validate(name + " rebuilt", rebuilt));
            assertTrue(flags(rebuilt).stream().allMatch(f -> (f & COMPRESSION_FLAGS) == 0), name + " rebuilt");
            List<byte[]> payloads = payloads(rebuilt);
            assertEquals(expected.size(), payloads.size(), name);
            for (int i = 0; i < payloads.size(); i++) {
                assertArrayEquals(expected.get(i), withoutTrailingNuls(payloads.get(i)), name + " entry " + i);
                assertEquals(0, payloads.get(i).length % 8, "payloads stay 8-byte aligned");
            }
        }
    }

    @Test
    void corruptedCompressedBytesAreRefusedWithAMessage() {
        List<String> failures = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(20_261_201L);
        for (String mode : List.of("default", "size", "speed")) {
            String name = "mid-" + mode + ".fatbin";
            byte[] image = resource(name);
            List<long[]> compressed = compressedPayloads(image);
            assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
                for (int n = 0; n < 3000; n++) {
                    long[] entry = compressed.get(random.nextInt(compressed.size()));
                    byte[] mutated = image.clone();
                    String what;
                    // Half the changes hit the frame's first bytes: its headers and tables.
                    long span = random.nextBoolean() ? Math.min(64, entry[2]) : entry[2];
                    switch (random.nextInt(4)) {
                        case 0 -> {
                            int at = (int) (entry[1] + random.nextLong(span));
                            mutated[at] ^= (byte) (1 << random.nextInt(8));
                            what = "bit flip at " + at;
                        }
                        case 1 -> {
                            int at = (int) (entry[1] + random.nextLong(span));
                            mutated[at] = (byte) random.nextInt(256);
                            what = "byte at " + at;
                        }
                        case 2 -> {
                            long declared = random.nextBoolean() ? random.nextLong(1, 1L << 31) : 1L << 40;
                            ByteBuffer.wrap(mutated).order(ByteOrder.LITTLE_ENDIAN).putLong((int) entry[0] + 56,
                                    declared);
                            what = "decompressed size " + declared;
                        }
                        default -> {
                            int size = (int) random.nextLong(1, entry[2] + 1);
                            ByteBuffer.wrap(mutated).order(ByteOrder.LITTLE_ENDIAN).putInt((int) entry[0] + 16, size);
                            what = "compressed size " + size;
                        }
                    }
                    try {
                        ImageValidator.prepare(name, mutated);
                    } catch (IllegalArgumentException e) {
                        if (!e.getMessage().startsWith("library image " + name + " is not a valid fatbin: ")) {
                            failures.add(name + ", " + what + ": message " + e.getMessage());
                        }
                    } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
                        failures.add(name + ", " + what + ": " + e);
                    }
                }
            }, name);
        }
        assertEquals(List.of(), failures.subList(0, Math.min(20, failures.size())), failures.size() + " failures");
    }

    @Test
    void theLegacyFormatAndCompressedIrAreRefusedByName() {
        byte[] image = resource("mid-default.fatbin");
        long[] entry = compressedPayloads(image).getFirst();
        ByteBuffer fields = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
        fields.putLong((int) entry[0] + 40, (fields.getLong((int) entry[0] + 40) & ~0x8000L) | 0x1000L);
        IllegalArgumentException legacy = assertThrows(IllegalArgumentException.class,
                () -> ImageValidator.prepare("legacy.fatbin", image));
        assertTrue(legacy.getMessage().contains("is compressed in the legacy format of flag 0x1000"),
                legacy.getMessage());
    }

    @Test
    void aZstdFrameThatRegeneratesMoreThanDeclaredStopsThere() throws Exception {
        byte[] frame = resource("mid.ptx.3.zst");
        Zstd.Corrupt tooMuch = assertThrows(Zstd.Corrupt.class, () -> Zstd.decompress(frame, 0, frame.length, 100));
        assertTrue(tooMuch.getMessage().contains("100"), tooMuch.getMessage());
        byte[] truncated = Arrays.copyOf(frame, frame.length - 7);
        assertThrows(Zstd.Corrupt.class, () -> Zstd.decompress(truncated, 0, truncated.length, 24434));
    }

    /** Each entry's payload, in order. */
    private static List<byte[]> payloads(byte[] fatbin) {
        List<byte[]> payloads = new ArrayList<>();
        for (long[] entry : entries(fatbin)) {
            payloads.add(Arrays.copyOfRange(fatbin, (int) entry[1], (int) (entry[1] + entry[2])));
        }
        return payloads;
    }

    private static List<Long> flags(byte[] fatbin) {
        ByteBuffer b = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
        return entries(fatbin).stream().map(entry -> b.getLong((int) entry[0] + 40)).toList();
    }

    /** The compressed entries: header offset, payload offset, compressed size. */
    private static List<long[]> compressedPayloads(byte[] fatbin) {
        ByteBuffer b = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
        return entries(fatbin).stream().filter(e -> (b.getLong((int) e[0] + 40) & COMPRESSION_FLAGS) != 0)
                .map(e -> new long[] {e[0], e[1], Integer.toUnsignedLong(b.getInt((int) e[0] + 16))}).toList();
    }

    /** Each entry: header offset, payload offset, payload size. */
    private static List<long[]> entries(byte[] fatbin) {
        ByteBuffer b = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
        long end = 16 + b.getLong(8);
        List<long[]> entries = new ArrayList<>();
        for (long at = 16; at < end; ) {
            long header = Integer.toUnsignedLong(b.getInt((int) at + 4));
            long size = b.getLong((int) at + 8);
            entries.add(new long[] {at, at + header, size});
            at += header + size;
        }
        return entries;
    }

    private static byte[] withoutTrailingNuls(byte[] payload) {
        int length = payload.length;
        while (length > 0 && payload[length - 1] == 0) {
            length--;
        }
        return Arrays.copyOf(payload, length);
    }

    private static byte[] resource(String name) {
        try (InputStream in = CompressedFatbinTest.class.getResourceAsStream(DIR + name)) {
            assertTrue(in != null, "test resource " + DIR + name);
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
