package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The decoder on the GPU against the FP32 CPU reference, on small random checkpoints written by
 * {@link TinyLlama}: logits under teacher forcing, and generation's invariants (every launch mode and
 * every batch makes the same tokens, stop tokens end a sequence, sampling repeats with its seed).
 */
@GpuTest
class LlamaDecoderGpuTest {
    /** Grouped-query attention (4 query heads on 2 kv heads) at head dimension 64, tied embeddings. */
    private static final LlamaConfig GQA_64 = new LlamaConfig(256, 512, 2, 4, 2, 64, 1e-5, 500000.0,
            new LlamaConfig.RopeScaling(32.0, 1.0, 4.0, 64), true, 3000, 512, 1, List.of(2));
    /** Head dimension 128, one kv head for both query heads, untied LM head, two shards. */
    private static final LlamaConfig MQA_128 = new LlamaConfig(192, 384, 3, 2, 1, 128, 1e-6, 10000.0, null, false,
            5000, 512, 1, List.of(2, 3));

    @TempDir
    Path dir;

    private final CudaDevice device = TestData.device();

    private Path write(LlamaConfig config, boolean sharded) {
        TinyLlama.write(dir, config, 7, sharded);
        return dir;
    }

    private static int[] randomTokens(int n, int vocab, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] tokens = new int[n];
        for (int i = 0; i < n; i++) {
            tokens[i] = random.nextInt(4, vocab);
        }
        return tokens;
    }

    private void checkAgainstCpu(LlamaConfig config, boolean sharded) {
        Path checkpoint = write(config, sharded);
        // 21 prompt tokens: a chunk of 16 rows and one of 5; then 6 single-row decode steps.
        int[] prompt = randomTokens(21, config.vocabSize(), 1);
        int[] continuation = randomTokens(6, config.vocabSize(), 2);
        int[] all = new int[prompt.length + continuation.length];
        System.arraycopy(prompt, 0, all, 0, prompt.length);
        System.arraycopy(continuation, 0, all, prompt.length, continuation.length);
        float[][] expected;
        try (LlamaCheckpoint weights = LlamaCheckpoint.open(checkpoint)) {
            expected = new LlamaCpuReference(weights).logits(all);
        }
        try (LlamaDecoder decoder = LlamaDecoder.load(device, checkpoint, 2, 64)) {
            float[][] actual = decoder.scoreLogits(prompt, continuation);
            assertEquals(continuation.length + 1, actual.length);
            for (int s = 0; s < actual.length; s++) {
                float[] want = expected[prompt.length - 1 + s];
                double error = Logits.relativeL2(actual[s], want);
                // BF16 rounding of the projections' inputs (2^-9 relative each) through a few layers.
                assertTrue(error < 2e-2, "step " + s + ": relative L2 error " + error);
            }
        }
    }

    @Test
    void logitsMatchTheCpuReferenceWithGroupedQueryAttention() {
        checkAgainstCpu(GQA_64, false);
    }

    @Test
    void logitsMatchTheCpuReferenceAtHeadDim128FromShards() {
        checkAgainstCpu(MQA_128, true);
    }

    @ParameterizedTest
    @EnumSource(DecodeMode.class)
    void greedyGenerationFollowsTheArgmaxOfItsOwnLogits(DecodeMode mode) {
        Path checkpoint = write(GQA_64, false);
        int[] prompt = randomTokens(19, GQA_64.vocabSize(), 3);
        try (LlamaDecoder decoder = LlamaDecoder.load(device, checkpoint, 4, 64)) {
            GenerationOptions options = GenerationOptions.greedy(12).withStopTokens().withMode(mode);
            int[] generated = decoder.generate(prompt, options);
            assertEquals(12, generated.length);
            float[][] logits = decoder.scoreLogits(prompt, java.util.Arrays.copyOf(generated, generated.length - 1));
            for (int s = 0; s < generated.length; s++) {
                assertEquals(Logits.argmax(logits[s]), generated[s], "token " + s);
            }
        }
    }

    @Test
    void everyModeAndBatchMakesTheSameTokens() {
        Path checkpoint = write(GQA_64, false);
        List<int[]> prompts = List.of(randomTokens(3, GQA_64.vocabSize(), 4), randomTokens(17, GQA_64.vocabSize(), 5),
                randomTokens(9, GQA_64.vocabSize(), 6), randomTokens(30, GQA_64.vocabSize(), 7));
        try (LlamaDecoder decoder = LlamaDecoder.load(device, checkpoint, 4, 64)) {
            for (Sampling sampling : List.of(Sampling.greedy(), Sampling.of(0.8f, 40, 0.9f, 11))) {
                GenerationOptions options = GenerationOptions.greedy(20).withStopTokens().withSampling(sampling);
                List<int[]> alone = new ArrayList<>();
                for (int i = 0; i < prompts.size(); i++) {
                    // Sequence i of a batch samples with seed + i.
                    Sampling own = sampling.isGreedy() ? sampling
                            : Sampling.of(sampling.temperature(), sampling.topK(), sampling.topP(), sampling.seed() + i);
                    alone.add(decoder.generate(prompts.get(i), options.withSampling(own)
                            .withMode(DecodeMode.EAGER)));
                }
                for (DecodeMode mode : DecodeMode.values()) {
                    List<int[]> batch = decoder.generate(prompts, options.withMode(mode));
                    for (int i = 0; i < prompts.size(); i++) {
                        assertArrayEquals(alone.get(i), batch.get(i), sampling + " " + mode + " sequence " + i);
                    }
                }
            }
        }
    }

    @Test
    void aStopTokenEndsItsSequenceAndTheListenerSeesEveryToken() {
        Path checkpoint = write(GQA_64, false);
        int[] prompt = randomTokens(10, GQA_64.vocabSize(), 8);
        try (LlamaDecoder decoder = LlamaDecoder.load(device, checkpoint, 1, 64)) {
            int[] free = decoder.generate(prompt, GenerationOptions.greedy(16).withStopTokens());
            int stop = free[4];
            int firstStop = 0;
            while (free[firstStop] != stop) {
                firstStop++;
            }
            for (DecodeMode mode : DecodeMode.values()) {
                List<Integer> heard = new ArrayList<>();
                int[] stopped = decoder.generate(prompt, GenerationOptions.greedy(16).withStopTokens(stop)
                        .withMode(mode).withListener((sequence, token) -> {
                            assertEquals(0, sequence);
                            heard.add(token);
                        }));
                assertArrayEquals(java.util.Arrays.copyOf(free, firstStop + 1), stopped, mode.toString());
                assertArrayEquals(stopped, heard.stream().mapToInt(Integer::intValue).toArray(), mode.toString());
            }
        }
    }

    @Test
    void sampledTokensRepeatWithTheirSeedAndComeFromTheTopK() {
        Path checkpoint = write(GQA_64, false);
        int[] prompt = randomTokens(12, GQA_64.vocabSize(), 9);
        try (LlamaDecoder decoder = LlamaDecoder.load(device, checkpoint, 1, 64)) {
            GenerationOptions options = GenerationOptions.greedy(24).withStopTokens()
                    .withSampling(Sampling.of(1.5f, 5, 1f, 42));
            int[] first = decoder.generate(prompt, options);
            assertArrayEquals(first, decoder.generate(prompt, options));
            int[] other = decoder.generate(prompt, options.withSampling(Sampling.of(1.5f, 5, 1f, 43)));
            assertTrue(!java.util.Arrays.equals(first, other), "another seed gave the same 24 tokens");
            float[][] logits = decoder.scoreLogits(prompt, java.util.Arrays.copyOf(first, first.length - 1));
            for (int s = 0; s < first.length; s++) {
                int rank = 0;
                for (float v : logits[s]) {
                    if (v > logits[s][first[s]]) {
                        rank++;
                    }
                }
                assertTrue(rank < 5, "token " + s + " ranks " + rank + ", outside the top 5");
            }
            int[] nucleus = decoder.generate(prompt, options.withSampling(Sampling.of(1f, 64, 1e-6f, 5)));
            assertArrayEquals(decoder.generate(prompt, GenerationOptions.greedy(24).withStopTokens()), nucleus,
                    "a top-p too small to keep more than the first token is greedy");
        }
    }

    @Test
    void badRequestsAreRefusedByName() {
        Path checkpoint = write(GQA_64, false);
        try (LlamaDecoder decoder = LlamaDecoder.load(device, checkpoint, 2, 32)) {
            GenerationOptions options = GenerationOptions.greedy(8);
            assertTrue(assertThrows(IllegalArgumentException.class, () -> decoder.generate(new int[0], options))
                    .getMessage().contains("empty"));
            assertTrue(assertThrows(IllegalArgumentException.class,
                    () -> decoder.generate(new int[] {1, 3000}, options)).getMessage().contains("token 3000"));
            assertTrue(assertThrows(IllegalArgumentException.class,
                    () -> decoder.generate(new int[30], options)).getMessage().contains("maxSequence"));
            assertTrue(assertThrows(IllegalArgumentException.class,
                    () -> decoder.generate(List.of(new int[] {1}, new int[] {1}, new int[] {1}), options))
                    .getMessage().contains("1 to 2 prompts"));
            assertThrows(IllegalStateException.class, () -> decoder.generate("text", options));
            decoder.close();
            assertThrows(IllegalStateException.class, () -> decoder.generate(new int[] {1}, options));
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LlamaDecoder.load(device, checkpoint, 17, 32))
                .getMessage().contains("maxBatch"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LlamaDecoder.load(device, checkpoint, 1, 4096))
                .getMessage().contains("max_position_embeddings"));
    }
}
