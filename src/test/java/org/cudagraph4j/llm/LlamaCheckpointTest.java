package org.cudagraph4j.llm;

import static org.cudagraph4j.llm.LlamaConfigTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.cudagraph4j.HalfFloats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LlamaCheckpoint}: random checkpoints from {@link TinyLlama} read back bit for bit, single
 * and sharded, tied and untied; every kind of damaged file refused at open with the file and the
 * tensor named; use after close refused. Then the CPU reference's own sanity: RoPE at position 0,
 * causality, and grouped-query attention equal to its explicit repetition. No GPU needed.
 */
class LlamaCheckpointTest {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long SEED = 0x5EEDL;

    @Test
    void aSingleFileCheckpointReadsBackBitForBit(@TempDir Path dir) {
        roundTrip(dir, TinyLlama.config(true), false);
    }

    @Test
    void aShardedCheckpointReadsBackBitForBit(@TempDir Path dir) {
        roundTrip(dir, TinyLlama.config(false), true);
        assertTrue(Files.exists(dir.resolve(LlamaCheckpoint.INDEX_FILE)));
        assertFalse(Files.exists(dir.resolve(LlamaCheckpoint.SINGLE_FILE)));
    }

    @Test
    void anAttentionWidthOtherThanTheHiddenSizeReadsBack(@TempDir Path dir) {
        roundTrip(dir, TinyLlama.wideHeads(false), false);
    }

    private static void roundTrip(Path dir, LlamaConfig config, boolean sharded) {
        Map<String, float[]> weights = TinyLlama.write(dir, config, SEED, sharded);
        try (LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir)) {
            assertEquals(config, checkpoint.config());
            assertEquals(dir, checkpoint.directory());
            assertEquals(weights.keySet().stream().sorted().toList(), checkpoint.tensorNames());
            assertEquals(config.tieWordEmbeddings(), !checkpoint.tensorNames().contains("lm_head.weight"));
            long parameters = 0;
            for (Map.Entry<String, long[]> e : LlamaCheckpoint.expectedWeights(config).entrySet()) {
                LlamaCheckpoint.Tensor t = checkpoint.weight(e.getKey(), e.getValue());
                assertEquals("BF16", t.dtype());
                assertArrayEquals(e.getValue(), t.shape());
                float[] expected = weights.get(e.getKey());
                assertEquals(expected.length, t.elementCount());
                assertEquals(2L * expected.length, t.data().byteSize());
                for (int i = 0; i < expected.length; i++) {
                    float read = HalfFloats.bfloat16ToFloat(t.data().get(BF16, 2L * i));
                    if (read != expected[i]) {
                        throw new AssertionError(e.getKey() + "[" + i + "]: " + read + " != " + expected[i]);
                    }
                }
                parameters += expected.length;
            }
            assertEquals(config.parameterCount(), parameters);
        }
    }

    @Test
    void theWeightsAreRandomWithTheIntendedSpread(@TempDir Path dir) {
        Map<String, float[]> weights = TinyLlama.write(dir, TinyLlama.config(true), SEED, false);
        float[] projection = weights.get("model.layers.0.mlp.up_proj.weight");
        float[] norm = weights.get("model.layers.1.input_layernorm.weight");
        assertEquals(0.02, standardDeviation(projection, 0), 0.002);
        assertEquals(0.1, standardDeviation(norm, 1), 0.03);
        assertNotEquals(projection[0], weights.get("model.layers.1.mlp.up_proj.weight")[0]);
    }

    private static double standardDeviation(float[] values, double mean) {
        double sum = 0;
        for (float v : values) {
            sum += (v - mean) * (v - mean);
        }
        return Math.sqrt(sum / values.length);
    }

    @Test
    void aTruncatedFileIsRefused(@TempDir Path dir) throws Exception {
        TinyLlama.write(dir, TinyLlama.config(true), SEED, false);
        Path file = dir.resolve(LlamaCheckpoint.SINGLE_FILE);
        long size = Files.size(file);
        truncate(file, size - 1);
        assertMessage(() -> LlamaCheckpoint.open(dir), "is it truncated?");
        assertMessage(() -> LlamaCheckpoint.open(dir), file.toString());
        truncate(file, 100);
        assertMessage(() -> LlamaCheckpoint.open(dir), "does not fit in the 92 bytes after the length");
        truncate(file, 5);
        assertMessage(() -> LlamaCheckpoint.open(dir), "5 bytes, shorter than the 8-byte header length");
    }

    @Test
    void aHeaderLengthBeyondTheFileIsRefused(@TempDir Path dir) throws Exception {
        TinyLlama.write(dir, TinyLlama.config(true), SEED, false);
        Path file = dir.resolve(LlamaCheckpoint.SINGLE_FILE);
        for (long length : new long[] {Files.size(file), -1L, 0}) {
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                raf.write(littleEndian(length));
            }
            assertMessage(() -> LlamaCheckpoint.open(dir), "header length " + Long.toUnsignedString(length));
        }
    }

    @Test
    void malformedHeadersAreRefusedNamingTheTensor(@TempDir Path dir) {
        LlamaConfig config = TinyLlama.config(true);
        TinyLlama.write(dir, config, SEED, false);
        Path file = dir.resolve(LlamaCheckpoint.SINGLE_FILE);
        byte[] data = new byte[64];
        Map<String, String> cases = new LinkedHashMap<>();
        cases.put("{\"t\":{\"dtype\":\"BF16\",\"shape\":[32],\"data_offsets\":[0,65]}}",
                "tensor t has data_offsets [0, 65], outside the 64 data bytes");
        cases.put("{\"t\":{\"dtype\":\"BF16\",\"shape\":[32],\"data_offsets\":[8,4]}}",
                "tensor t has data_offsets [8, 4]");
        cases.put("{\"t\":{\"dtype\":\"BF16\",\"shape\":[31],\"data_offsets\":[0,64]}}",
                "tensor t: BF16[31] is 62 bytes, but its data_offsets [0, 64] span 64");
        cases.put("{\"t\":{\"dtype\":\"BF16\",\"shape\":[1099511627776, 1099511627776],\"data_offsets\":[0,64]}}",
                "too large to address");
        cases.put("{\"t\":{\"dtype\":\"Q4\",\"shape\":[32],\"data_offsets\":[0,64]}}", "the unknown dtype \"Q4\"");
        cases.put("{\"t\":{\"dtype\":\"BF16\",\"shape\":[-32],\"data_offsets\":[0,64]}}",
                "\"shape\" holds -32, not a non-negative integer");
        cases.put("{\"t\":{\"dtype\":\"BF16\",\"shape\":[32],\"data_offsets\":[0]}}",
                "\"data_offsets\" has 1 elements, not 2");
        cases.put("{\"t\":{\"shape\":[32],\"data_offsets\":[0,64]}}", "tensor t has no \"dtype\" string");
        cases.put("{\"t\":[]}", "tensor t is not described by a JSON object");
        cases.put("{\"__metadata__\":{\"format\":1}}", "__metadata__.format is not a string");
        cases.put("[]", "is not a JSON object");
        cases.put("{\"t\":", "is not valid JSON");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            TinyLlama.writeRawSafetensors(file, c.getKey(), data);
            assertMessage(() -> LlamaCheckpoint.open(dir), c.getValue());
            assertMessage(() -> LlamaCheckpoint.open(dir), file.toString());
        }
    }

    @Test
    void aWeightOfTheWrongDtypeIsRefused(@TempDir Path dir) {
        LlamaConfig config = TinyLlama.config(true);
        List<TinyLlama.Raw> tensors = new ArrayList<>(TinyLlama.tensors(config, TinyLlama.randomWeights(config, SEED)));
        String name = "model.layers.1.post_attention_layernorm.weight";
        tensors.replaceAll(t -> t.name().equals(name)
                ? new TinyLlama.Raw(name, "F32", t.shape(), new byte[4 * config.hiddenSize()])
                : t);
        TinyLlama.writeCheckpoint(dir, TinyLlama.configJson(config), tensors, false);
        assertMessage(() -> LlamaCheckpoint.open(dir),
                dir.resolve(LlamaCheckpoint.SINGLE_FILE) + ": tensor " + name + " is F32, expected BF16");
    }

    @Test
    void weightsOfTheWrongShapeAreAllListedInOneMessage(@TempDir Path dir) {
        LlamaConfig written = TinyLlama.config(false);
        TinyLlama.write(dir, written, SEED, true);
        LlamaConfig claimed = new LlamaConfig(written.hiddenSize(), written.intermediateSize() + 8, written.layers(),
                written.heads(), written.keyValueHeads(), written.headDim(), written.rmsNormEps(),
                written.ropeTheta(), written.ropeScaling(), false, written.vocabSize(),
                written.maxPositionEmbeddings(), written.bosTokenId(), written.eosTokenIds());
        try {
            Files.writeString(dir.resolve(LlamaCheckpoint.CONFIG_FILE), TinyLlama.configJson(claimed));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LlamaCheckpoint.open(dir));
        assertTrue(e.getMessage().contains("(6 problems)"), e.getMessage());
        assertTrue(e.getMessage().contains("tensor model.layers.1.mlp.down_proj.weight has the shape [64, 128], "
                + "expected [64, 136]"), e.getMessage());
        assertTrue(e.getMessage().contains("model-0000"), e.getMessage());
    }

    @Test
    void aMissingWeightIsNamed(@TempDir Path dir) {
        LlamaConfig config = TinyLlama.config(false);
        Map<String, float[]> weights = TinyLlama.randomWeights(config, SEED);
        weights.remove("lm_head.weight");
        TinyLlama.write(dir, config, weights, false);
        assertMessage(() -> LlamaCheckpoint.open(dir), "has no tensor lm_head.weight");
        // Untied with no lm_head is the common mistake: the same file, declared tied, opens.
        TinyLlama.writeCheckpoint(
                dir, TinyLlama.configJson(TinyLlama.config(true)), TinyLlama.tensors(config, weights), false);
        try (LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir)) {
            assertMessage(() -> checkpoint.tensor("model.norm.weights"),
                    "has no tensor model.norm.weights (the closest name is model.norm.weight)");
            assertMessage(() -> checkpoint.tensor("rotary.inv_freq"), "has no tensor rotary.inv_freq");
            assertMessage(() -> checkpoint.weight("model.norm.weight", 63), "has the shape [64], expected [63]");
        }
    }

    @Test
    void extraTensorsOfAnyDtypeAreKeptButNotRequired(@TempDir Path dir) {
        LlamaConfig config = TinyLlama.config(true);
        List<TinyLlama.Raw> tensors = new ArrayList<>(TinyLlama.tensors(config, TinyLlama.randomWeights(config, SEED)));
        tensors.add(new TinyLlama.Raw("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", new long[] {8},
                new byte[32]));
        tensors.add(new TinyLlama.Raw("empty", "I64", new long[] {0, 3}, new byte[0]));
        TinyLlama.writeCheckpoint(dir, TinyLlama.configJson(config), tensors, false);
        try (LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir)) {
            assertEquals("F32", checkpoint.tensor("model.layers.0.self_attn.rotary_emb.inv_freq").dtype());
            assertEquals(0, checkpoint.tensor("empty").elementCount());
            assertEquals(0, checkpoint.tensor("empty").data().byteSize());
        }
    }

    @Test
    void aBrokenIndexIsRefused(@TempDir Path dir) throws Exception {
        TinyLlama.write(dir, TinyLlama.config(true), SEED, true);
        Path index = dir.resolve(LlamaCheckpoint.INDEX_FILE);
        String text = Files.readString(index);
        Files.writeString(index, text.replace("model-00002-of-00002", "model-00003-of-00002"));
        assertMessage(
                () -> LlamaCheckpoint.open(dir), "names the shard model-00003-of-00002.safetensors, which is not in");
        Files.writeString(index, text.replace("\"model-00002-of-00002", "\"../model-00002-of-00002"));
        assertMessage(() -> LlamaCheckpoint.open(dir), "not a plain file name in the checkpoint directory");
        Files.writeString(
                index, text.replace("\"model.norm.weight\": \"model-00002", "\"model.norm.weight\": \"model-00001"));
        assertMessage(() -> LlamaCheckpoint.open(dir),
                "puts tensor model.norm.weight in model-00001-of-00002.safetensors, whose header does not have it");
        Files.writeString(index, "{\"metadata\": {}}");
        assertMessage(() -> LlamaCheckpoint.open(dir), "has no \"weight_map\" object");
    }

    @Test
    void aDirectoryWithoutWeightsOrConfigIsRefused(@TempDir Path dir) throws Exception {
        assertMessage(() -> LlamaCheckpoint.open(dir.resolve("absent")), "is not a directory");
        assertMessage(() -> LlamaCheckpoint.open(dir), "has no config.json");
        Files.writeString(dir.resolve(LlamaCheckpoint.CONFIG_FILE), TinyLlama.configJson(TinyLlama.config(true)));
        assertMessage(
                () -> LlamaCheckpoint.open(dir), "has neither model.safetensors nor model.safetensors.index.json");
    }

    @Test
    void useAfterCloseIsRefused(@TempDir Path dir) {
        TinyLlama.write(dir, TinyLlama.config(true), SEED, false);
        LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir);
        LlamaCheckpoint.Tensor norm = checkpoint.tensor("model.norm.weight");
        norm.data().get(BF16, 0);
        checkpoint.close();
        checkpoint.close();
        assertThrows(IllegalStateException.class, () -> checkpoint.tensor("model.norm.weight"));
        assertThrows(IllegalStateException.class, () -> checkpoint.weight("model.norm.weight", 64));
        assertThrows(IllegalStateException.class, checkpoint::tensorNames);
        assertThrows(IllegalStateException.class, checkpoint::checkLlamaWeights);
        assertThrows(IllegalStateException.class, () -> norm.data().get(BF16, 0));
        assertEquals(TinyLlama.config(true), checkpoint.config());
    }

    @Test
    void aTensorsShapeCannotBeChangedFromOutside(@TempDir Path dir) {
        TinyLlama.write(dir, TinyLlama.config(true), SEED, false);
        try (LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir)) {
            LlamaCheckpoint.Tensor embed = checkpoint.tensor("model.embed_tokens.weight");
            embed.shape()[0] = 1;
            assertArrayEquals(new long[] {96, 64}, embed.shape());
            assertTrue(embed.data().isReadOnly());
            assertEquals("model.embed_tokens.weight BF16[96, 64]", embed.toString());
        }
    }

    // The CPU reference's own sanity checks: what the GPU decoder is compared with must be right.

    @Test
    void ropeAtPositionZeroIsTheIdentityAndPreservesNorms() {
        double[] frequencies = TinyLlama.config(true).ropeInverseFrequencies();
        float[] x = new float[3 * 16];
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        assertArrayEquals(x, LlamaCpuReference.rope(x.clone(), 3, 16, 0, frequencies));
        float[] turned = LlamaCpuReference.rope(x.clone(), 3, 16, 37, frequencies);
        for (int pair = 0; pair < 3 * 8; pair++) {
            int lo = pair / 8 * 16 + pair % 8;
            double before = Math.hypot(x[lo], x[lo + 8]);
            assertEquals(before, Math.hypot(turned[lo], turned[lo + 8]), 1e-5 * (1 + before));
        }
        // Pair 0 turns by exactly 37 radians: its frequency is 1.
        assertEquals(x[0] * Math.cos(37) - x[8] * Math.sin(37), turned[0], 1e-5);
    }

    @Test
    void theReferenceIsCausal(@TempDir Path dir) {
        LlamaConfig config = TinyLlama.config(true);
        TinyLlama.write(dir, config, SEED, false);
        int[] tokens = {1, 17, 42, 5, 95, 0, 63, 17};
        try (LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir)) {
            LlamaCpuReference reference = new LlamaCpuReference(checkpoint);
            float[][] all = reference.logits(tokens);
            assertEquals(tokens.length, all.length);
            for (int length = 1; length < tokens.length; length += 3) {
                float[][] prefix = reference.logits(Arrays.copyOf(tokens, length));
                for (int t = 0; t < length; t++) {
                    assertArrayEquals(all[t], prefix[t], 0f, "position " + t + " of a prefix of " + length);
                }
            }
            for (float[] row : all) {
                assertEquals(config.vocabSize(), row.length);
                for (float logit : row) {
                    assertTrue(Float.isFinite(logit));
                }
            }
            assertFalse(Arrays.equals(all[0], all[1]), "different positions give different logits");
            assertMessage(() -> reference.logits(new int[] {96}), "token 96 at position 0 is outside");
        }
    }

    @Test
    void groupedQueryAttentionEqualsItsExplicitRepetition(@TempDir Path dir) {
        LlamaConfig grouped = TinyLlama.config(false);
        Map<String, float[]> weights = TinyLlama.write(dir.resolve("grouped"), grouped, SEED, false);
        int group = grouped.heads() / grouped.keyValueHeads();
        int d = grouped.headDim();
        int h = grouped.hiddenSize();
        LlamaConfig repeated = new LlamaConfig(h, grouped.intermediateSize(), grouped.layers(), grouped.heads(),
                grouped.heads(), d, grouped.rmsNormEps(), grouped.ropeTheta(), grouped.ropeScaling(), false,
                grouped.vocabSize(), grouped.maxPositionEmbeddings(), grouped.bosTokenId(), grouped.eosTokenIds());
        Map<String, float[]> expanded = new LinkedHashMap<>(weights);
        for (Map.Entry<String, float[]> e : weights.entrySet()) {
            if (e.getKey().endsWith("k_proj.weight") || e.getKey().endsWith("v_proj.weight")) {
                float[] out = new float[grouped.heads() * d * h];
                for (int head = 0; head < grouped.heads(); head++) {
                    System.arraycopy(e.getValue(), head / group * d * h, out, head * d * h, d * h);
                }
                expanded.put(e.getKey(), out);
            }
        }
        TinyLlama.write(dir.resolve("repeated"), repeated, expanded, true);
        int[] tokens = {3, 1, 4, 1, 5, 9, 2, 6};
        try (LlamaCheckpoint a = LlamaCheckpoint.open(dir.resolve("grouped"));
                LlamaCheckpoint b = LlamaCheckpoint.open(dir.resolve("repeated"))) {
            float[][] logitsA = new LlamaCpuReference(a).logits(tokens);
            float[][] logitsB = new LlamaCpuReference(b).logits(tokens);
            for (int t = 0; t < tokens.length; t++) {
                assertArrayEquals(logitsA[t], logitsB[t], 0f, "position " + t);
            }
        }
    }

    private static void truncate(Path file, long size) throws Exception {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(size);
        }
    }

    private static byte[] littleEndian(long value) {
        byte[] out = new byte[8];
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (value >>> (8 * i));
        }
        return out;
    }
}
