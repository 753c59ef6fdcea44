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

/**
 * A strict reader and writer of the {@code .safetensors} format (8-byte little-endian header length,
 * a JSON header, then the raw little-endian tensors), for FP32 tensors. Maven Central has no small
 * maintained Java reader, so this one checks everything the format promises and names what is
 * wrong: a header that does not fit, duplicate or unknown keys, a dtype other than F32, shapes that
 * do not match their byte ranges, and byte ranges that overlap, leave holes or run past the file.
 */
public final class SafeTensors {
    /** A header larger than this is refused rather than read (the format's own readers use 100 MB). */
    static final long MAX_HEADER_BYTES = 100L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One FP32 tensor. */
    public record Tensor(List<Integer> shape, float[] data) {
        /** Checks that the shape holds exactly the data. */
        public Tensor {
            shape = List.copyOf(shape);
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
     * @param file a {@code .safetensors} file of F32 tensors
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
            if (!dtype.equals("F32")) {
                throw malformed(name, "tensor " + tensor + " is " + (dtype.isEmpty() ? "without a dtype" : dtype)
                        + "; only F32 is supported");
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
            long elements = shape.stream().mapToLong(Integer::longValue).reduce(1, Math::multiplyExact);
            if (elements * Float.BYTES != end - begin) {
                throw malformed(name, "tensor " + tensor + " of shape " + shape + " needs " + elements * Float.BYTES
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
            float[] values = new float[(int) ((entry.end() - entry.begin()) / Float.BYTES)];
            data.slice((int) entry.begin(), (int) (entry.end() - entry.begin())).order(ByteOrder.LITTLE_ENDIAN)
                    .asFloatBuffer().get(values);
            tensors.put(entry.name(), new Tensor(entry.shape(), values));
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
        long offset = 0;
        for (Map.Entry<String, Tensor> entry : tensors.entrySet()) {
            ObjectNode info = header.putObject(entry.getKey());
            info.put("dtype", "F32");
            entry.getValue().shape().forEach(info.putArray("shape")::add);
            long bytes = (long) entry.getValue().data().length * Float.BYTES;
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
        for (Tensor tensor : tensors.values()) {
            out.asFloatBuffer().put(tensor.data());
            out.position(out.position() + tensor.data().length * Float.BYTES);
        }
        return out.array();
    }

    private static IllegalArgumentException malformed(String name, String problem) {
        return new IllegalArgumentException("not a valid safetensors file: " + name + ": " + problem);
    }
}
