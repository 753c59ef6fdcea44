package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Continuous batching: requests arriving at any time, more of them than the decoder has rows, each
 * get exactly the tokens the decoder makes for them alone; cancelled requests free their rows; the
 * decoder is the engine's while it runs.
 */
@GpuTest
class GenerationEngineGpuTest {
    private static final LlamaConfig CONFIG = new LlamaConfig(256, 512, 2, 4, 2, 64, 1e-5, 500000.0,
            new LlamaConfig.RopeScaling(32.0, 1.0, 4.0, 64), true, 3000, 512, 1, List.of(2));

    @TempDir
    Path dir;

    private final CudaDevice device = TestData.device();

    @Test
    void moreRequestsThanRowsEachGetTheirOwnTokens() throws Exception {
        TinyLlama.write(dir, CONFIG, 7, false);
        SplittableRandom random = new SplittableRandom(3);
        List<int[]> prompts = new ArrayList<>();
        List<Integer> limits = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            prompts.add(random.ints(random.nextInt(1, 40), 4, CONFIG.vocabSize()).toArray());
            limits.add(random.nextInt(1, 30));
        }
        try (LlamaDecoder decoder = LlamaDecoder.load(device, dir, 4, 96)) {
            List<int[]> alone = new ArrayList<>();
            for (int i = 0; i < prompts.size(); i++) {
                // Both end at the checkpoint's end-of-sequence token or the limit.
                alone.add(decoder.generate(prompts.get(i), GenerationOptions.greedy(limits.get(i))));
            }
            List<GenerationEngine.Generation> running = new ArrayList<>();
            List<ConcurrentLinkedQueue<Integer>> heard = new ArrayList<>();
            try (GenerationEngine engine = GenerationEngine.start(decoder, 16)) {
                assertThrows(IllegalStateException.class, () -> decoder.generate(new int[] {5},
                        GenerationOptions.greedy(1)));
                for (int i = 0; i < prompts.size(); i++) {
                    ConcurrentLinkedQueue<Integer> tokens = new ConcurrentLinkedQueue<>();
                    heard.add(tokens);
                    running.add(engine.submit(prompts.get(i), limits.get(i), Sampling.greedy(),
                            (sequence, token) -> tokens.add(token)));
                    if (i % 3 == 2) {
                        Thread.sleep(2);
                    }
                }
                for (int i = 0; i < prompts.size(); i++) {
                    int[] tokens = running.get(i).completion().get(60, TimeUnit.SECONDS);
                    assertArrayEquals(alone.get(i), tokens, "request " + i);
                    assertArrayEquals(tokens, heard.get(i).stream().mapToInt(Integer::intValue).toArray());
                }
            }
            assertEquals(alone.getFirst().length, decoder.generate(prompts.getFirst(),
                    GenerationOptions.greedy(limits.getFirst())).length, "the decoder is free again");
        }
    }

    @Test
    void cancelledAndRefusedRequestsAreNamed() throws Exception {
        TinyLlama.write(dir, CONFIG, 7, false);
        try (LlamaDecoder decoder = LlamaDecoder.load(device, dir, 1, 64);
                GenerationEngine engine = GenerationEngine.start(decoder, 1)) {
            GenerationEngine.Generation first = engine.submit(new int[] {5, 6, 7}, 60, Sampling.greedy(), null);
            GenerationEngine.Generation second = engine.submit(new int[] {8, 9}, 5, Sampling.greedy(), null);
            assertTrue(assertThrows(IllegalStateException.class,
                    () -> engine.submit(new int[] {8}, 5, Sampling.greedy(), null)).getMessage().contains("full"));
            first.cancel();
            assertThrows(CancellationException.class, () -> first.completion().join());
            assertEquals(5, second.completion().get(60, TimeUnit.SECONDS).length);
            assertThrows(IllegalArgumentException.class, () -> engine.submit(new int[] {1}, 64, Sampling.greedy(),
                    null));
            assertThrows(IllegalArgumentException.class, () -> engine.submit(new int[] {3000}, 1, Sampling.greedy(),
                    null));
            assertThrows(IllegalStateException.class, decoder::close);
            engine.close();
            assertTrue(assertThrows(IllegalStateException.class,
                    () -> engine.submit(new int[] {1}, 1, Sampling.greedy(), null)).getMessage().contains("closed"));
        }
    }
}
