package org.cudagraph4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.TreeSet;

/**
 * Corrupted variants of a valid cubin, fatbin or PTX image, for the CPU validation sweep and the
 * GPU fuzz: truncations (at random lengths and just below each table, section and entry boundary),
 * 1 to 8 random bit flips, and header fields set to edge values (0, length-1, length, length+1,
 * 2^31, 2^63, -1 or random): ELF header and section header fields, fatbin header and entry fields
 * (and the ELF fields of uncompressed fatbin entries), NUL bytes inserted into PTX.
 *
 * <p>Mutation {@code i} depends only on the image, the seed and {@code i}, and its description
 * says which, so any one can be rebuilt alone. The list builds each mutation when it is read (a
 * thousand copies of a 1 MiB image would not fit comfortably in memory at once).
 */
public final class ImageMutations {
    /** One corrupted image; the description names image, seed, index and what was changed. */
    public record Mutation(String description, byte[] bytes) {}

    private static final String KERNELS = "org/cudagraph4j/kernels/";
    private static final String TEST_FATBIN = "org/cudagraph4j/test_kernels.fatbin";
    private static final int ELF_MAGIC = 0x464c457f;
    private static final int FATBIN_MAGIC = 0xBA55ED50;
    private static final int SHT_NOBITS = 8;
    private static final int ELF_KIND = 2;
    private static final long FATBIN_FLAGS_COMPRESSED = 0x1000 | 0x2000 | 0x8000;
    private static final String[] PTX_DIRECTIVES = {".version", ".target", ".address_size", ".entry", ".visible"};
    /** NUL insertions land here half the time, where the header directives are. */
    private static final int PTX_HEAD = 1024;

    private ImageMutations() {}

    /** A header field: where it is and how wide (1, 2, 4 or 8 bytes, little-endian). */
    private record Field(String name, int offset, int width) {}

    /** The kinds of change that apply to an image, and where in it they act. */
    private record Plan(List<Change> changes, long[] boundaries, List<Field> headerFields, List<Field> tableFields) {}

    private enum Change { TRUNCATE, TRUNCATE_AT_BOUNDARY, BIT_FLIPS, HEADER_FIELD, TABLE_FIELD, INSERT_NUL }

    /**
     * The class-path resource names of every shipped image: each cubin and PTX that the kernels
     * manifest lists, and the gpu tests' fatbin.
     */
    public static List<String> shippedImages() {
        Properties manifest = new Properties();
        ClassLoader loader = ImageMutations.class.getClassLoader();
        try (InputStream in = loader.getResourceAsStream(KERNELS + "manifest.properties")) {
            if (in == null) {
                throw new IllegalStateException("no kernels manifest at " + KERNELS);
            }
            manifest.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> names = new ArrayList<>();
        manifest.stringPropertyNames().stream().filter(key -> key.startsWith("cubin.") || key.startsWith("ptx."))
                .sorted().forEach(key -> names.add(KERNELS + manifest.getProperty(key)));
        names.add(TEST_FATBIN);
        return List.copyOf(names);
    }

    /** The bytes of a class-path resource, such as one of {@link #shippedImages()}. */
    public static byte[] resource(String name) {
        try (InputStream in = ImageMutations.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalArgumentException("no resource " + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * {@code count} mutations of {@code image}, built on access.
     *
     * @param imageName names the image in each description
     */
    public static List<Mutation> of(String imageName, byte[] image, long seed, int count) {
        if (image.length == 0) {
            throw new IllegalArgumentException("cannot mutate the empty image " + imageName);
        }
        byte[] original = image.clone();
        Plan plan = plan(original);
        return new AbstractList<>() {
            @Override
            public Mutation get(int index) {
                if (index < 0 || index >= count) {
                    throw new IndexOutOfBoundsException(index);
                }
                return mutate(imageName, original, plan, seed, index);
            }

            @Override
            public int size() {
                return count;
            }
        };
    }

    private static Mutation mutate(String imageName, byte[] image, Plan plan, long seed, int index) {
        SplittableRandom random = new SplittableRandom(seed ^ (index * 0x9E37_79B9_7F4A_7C15L));
        Change change = plan.changes().get(random.nextInt(plan.changes().size()));
        String prefix = imageName + " seed " + seed + " #" + index + ": ";
        return switch (change) {
            case TRUNCATE -> {
                int length = random.nextInt(image.length);
                yield new Mutation(prefix + "truncated to " + length + " bytes", Arrays.copyOf(image, length));
            }
            case TRUNCATE_AT_BOUNDARY -> {
                long boundary = plan.boundaries()[random.nextInt(plan.boundaries().length)];
                int length = (int) boundary - 1;
                yield new Mutation(prefix + "truncated to " + length + " bytes, one below the boundary at " + boundary,
                        Arrays.copyOf(image, length));
            }
            case BIT_FLIPS -> {
                byte[] bytes = image.clone();
                long[] bits = new long[1 + random.nextInt(8)];
                for (int i = 0; i < bits.length; i++) {
                    bits[i] = random.nextLong(8L * image.length);
                    bytes[(int) (bits[i] / 8)] ^= (byte) (1 << (bits[i] % 8));
                }
                yield new Mutation(prefix + "flipped bits " + Arrays.toString(bits), bytes);
            }
            case INSERT_NUL -> {
                int at = random.nextInt(random.nextBoolean() ? Math.min(PTX_HEAD, image.length) : image.length);
                byte[] bytes = new byte[image.length + 1];
                System.arraycopy(image, 0, bytes, 0, at);
                System.arraycopy(image, at, bytes, at + 1, image.length - at);
                yield new Mutation(prefix + "inserted a NUL byte at offset " + at, bytes);
            }
            case HEADER_FIELD, TABLE_FIELD -> {
                List<Field> fields = change == Change.HEADER_FIELD ? plan.headerFields() : plan.tableFields();
                Field field = fields.get(random.nextInt(fields.size()));
                long length = image.length;
                String[] names = {"0", "length-1", "length", "length+1", "2^31", "2^63", "-1", "random"};
                long[] values = {0, length - 1, length, length + 1, 1L << 31, 1L << 63, -1, random.nextLong()};
                int choice = random.nextInt(values.length);
                byte[] bytes = image.clone();
                long written = write(bytes, field, values[choice]);
                yield new Mutation(prefix + "set " + field.name() + " to " + names[choice] + " (0x"
                        + Long.toHexString(written) + ")", bytes);
            }
        };
    }

    /** Writes the low bytes of {@code value} into the field; returns what was written. */
    private static long write(byte[] bytes, Field field, long value) {
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        switch (field.width()) {
            case 1 -> buffer.put(field.offset(), (byte) value);
            case 2 -> buffer.putShort(field.offset(), (short) value);
            case 4 -> buffer.putInt(field.offset(), (int) value);
            default -> buffer.putLong(field.offset(), value);
        }
        return field.width() == 8 ? value : value & ((1L << (8 * field.width())) - 1);
    }

    // ---------------------------------------------------------------------------------------------
    // Where to act, read once from the valid original.
    // ---------------------------------------------------------------------------------------------

    private static Plan plan(byte[] image) {
        ByteBuffer buffer = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
        TreeSet<Long> boundaries = new TreeSet<>();
        List<Field> headerFields = new ArrayList<>();
        List<Field> tableFields = new ArrayList<>();
        List<Change> changes = new ArrayList<>(List.of(Change.TRUNCATE, Change.TRUNCATE_AT_BOUNDARY, Change.BIT_FLIPS));
        if (image.length >= 64 && buffer.getInt(0) == ELF_MAGIC) {
            addElf(buffer, 0, "", boundaries, headerFields, tableFields);
        } else if (image.length >= 16 && buffer.getInt(0) == FATBIN_MAGIC) {
            addFatbin(buffer, boundaries, headerFields, tableFields);
        } else {
            addPtx(image, boundaries);
            changes.add(Change.INSERT_NUL);
        }
        if (!headerFields.isEmpty()) {
            changes.add(Change.HEADER_FIELD);
        }
        if (!tableFields.isEmpty()) {
            changes.add(Change.TABLE_FIELD);
        }
        boundaries.removeIf(boundary -> boundary < 1 || boundary > image.length);
        if (boundaries.isEmpty()) {
            boundaries.add((long) image.length);
        }
        return new Plan(List.copyOf(changes), boundaries.stream().mapToLong(Long::longValue).toArray(), headerFields,
                tableFields);
    }

    /** The ELF at {@code base}: its header fields, section header fields, and every table's bounds. */
    private static void addElf(ByteBuffer image, int base, String where, TreeSet<Long> boundaries,
            List<Field> headerFields, List<Field> tableFields) {
        long phoff = image.getLong(base + 0x20);
        long shoff = image.getLong(base + 0x28);
        int phnum = Short.toUnsignedInt(image.getShort(base + 0x38));
        int shnum = Short.toUnsignedInt(image.getShort(base + 0x3c));
        for (Field field : List.of(new Field("e_phoff", 0x20, 8), new Field("e_shoff", 0x28, 8),
                new Field("e_phentsize", 0x36, 2), new Field("e_phnum", 0x38, 2), new Field("e_shentsize", 0x3a, 2),
                new Field("e_shnum", 0x3c, 2), new Field("e_shstrndx", 0x3e, 2))) {
            headerFields.add(new Field(where + field.name(), base + field.offset(), field.width()));
        }
        boundaries.addAll(List.of(base + 64L, base + phoff, base + phoff + 56L * phnum, base + shoff,
                base + shoff + 64L * shnum));
        if (base + shoff + 64L * shnum > image.capacity()) {
            return;
        }
        for (int i = 0; i < shnum; i++) {
            int header = (int) (base + shoff + 64L * i);
            for (Field field : List.of(new Field("sh_name", 0, 4), new Field("sh_offset", 24, 8),
                    new Field("sh_size", 32, 8), new Field("sh_link", 40, 4), new Field("sh_info", 44, 4),
                    new Field("sh_entsize", 56, 8))) {
                tableFields.add(new Field(where + "section " + i + " " + field.name(), header + field.offset(),
                        field.width()));
            }
            if (image.getInt(header + 4) != SHT_NOBITS) {
                long offset = image.getLong(header + 24);
                boundaries.add(base + offset);
                boundaries.add(base + offset + image.getLong(header + 32));
            }
        }
    }

    private static void addFatbin(ByteBuffer image, TreeSet<Long> boundaries, List<Field> headerFields,
            List<Field> tableFields) {
        headerFields.addAll(List.of(new Field("fatbin magic", 0, 4), new Field("fatbin version", 4, 2),
                new Field("fatbin headerSize", 6, 2), new Field("fatbin fatSize", 8, 8)));
        int headerSize = Short.toUnsignedInt(image.getShort(6));
        long end = Math.min(headerSize + image.getLong(8), image.capacity());
        int index = 0;
        for (long entry = headerSize; entry + 64 <= end; index++) {
            int at = (int) entry;
            long entryHeaderSize = Integer.toUnsignedLong(image.getInt(at + 4));
            long payloadSize = image.getLong(at + 8);
            String where = "entry " + index + " ";
            for (Field field : List.of(new Field("kind", 0, 2), new Field("headerSize", 4, 4),
                    new Field("paddedPayloadSize", 8, 8), new Field("compressedSize", 16, 4),
                    new Field("flags", 40, 8), new Field("uncompressedSize", 56, 8))) {
                headerFields.add(new Field(where + field.name(), at + field.offset(), field.width()));
            }
            long payload = entry + entryHeaderSize;
            boundaries.addAll(List.of(entry, payload, payload + payloadSize));
            boolean uncompressedElf = image.getShort(at) == ELF_KIND
                    && (image.getLong(at + 40) & FATBIN_FLAGS_COMPRESSED) == 0;
            if (uncompressedElf && payload + 64 <= end && image.getInt((int) payload) == ELF_MAGIC) {
                addElf(image, (int) payload, where + "ELF ", boundaries, tableFields, tableFields);
            }
            if (entryHeaderSize == 0) {
                break;
            }
            entry = payload + payloadSize;
        }
    }

    /** Just below the start of each header directive and of each kernel. */
    private static void addPtx(byte[] image, TreeSet<Long> boundaries) {
        String text = new String(image, StandardCharsets.ISO_8859_1);
        for (String directive : PTX_DIRECTIVES) {
            for (int at = text.indexOf(directive); at >= 0; at = text.indexOf(directive, at + 1)) {
                boundaries.add((long) at);
            }
        }
    }
}
