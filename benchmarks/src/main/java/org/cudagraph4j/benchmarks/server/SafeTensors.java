package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;

/**
 * A strict reader and writer of the {@code .safetensors} format (8-byte little-endian header length,
 * a JSON header, then the raw little-endian tensors), for model files whose tensors all hold one
 * float type: F32, F16 or BF16. Maven Central has no small maintained Java reader, so this one
 * checks everything the format promises and names what is wrong: a header that does not fit,
 * duplicate or unknown keys, a dtype other than those three or tensors of different dtypes, shapes
 * that do not match their byte ranges, and byte ranges that overlap, leave holes or run past the
 * file. Half-precision values are widened exactly to floats on reading, and must be values of
 * their format on writing.
 */
public final class SafeTensors {
    /** A header larger than this is refused rather than read (the format's own readers use 100 MB). */
    static final long MAX_HEADER_BYTES = 100L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, ElementType> DTYPES = Map.of("F32", ElementType.FLOAT32,
            "F16", ElementType.FLOAT16, "BF16", ElementType.BFLOAT16);

    /**
     * One tensor, its values as floats.
     *
     * @param shape its dimensions
     * @param type what the file holds it as: FLOAT32, FLOAT16 or BFLOAT16
     * @param data its values, row-major; for a half-precision tensor, values of that format
     */
    public record Tensor(List<Integer> shape, ElementType type, float[] data) {
        /**
         * An FP32 tensor.
         *
         * @param shape its dimensions
         * @param data its values, row-major
         */
        public Tensor(List<Integer> shape, float[] data) {
            this(shape, ElementType.FLOAT32, data);
        }

        /** Checks that the type is one a file holds and that the shape holds exactly the data. */
        public Tensor {
            shape = List.copyOf(shape);
            dtype(Objects.requireNonNull(type, "type"));
            long elements = 1;
            for (int dimension : shape) {
                if (dimension < 0) {
                    throw new IllegalArgumentException("a tensor dimension is negative: " + shape);
                }
                elements *= dimension;
            }
            if (elements != data.length) {
                throw new IllegalArgumentException("shape " + shape + " holds " + elements + " floats, not "
                        + data.length);
            }
        }
    }

    private SafeTensors() {}

    /**
     * Reads every tensor of a file.
     *
     * @param file a {@code .safetensors} file of F32, F16 or BF16 tensors, all of one dtype
     * @return the tensors by name, in file order
     * @throws IOException if the file cannot be read
     * @throws IllegalArgumentException naming the fault, if the file is not well-formed
     */
    public static Map<String, Tensor> read(Path file) throws IOException {
        return parse(file.toString(), Files.readAllBytes(file));
    }

    static Map<String, Tensor> parse(String name, byte[] bytes) {
        if (bytes.length < 8) {
            throw malformed(name, "it has " + bytes.length + " bytes, fewer than the 8 of its header length");
        }
        long headerLength = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        if (headerLength < 2 || headerLength > MAX_HEADER_BYTES || headerLength > bytes.length - 8L) {
            throw malformed(name, "its header length " + Long.toUnsignedString(headerLength) + " does not fit its "
                    + bytes.length + " bytes");
        }
        JsonNode header;
        try {
            header = JSON.readTree(new String(bytes, 8, (int) headerLength, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw malformed(name, "its header is not JSON: " + e.getOriginalMessage());
        }
        if (header == null || !header.isObject()) {
            throw malformed(name, "its header is not a JSON object");
        }
        int dataStart = 8 + (int) headerLength;
        long dataLength = bytes.length - dataStart;
        record Entry(String name, List<Integer> shape, long begin, long end) {}
        List<Entry> entries = new ArrayList<>();
        ElementType type = null;
        String first = null;
        for (Iterator<Map.Entry<String, JsonNode>> fields = header.fields(); fields.hasNext(); ) {
            Map.Entry<String, JsonNode> field = fields.next();
            if (field.getKey().equals("__metadata__")) {
                if (!field.getValue().isObject()) {
                    throw malformed(name, "__metadata__ is not an object");
                }
                continue;
            }
            String tensor = field.getKey();
            JsonNode info = field.getValue();
            if (!info.isObject()) {
                throw malformed(name, "tensor " + tensor + " is not described by an object");
            }
            for (Iterator<String> keys = info.fieldNames(); keys.hasNext(); ) {
                String key = keys.next();
                if (!List.of("dtype", "shape", "data_offsets").contains(key)) {
                    throw malformed(name, "tensor " + tensor + " has an unknown key " + key);
                }
            }
            String dtype = info.path("dtype").asText("");
            ElementType tensorType = DTYPES.get(dtype);
            if (tensorType == null) {
                throw malformed(name, "tensor " + tensor + " is " + (dtype.isEmpty() ? "without a dtype" : dtype)
                        + "; only F32, F16 and BF16 are supported");
            }
            if (type == null) {
                type = tensorType;
                first = tensor;
            } else if (tensorType != type) {
                throw malformed(name, "tensor " + tensor + " is " + dtype + " but tensor " + first + " is "
                        + dtype(type) + "; a model file holds one dtype");
            }
            List<Integer> shape = new ArrayList<>();
            JsonNode dims = info.path("shape");
            if (!dims.isArray()) {
                throw malformed(name, "tensor " + tensor + " has no shape array");
            }
            for (JsonNode dim : dims) {
                if (!dim.canConvertToInt() || !dim.isIntegralNumber() || dim.asInt() < 0) {
                    throw malformed(name, "tensor " + tensor + " has a bad dimension " + dim);
                }
                shape.add(dim.asInt());
            }
            JsonNode offsets = info.path("data_offsets");
            if (!offsets.isArray() || offsets.size() != 2 || !offsets.get(0).isIntegralNumber()
                    || !offsets.get(1).isIntegralNumber()) {
                throw malformed(name, "tensor " + tensor + " needs data_offsets [begin, end]");
            }
            long begin = offsets.get(0).asLong();
            long end = offsets.get(1).asLong();
            if (begin < 0 || end < begin || end > dataLength) {
                throw malformed(name, "tensor " + tensor + " has bytes [" + begin + ", " + end + ") outside the "
                        + dataLength + " bytes of data");
            }
            long size;
            try {
                size = Math.multiplyExact(shape.stream().mapToLong(Integer::longValue).reduce(1, Math::multiplyExact),
                        type.byteSize());
            } catch (ArithmeticException e) {
                throw malformed(name, "tensor " + tensor + " of shape " + shape + " has more bytes than a file can");
            }
            if (size != end - begin) {
                throw malformed(name, "tensor " + tensor + " of shape " + shape + " needs " + size
                        + " bytes but has " + (end - begin));
            }
            entries.add(new Entry(tensor, shape, begin, end));
        }
        List<Entry> byOffset = new ArrayList<>(entries);
        byOffset.sort(Comparator.comparingLong(Entry::begin));
        long covered = 0;
        for (Entry entry : byOffset) {
            if (entry.begin() != covered) {
                throw malformed(name, "tensor " + entry.name() + " starts at byte " + entry.begin() + " but the "
                        + "tensors before it end at " + covered + " (the data must be contiguous, without holes)");
            }
            covered = entry.end();
        }
        if (covered != dataLength) {
            throw malformed(name, "its tensors cover " + covered + " of its " + dataLength + " bytes of data");
        }
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        ByteBuffer data = ByteBuffer.wrap(bytes, dataStart, (int) dataLength).slice().order(ByteOrder.LITTLE_ENDIAN);
        for (Entry entry : entries) {
            ByteBuffer raw = data.slice((int) entry.begin(), (int) (entry.end() - entry.begin()))
                    .order(ByteOrder.LITTLE_ENDIAN);
            float[] values;
            if (type == ElementType.FLOAT32) {
                values = new float[raw.remaining() / Float.BYTES];
                raw.asFloatBuffer().get(values);
            } else {
                short[] bits = new short[raw.remaining() / Short.BYTES];
                raw.asShortBuffer().get(bits);
                values = HalfFloats.toFloats(bits, type);
            }
            tensors.put(entry.name(), new Tensor(entry.shape(), type, values));
        }
        return tensors;
    }

    /**
     * Writes tensors in file order, as the format's reference writer lays them out.
     *
     * @param file the file to write
     * @param tensors the tensors by name
     * @param metadata string pairs for {@code __metadata__}
     * @throws IOException if the file cannot be written
     * @throws IllegalArgumentException if the tensors hold different types, or a half-precision tensor holds a
     *     value its format cannot represent exactly
     */
    public static void write(Path file, Map<String, Tensor> tensors, Map<String, String> metadata) throws IOException {
        Files.write(file, encode(tensors, metadata));
    }

    static byte[] encode(Map<String, Tensor> tensors, Map<String, String> metadata) {
        ObjectNode header = JSON.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode meta = header.putObject("__metadata__");
            metadata.forEach(meta::put);
        }
        ElementType type = tensors.isEmpty() ? ElementType.FLOAT32 : tensors.values().iterator().next().type();
        long offset = 0;
        for (Map.Entry<String, Tensor> entry : tensors.entrySet()) {
            Tensor tensor = entry.getValue();
            if (tensor.type() != type) {
                throw new IllegalArgumentException("tensor " + entry.getKey() + " is " + dtype(tensor.type())
                        + " but the first is " + dtype(type) + "; a model file holds one dtype");
            }
            ObjectNode info = header.putObject(entry.getKey());
            info.put("dtype", dtype(type));
            tensor.shape().forEach(info.putArray("shape")::add);
            long bytes = tensor.data().length * type.byteSize();
            info.putArray("data_offsets").add(offset).add(offset + bytes);
            offset += bytes;
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + 7) / 8 * 8; // the reference writer pads the header with spaces to 8 bytes
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(8 + padded + offset)).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded).put(json);
        for (int i = json.length; i < padded; i++) {
            out.put((byte) ' ');
        }
        for (Map.Entry<String, Tensor> entry : tensors.entrySet()) {
            float[] values = entry.getValue().data();
            if (type == ElementType.FLOAT32) {
                out.asFloatBuffer().put(values);
                out.position(out.position() + values.length * Float.BYTES);
            } else {
                short[] bits = HalfFloats.fromFloats(values, type);
                float[] back = HalfFloats.toFloats(bits, type);
                for (int i = 0; i < values.length; i++) {
                    // Compared as bits: a NaN's payload and the sign of a zero must survive too.
                    if (Float.floatToRawIntBits(back[i]) != Float.floatToRawIntBits(values[i])) {
                        throw new IllegalArgumentException("tensor " + entry.getKey() + " holds " + values[i]
                                + " at element " + i + ", which " + dtype(type) + " cannot represent exactly (round "
                                + "it to the format first)");
                    }
                }
                out.asShortBuffer().put(bits);
                out.position(out.position() + bits.length * Short.BYTES);
            }
        }
        return out.array();
    }

    /**
     * The format's name for an element type.
     *
     * @param type FLOAT32, FLOAT16 or BFLOAT16
     * @return F32, F16 or BF16
     * @throws IllegalArgumentException for another type
     */
    static String dtype(ElementType type) {
        return switch (type) {
            case FLOAT32 -> "F32";
            case FLOAT16 -> "F16";
            case BFLOAT16 -> "BF16";
            default -> throw new IllegalArgumentException("a model file holds F32, F16 or BF16 tensors, not " + type);
        };
    }

    private static IllegalArgumentException malformed(String name, String problem) {
        return new IllegalArgumentException("not a valid safetensors file: " + name + ": " + problem);
    }
}
