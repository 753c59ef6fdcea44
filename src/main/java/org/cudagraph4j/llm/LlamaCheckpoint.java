package org.cudagraph4j.llm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A Hugging Face Llama checkpoint on disk: its {@code config.json} and its weights in safetensors,
 * one {@code model.safetensors} or the shards that {@code model.safetensors.index.json} names,
 * memory-mapped read-only.
 *
 * <p>{@link #open} reads and checks everything before it returns: each safetensors header (its
 * length within the file, its JSON, every tensor's dtype, shape and data offsets within the file
 * and consistent with each other), the index, and then, through {@link #checkLlamaWeights}, that
 * every weight the configuration calls for is there in BF16 with its shape. A damaged or foreign
 * checkpoint is refused at open with an {@link IllegalArgumentException} that names the file and
 * the tensor; nothing is read out of bounds later.
 *
 * <p>The weights stay in the page cache, not on the Java heap: {@link Tensor#data()} is a slice of
 * the mapping, valid until {@link #close}.
 *
 * <p>Thread safety: immutable after {@link #open}; any number of threads may read tensors at once.
 * {@link #close} must not race with readers: a segment read after close throws
 * {@link IllegalStateException}.
 */
public final class LlamaCheckpoint implements AutoCloseable {
    /** The single-file checkpoint's name. */
    public static final String SINGLE_FILE = "model.safetensors";
    /** The index of a sharded checkpoint. */
    public static final String INDEX_FILE = "model.safetensors.index.json";
    /** The configuration's name. */
    public static final String CONFIG_FILE = "config.json";

    /** safetensors' own bound on the header, which is read onto the heap whole. */
    private static final long MAX_HEADER_BYTES = 100L * 1024 * 1024;
    private static final Map<String, Integer> DTYPE_BYTES = Map.ofEntries(
            Map.entry("BOOL", 1),
            Map.entry("U8", 1),
            Map.entry("I8", 1),
            Map.entry("F8_E5M2", 1),
            Map.entry("F8_E4M3", 1),
            Map.entry("F8_E8M0", 1),
            Map.entry("I16", 2),
            Map.entry("U16", 2),
            Map.entry("F16", 2),
            Map.entry("BF16", 2),
            Map.entry("I32", 4),
            Map.entry("U32", 4),
            Map.entry("F32", 4),
            Map.entry("I64", 8),
            Map.entry("U64", 8),
            Map.entry("F64", 8),
            Map.entry("C64", 8));
    private static final int MAX_PROBLEMS_LISTED = 12;

    /**
     * One tensor of the checkpoint.
     *
     * <p>Thread safety: immutable (the shape is copied in and out); the data may be read from any
     * thread until the checkpoint is closed.
     *
     * @param name the tensor's name, such as {@code model.norm.weight}
     * @param dtype the safetensors dtype, such as {@code BF16}
     * @param shape the dimensions, outermost first (row-major); empty for a scalar
     * @param data the tensor's bytes, little-endian, a read-only slice of the mapped file
     */
    public record Tensor(String name, String dtype, long[] shape, MemorySegment data) {
        /**
         * Copies the shape.
         *
         * @throws NullPointerException if an argument is null
         */
        public Tensor {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(dtype, "dtype");
            shape = shape.clone();
            Objects.requireNonNull(data, "data");
        }

        /** {@return a copy of the dimensions, outermost first} */
        @Override
        public long[] shape() {
            return shape.clone();
        }

        /** {@return the number of elements: the product of the dimensions} */
        public long elementCount() {
            long count = 1;
            for (long d : shape) {
                count *= d;
            }
            return count;
        }

        /** {@return the tensor's name, dtype and shape, without the data} */
        @Override
        public String toString() {
            return name + " " + dtype + Arrays.toString(shape);
        }

        /** {@return whether the other is a tensor of the same name, dtype and shape over the same bytes} */
        @Override
        public boolean equals(Object other) {
            return other instanceof Tensor t
                    && name.equals(t.name)
                    && dtype.equals(t.dtype)
                    && Arrays.equals(shape, t.shape)
                    && data.equals(t.data);
        }

        /** {@return a hash of the name, dtype and shape} */
        @Override
        public int hashCode() {
            return Objects.hash(name, dtype, Arrays.hashCode(shape));
        }
    }

    /** A tensor and the file it lies in, for messages. */
    private record Entry(Tensor tensor, Path file) {}

    private final Path directory;
    private final LlamaConfig config;
    private final Arena arena;
    private final Map<String, Entry> tensors;
    private final List<String> names;
    private volatile boolean closed;

    private LlamaCheckpoint(Path directory, LlamaConfig config, Arena arena, Map<String, Entry> tensors) {
        this.directory = directory;
        this.config = config;
        this.arena = arena;
        this.tensors = Map.copyOf(tensors);
        this.names = List.copyOf(new TreeMap<>(tensors).keySet());
    }

    /**
     * Opens a checkpoint directory: reads {@code config.json}, maps {@code model.safetensors} or
     * every shard {@code model.safetensors.index.json} names, checks every header, and checks the
     * weights against the configuration ({@link #checkLlamaWeights}).
     *
     * @param directory the directory, as downloaded from the Hugging Face Hub
     * @return the open checkpoint; close it to unmap the files
     * @throws IllegalArgumentException if a file is missing, malformed or inconsistent, or the
     *     weights do not match the configuration; the message names the file and the tensor
     * @throws UncheckedIOException if a file cannot be read
     */
    public static LlamaCheckpoint open(Path directory) {
        Objects.requireNonNull(directory, "directory");
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException("checkpoint " + directory + " is not a directory");
        }
        Path configFile = directory.resolve(CONFIG_FILE);
        if (!Files.isRegularFile(configFile)) {
            throw new IllegalArgumentException("checkpoint " + directory + " has no " + CONFIG_FILE);
        }
        LlamaConfig config = LlamaConfig.read(configFile);
        Arena arena = Arena.ofShared();
        try {
            Map<String, Entry> tensors = mapTensors(directory, arena);
            LlamaCheckpoint checkpoint = new LlamaCheckpoint(directory, config, arena, tensors);
            checkpoint.checkLlamaWeights();
            return checkpoint;
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** {@return the tensors of the single file, or of the shards the index names} */
    private static Map<String, Entry> mapTensors(Path directory, Arena arena) {
        Path index = directory.resolve(INDEX_FILE);
        if (!Files.exists(index)) {
            Path single = directory.resolve(SINGLE_FILE);
            if (!Files.isRegularFile(single)) {
                throw new IllegalArgumentException(
                        "checkpoint " + directory + " has neither " + SINGLE_FILE + " nor " + INDEX_FILE);
            }
            Map<String, Entry> tensors = new HashMap<>();
            for (Tensor t : readSafetensors(single, arena).values()) {
                tensors.put(t.name(), new Entry(t, single));
            }
            return tensors;
        }
        Map<String, String> weightMap = readIndex(index);
        Map<String, Map<String, Tensor>> files = new LinkedHashMap<>();
        for (String file : new TreeSet<>(weightMap.values())) {
            Path shard = directory.resolve(file);
            if (!Files.isRegularFile(shard)) {
                throw new IllegalArgumentException(
                        index + " names the shard " + file + ", which is not in " + directory);
            }
            files.put(file, readSafetensors(shard, arena));
        }
        Map<String, Entry> tensors = new HashMap<>();
        for (Map.Entry<String, String> e : weightMap.entrySet()) {
            Tensor t = files.get(e.getValue()).get(e.getKey());
            if (t == null) {
                throw new IllegalArgumentException(index + " puts tensor " + e.getKey() + " in " + e.getValue()
                        + ", whose header does not have it");
            }
            tensors.put(e.getKey(), new Entry(t, directory.resolve(e.getValue())));
        }
        return tensors;
    }

    /** {@return the index's weight map, tensor name to shard file name, each a plain name in the directory} */
    private static Map<String, String> readIndex(Path index) {
        if (!(Json.parse(readUtf8(index), index.toString()) instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException(index + " is not a JSON object");
        }
        if (!(root.get("weight_map") instanceof Map<?, ?> weightMap)) {
            throw new IllegalArgumentException(index + " has no \"weight_map\" object");
        }
        Map<String, String> result = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : weightMap.entrySet()) {
            String name = (String) e.getKey();
            if (!(e.getValue() instanceof String file)) {
                throw new IllegalArgumentException(index + ": weight_map[\"" + name + "\"] is not a file name");
            }
            // A shard outside the directory would be a path traversal: only plain names are read.
            if (file.isEmpty()
                    || file.equals(".")
                    || file.equals("..")
                    || file.indexOf('/') >= 0
                    || file.indexOf('\\') >= 0
                    || file.indexOf('\0') >= 0) {
                throw new IllegalArgumentException(index + ": weight_map[\"" + name + "\"] is \"" + file
                        + "\", not a plain file name in the checkpoint directory");
            }
            result.put(name, file);
        }
        if (result.isEmpty()) {
            throw new IllegalArgumentException(index + " has an empty weight_map");
        }
        return result;
    }

    /**
     * Maps one safetensors file and reads its header.
     *
     * @return the tensors by name, in header order
     */
    static Map<String, Tensor> readSafetensors(Path file, Arena arena) {
        MemorySegment mapped;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < Long.BYTES) {
                throw new IllegalArgumentException(
                        file + " is not a safetensors file: " + size + " bytes, shorter than the 8-byte header length");
            }
            mapped = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + file + ": " + e, e);
        }
        long size = mapped.byteSize();
        long headerLength = mapped.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        if (headerLength <= 0 || headerLength > size - Long.BYTES) {
            throw new IllegalArgumentException(file + " is not a safetensors file, or is truncated: its header length "
                    + Long.toUnsignedString(headerLength) + " does not fit in the " + (size - Long.BYTES)
                    + " bytes after the length");
        }
        if (headerLength > MAX_HEADER_BYTES) {
            throw new IllegalArgumentException(
                    file + ": the safetensors header is " + headerLength + " bytes, more than " + MAX_HEADER_BYTES);
        }
        byte[] headerBytes = mapped.asSlice(Long.BYTES, headerLength).toArray(ValueLayout.JAVA_BYTE);
        String header;
        try {
            header = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(headerBytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(file + ": the safetensors header is not UTF-8", e);
        }
        String source = file + " (safetensors header)";
        if (!(Json.parse(header, source) instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException(source + " is not a JSON object");
        }
        long dataStart = Long.BYTES + headerLength;
        long dataSize = size - dataStart;
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : root.entrySet()) {
            String name = (String) e.getKey();
            if (name.equals("__metadata__")) {
                checkMetadata(source, e.getValue());
                continue;
            }
            String where = file + ": tensor " + name;
            if (!(e.getValue() instanceof Map<?, ?> info)) {
                throw new IllegalArgumentException(where + " is not described by a JSON object");
            }
            if (!(info.get("dtype") instanceof String dtype)) {
                throw new IllegalArgumentException(where + " has no \"dtype\" string");
            }
            Integer elementBytes = DTYPE_BYTES.get(dtype);
            if (elementBytes == null) {
                throw new IllegalArgumentException(where + " has the unknown dtype \"" + dtype + "\"");
            }
            long[] shape = longs(info.get("shape"), where, "shape", -1);
            long[] offsets = longs(info.get("data_offsets"), where, "data_offsets", 2);
            long begin = offsets[0];
            long end = offsets[1];
            if (begin > end || end > dataSize) {
                throw new IllegalArgumentException(where + " has data_offsets [" + begin + ", " + end
                        + "], outside the " + dataSize + " data bytes of the file (is it truncated?)");
            }
            long expectedBytes = elementBytes;
            try {
                for (long d : shape) {
                    expectedBytes = Math.multiplyExact(expectedBytes, d);
                }
            } catch (ArithmeticException overflow) {
                throw new IllegalArgumentException(where + " has the shape " + Arrays.toString(shape)
                        + ", too large to address");
            }
            if (end - begin != expectedBytes) {
                throw new IllegalArgumentException(where + ": " + dtype + Arrays.toString(shape) + " is "
                        + expectedBytes + " bytes, but its data_offsets [" + begin + ", " + end + "] span "
                        + (end - begin));
            }
            tensors.put(name, new Tensor(name, dtype, shape, mapped.asSlice(dataStart + begin, end - begin)));
        }
        return tensors;
    }

    /** Checks that {@code __metadata__} is an object of strings, as the format says. */
    private static void checkMetadata(String source, Object metadata) {
        if (!(metadata instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException(source + ": __metadata__ is not a JSON object");
        }
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getValue() instanceof String)) {
                throw new IllegalArgumentException(source + ": __metadata__." + e.getKey() + " is not a string");
            }
        }
    }

    /** {@return a JSON array of non-negative integers as longs; {@code count} of them unless it is -1} */
    private static long[] longs(Object value, String where, String field, int count) {
        if (!(value instanceof List<?> list)) {
            throw new IllegalArgumentException(where + " has no \"" + field + "\" array");
        }
        if (count >= 0 && list.size() != count) {
            throw new IllegalArgumentException(
                    where + ": \"" + field + "\" has " + list.size() + " elements, not " + count);
        }
        long[] result = new long[list.size()];
        for (int i = 0; i < result.length; i++) {
            if (!(list.get(i) instanceof Long n) || n < 0) {
                throw new IllegalArgumentException(where + ": \"" + field + "\" holds " + list.get(i)
                        + ", not a non-negative integer");
            }
            result[i] = n;
        }
        return result;
    }

    private static String readUtf8(Path file) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(Files.readAllBytes(file)))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(file + " is not UTF-8 text", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e, e);
        }
    }

    /** {@return the model's configuration, from {@code config.json}} */
    public LlamaConfig config() {
        return config;
    }

    /** {@return the checkpoint's directory} */
    public Path directory() {
        return directory;
    }

    /**
     * {@return the names of all tensors, sorted}
     *
     * @throws IllegalStateException if the checkpoint is closed
     */
    public List<String> tensorNames() {
        requireOpen();
        return names;
    }

    /**
     * Looks a tensor up by name, whatever its dtype and shape.
     *
     * @param name the tensor's name, such as {@code model.layers.0.mlp.up_proj.weight}
     * @return the tensor, whose data is valid until {@link #close}
     * @throws IllegalArgumentException if there is no such tensor; the message names the closest
     *     name there is
     * @throws IllegalStateException if the checkpoint is closed
     */
    public Tensor tensor(String name) {
        return entry(name).tensor();
    }

    /**
     * Looks a weight up and checks that it is BF16 with the expected shape.
     *
     * @param name the tensor's name
     * @param expectedShape the dimensions it must have, outermost first
     * @return the tensor
     * @throws IllegalArgumentException if there is no such tensor, or it is not BF16, or its shape
     *     differs; the message names the file, the tensor, what was expected and what is there
     * @throws IllegalStateException if the checkpoint is closed
     */
    public Tensor weight(String name, long... expectedShape) {
        Objects.requireNonNull(expectedShape, "expectedShape");
        Entry entry = entry(name);
        Tensor t = entry.tensor();
        if (!t.dtype().equals("BF16")) {
            throw new IllegalArgumentException(entry.file() + ": tensor " + name + " is " + t.dtype()
                    + ", expected BF16 (only BF16 checkpoints are read)");
        }
        if (!Arrays.equals(t.shape, expectedShape)) {
            throw new IllegalArgumentException(entry.file() + ": tensor " + name + " has the shape "
                    + Arrays.toString(t.shape) + ", expected " + Arrays.toString(expectedShape)
                    + " from " + CONFIG_FILE);
        }
        return t;
    }

    /**
     * Checks every weight the configuration calls for, each BF16 with its shape:
     * {@code model.embed_tokens.weight [V, H]}; per layer {@code input_layernorm [H]},
     * {@code self_attn.q_proj [NQ*D, H]}, {@code k_proj} and {@code v_proj [NKV*D, H]},
     * {@code o_proj [H, NQ*D]}, {@code post_attention_layernorm [H]}, {@code mlp.gate_proj} and
     * {@code up_proj [I, H]}, {@code down_proj [H, I]}; {@code model.norm.weight [H]}; and
     * {@code lm_head.weight [V, H]} unless the embeddings are tied. Other tensors are ignored.
     * {@link #open} calls it.
     *
     * @throws IllegalArgumentException listing every missing or mismatched weight in one message
     * @throws IllegalStateException if the checkpoint is closed
     */
    public void checkLlamaWeights() {
        requireOpen();
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, long[]> e : expectedWeights(config).entrySet()) {
            try {
                weight(e.getKey(), e.getValue());
            } catch (IllegalArgumentException problem) {
                problems.add(problem.getMessage());
            }
        }
        if (problems.isEmpty()) {
            return;
        }
        StringBuilder message = new StringBuilder("checkpoint ")
                .append(directory)
                .append(" does not hold the weights its ")
                .append(CONFIG_FILE)
                .append(" describes (")
                .append(problems.size())
                .append(problems.size() == 1 ? " problem):" : " problems):");
        for (String problem : problems.subList(0, Math.min(problems.size(), MAX_PROBLEMS_LISTED))) {
            message.append("\n  ").append(problem);
        }
        if (problems.size() > MAX_PROBLEMS_LISTED) {
            message.append("\n  and ").append(problems.size() - MAX_PROBLEMS_LISTED).append(" more");
        }
        throw new IllegalArgumentException(message.toString());
    }

    /** {@return every weight a Llama model of this configuration has, with its shape, in a stable order} */
    static Map<String, long[]> expectedWeights(LlamaConfig c) {
        long h = c.hiddenSize();
        long v = c.vocabSize();
        long q = (long) c.heads() * c.headDim();
        long kv = (long) c.keyValueHeads() * c.headDim();
        long i = c.intermediateSize();
        Map<String, long[]> weights = new LinkedHashMap<>();
        weights.put("model.embed_tokens.weight", new long[] {v, h});
        for (int layer = 0; layer < c.layers(); layer++) {
            String p = "model.layers." + layer + ".";
            weights.put(p + "input_layernorm.weight", new long[] {h});
            weights.put(p + "self_attn.q_proj.weight", new long[] {q, h});
            weights.put(p + "self_attn.k_proj.weight", new long[] {kv, h});
            weights.put(p + "self_attn.v_proj.weight", new long[] {kv, h});
            weights.put(p + "self_attn.o_proj.weight", new long[] {h, q});
            weights.put(p + "post_attention_layernorm.weight", new long[] {h});
            weights.put(p + "mlp.gate_proj.weight", new long[] {i, h});
            weights.put(p + "mlp.up_proj.weight", new long[] {i, h});
            weights.put(p + "mlp.down_proj.weight", new long[] {h, i});
        }
        weights.put("model.norm.weight", new long[] {h});
        if (!c.tieWordEmbeddings()) {
            weights.put("lm_head.weight", new long[] {v, h});
        }
        return weights;
    }

    private Entry entry(String name) {
        Objects.requireNonNull(name, "name");
        requireOpen();
        Entry entry = tensors.get(name);
        if (entry == null) {
            String closest = closestName(name);
            throw new IllegalArgumentException("checkpoint " + directory + " has no tensor " + name
                    + (closest == null ? "" : " (the closest name is " + closest + ")"));
        }
        return entry;
    }

    /** {@return the name at the smallest edit distance, if it is near enough to be a likely typo or variant} */
    private String closestName(String name) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : names) {
            int d = editDistance(name, candidate);
            if (d < bestDistance) {
                bestDistance = d;
                best = candidate;
            }
        }
        return best != null && bestDistance <= Math.max(3, name.length() / 3) ? best : null;
    }

    private static int editDistance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitute, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("checkpoint " + directory + " is closed");
        }
    }

    /**
     * Unmaps the files; the tensors' data may no longer be read. Closing twice does nothing.
     *
     * @throws IllegalStateException if a native call is using a tensor's data at that moment; the
     *     checkpoint then stays open
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        arena.close();
        closed = true;
    }

    /** {@return the directory and the number of tensors} */
    @Override
    public String toString() {
        return "LlamaCheckpoint[" + directory + ", " + tensors.size() + " tensors" + (closed ? ", closed]" : "]");
    }
}
