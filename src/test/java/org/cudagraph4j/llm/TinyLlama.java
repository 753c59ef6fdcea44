package org.cudagraph4j.llm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.cudagraph4j.HalfFloats;

/**
 * Writes small random Llama checkpoints as Hugging Face publishes them: {@code config.json} and BF16
 * safetensors, in one {@code model.safetensors} or two shards with
 * {@code model.safetensors.index.json}. Projection weights are drawn from N(0, 0.02) and norm weights
 * from 1 + N(0, 0.1), then rounded to BF16 (nearest, ties to even), so that the floats a test keeps
 * are exactly what the file holds.
 *
 * <p>Lower-level writers let a test build a damaged file: any tensor list, or any header text.
 */
final class TinyLlama {
    private TinyLlama() {}

    /** One tensor as it goes into a file: its bytes are written as given, little-endian. */
    record Raw(String name, String dtype, long[] shape, byte[] data) {}

    /**
     * {@return a small configuration with GQA (4 query heads on 2 key-value heads) whose 8 rotary
     * frequencies fall in all three regimes of the llama3 scaling: 1 kept, 2 blended, 5 divided}
     *
     * @param tied whether the output projection is the embedding
     */
    static LlamaConfig config(boolean tied) {
        return new LlamaConfig(
                64, 128, 2, 4, 2, 16, 1e-5, 10000.0, new LlamaConfig.RopeScaling(8.0, 1.0, 4.0, 64), tied, 96, 256, 1,
                List.of(2, 3));
    }

    /**
     * {@return a configuration whose attention width (4 heads of 24) differs from the hidden size
     * (64), with one key-value head for all four query heads}
     *
     * @param tied whether the output projection is the embedding
     */
    static LlamaConfig wideHeads(boolean tied) {
        return new LlamaConfig(
                64, 96, 2, 4, 1, 24, 1e-5, 500000.0, new LlamaConfig.RopeScaling(8.0, 1.0, 4.0, 64), tied, 80, 128, 0,
                List.of(1));
    }

    /**
     * {@return random weights for every tensor of {@code config}, BF16 values held as floats, in the
     * order {@link LlamaCheckpoint#expectedWeights} gives}
     *
     * @param config the model's shape
     * @param seed the random seed
     */
    static Map<String, float[]> randomWeights(LlamaConfig config, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, float[]> weights = new LinkedHashMap<>();
        for (Map.Entry<String, long[]> e : LlamaCheckpoint.expectedWeights(config).entrySet()) {
            long count = 1;
            for (long d : e.getValue()) {
                count *= d;
            }
            boolean norm = e.getKey().endsWith("norm.weight");
            float[] values = new float[Math.toIntExact(count)];
            for (int i = 0; i < values.length; i++) {
                double value = norm ? 1 + 0.1 * random.nextGaussian() : 0.02 * random.nextGaussian();
                values[i] = HalfFloats.bfloat16ToFloat(HalfFloats.floatToBfloat16((float) value));
            }
            weights.put(e.getKey(), values);
        }
        return weights;
    }

    /** {@return the weights as BF16 tensors with the shapes {@code config} calls for} */
    static List<Raw> tensors(LlamaConfig config, Map<String, float[]> weights) {
        Map<String, long[]> shapes = LlamaCheckpoint.expectedWeights(config);
        List<Raw> raws = new ArrayList<>();
        for (Map.Entry<String, float[]> e : weights.entrySet()) {
            long[] shape = shapes.get(e.getKey());
            if (shape == null) {
                throw new IllegalArgumentException("no shape for " + e.getKey());
            }
            raws.add(new Raw(e.getKey(), "BF16", shape, bf16Bytes(e.getValue())));
        }
        return raws;
    }

    /** Writes a random checkpoint of {@code config} into {@code directory}; returns its weights. */
    static Map<String, float[]> write(Path directory, LlamaConfig config, long seed, boolean sharded) {
        Map<String, float[]> weights = randomWeights(config, seed);
        write(directory, config, weights, sharded);
        return weights;
    }

    /** Writes {@code config} and {@code weights} (BF16 values as floats) into {@code directory}. */
    static void write(Path directory, LlamaConfig config, Map<String, float[]> weights, boolean sharded) {
        writeCheckpoint(directory, configJson(config), tensors(config, weights), sharded);
    }

    /**
     * Writes {@code config.json} and the tensors: one {@code model.safetensors}, or, sharded, the
     * first half of the list in {@code model-00001-of-00002.safetensors}, the rest in the second,
     * and the index.
     */
    static void writeCheckpoint(Path directory, String configJson, List<Raw> tensors, boolean sharded) {
        try {
            Files.createDirectories(directory);
            Files.writeString(directory.resolve(LlamaCheckpoint.CONFIG_FILE), configJson);
            if (!sharded) {
                writeSafetensors(directory.resolve(LlamaCheckpoint.SINGLE_FILE), tensors);
                return;
            }
            int split = tensors.size() / 2;
            List<List<Raw>> shards = List.of(tensors.subList(0, split), tensors.subList(split, tensors.size()));
            Map<String, String> weightMap = new LinkedHashMap<>();
            long totalSize = 0;
            for (int s = 0; s < shards.size(); s++) {
                String file = String.format(Locale.ROOT, "model-%05d-of-%05d.safetensors", s + 1, shards.size());
                writeSafetensors(directory.resolve(file), shards.get(s));
                for (Raw raw : shards.get(s)) {
                    weightMap.put(raw.name(), file);
                    totalSize += raw.data().length;
                }
            }
            String index = "{\n  \"metadata\": {\"total_size\": " + totalSize + "},\n  \"weight_map\": {\n"
                    + weightMap.entrySet().stream()
                            .map(e -> "    \"" + e.getKey() + "\": \"" + e.getValue() + "\"")
                            .collect(Collectors.joining(",\n"))
                    + "\n  }\n}\n";
            Files.writeString(directory.resolve(LlamaCheckpoint.INDEX_FILE), index);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes one safetensors file: the header names the tensors in list order, data packed back to back. */
    static void writeSafetensors(Path file, List<Raw> tensors) {
        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (Raw raw : tensors) {
            header.append(",\"")
                    .append(raw.name())
                    .append("\":{\"dtype\":\"")
                    .append(raw.dtype())
                    .append("\",\"shape\":")
                    .append(shapeJson(raw.shape()))
                    .append(",\"data_offsets\":[")
                    .append(offset)
                    .append(',')
                    .append(offset + raw.data().length)
                    .append("]}");
            offset += raw.data().length;
        }
        header.append('}');
        byte[] data = new byte[Math.toIntExact(offset)];
        int at = 0;
        for (Raw raw : tensors) {
            System.arraycopy(raw.data(), 0, data, at, raw.data().length);
            at += raw.data().length;
        }
        writeRawSafetensors(file, header.toString(), data);
    }

    /**
     * Writes a header, padded with spaces to a multiple of 8 bytes as the safetensors writer does,
     * its little-endian length before it, and the data after it.
     */
    static void writeRawSafetensors(Path file, String header, byte[] data) {
        byte[] headerBytes = header.getBytes(StandardCharsets.UTF_8);
        int padded = (headerBytes.length + 7) / 8 * 8;
        ByteBuffer out = ByteBuffer.allocate(8 + padded + data.length).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded);
        out.put(headerBytes);
        for (int i = headerBytes.length; i < padded; i++) {
            out.put((byte) ' ');
        }
        out.put(data);
        try {
            Files.write(file, out.array());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@return the floats as BF16, little-endian, rounded to nearest with ties to even} */
    static byte[] bf16Bytes(float[] values) {
        ByteBuffer out = ByteBuffer.allocate(2 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float value : values) {
            out.putShort(HalfFloats.floatToBfloat16(value));
        }
        return out.array();
    }

    /** {@return a {@code config.json} for {@code config}, written as Transformers writes a Llama config} */
    static String configJson(LlamaConfig config) {
        LlamaConfig.RopeScaling s = config.ropeScaling();
        String scaling = s == null
                ? "null"
                : "{\"factor\": " + s.factor() + ", \"high_freq_factor\": " + s.highFreqFactor()
                        + ", \"low_freq_factor\": " + s.lowFreqFactor() + ", \"original_max_position_embeddings\": "
                        + s.originalMaxPositionEmbeddings() + ", \"rope_type\": \"llama3\"}";
        String eos = config.eosTokenIds().size() == 1
                ? config.eosTokenIds().getFirst().toString()
                : config.eosTokenIds().toString();
        return "{\n"
                + "  \"architectures\": [\"LlamaForCausalLM\"],\n"
                + "  \"attention_bias\": false,\n"
                + "  \"attention_dropout\": 0.0,\n"
                + (config.bosTokenId() < 0 ? "" : "  \"bos_token_id\": " + config.bosTokenId() + ",\n")
                + (config.eosTokenIds().isEmpty() ? "" : "  \"eos_token_id\": " + eos + ",\n")
                + "  \"head_dim\": " + config.headDim() + ",\n"
                + "  \"hidden_act\": \"silu\",\n"
                + "  \"hidden_size\": " + config.hiddenSize() + ",\n"
                + "  \"initializer_range\": 0.02,\n"
                + "  \"intermediate_size\": " + config.intermediateSize() + ",\n"
                + "  \"max_position_embeddings\": " + config.maxPositionEmbeddings() + ",\n"
                + "  \"mlp_bias\": false,\n"
                + "  \"model_type\": \"llama\",\n"
                + "  \"num_attention_heads\": " + config.heads() + ",\n"
                + "  \"num_hidden_layers\": " + config.layers() + ",\n"
                + "  \"num_key_value_heads\": " + config.keyValueHeads() + ",\n"
                + "  \"pretraining_tp\": 1,\n"
                + "  \"rms_norm_eps\": " + config.rmsNormEps() + ",\n"
                + "  \"rope_scaling\": " + scaling + ",\n"
                + "  \"rope_theta\": " + config.ropeTheta() + ",\n"
                + "  \"tie_word_embeddings\": " + config.tieWordEmbeddings() + ",\n"
                + "  \"torch_dtype\": \"bfloat16\",\n"
                + "  \"transformers_version\": \"4.45.0\",\n"
                + "  \"use_cache\": true,\n"
                + "  \"vocab_size\": " + config.vocabSize() + "\n"
                + "}\n";
    }

    private static String shapeJson(long[] shape) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < shape.length; i++) {
            out.append(i == 0 ? "" : ",").append(shape[i]);
        }
        return out.append(']').toString();
    }
}
