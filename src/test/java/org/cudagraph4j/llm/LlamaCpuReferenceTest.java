package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CPU reference, which the GPU decoder is tested against, checked against Hugging Face
 * {@code transformers} itself: a small Llama (2 layers, 2 query heads on 1 kv head of 64, untied LM
 * head, llama3 RoPE scaling) saved by {@code save_pretrained} with random weights, and the logits of
 * its FP32 forward pass over a 12-token prompt and 32 teacher-forced tokens, both made by
 * {@code benchmarks/native/llama_reference.py --config tiny} (kept in the test resources).
 */
class LlamaCpuReferenceTest {
    private static final String[] FILES = {"config.json", "model.safetensors", "reference.safetensors"};

    @TempDir
    Path dir;

    @Test
    void logitsMatchTransformersFp32() throws IOException {
        for (String name : FILES) {
            try (InputStream in = getClass().getResourceAsStream("tiny-llama/" + name)) {
                Files.copy(in, dir.resolve(name));
            }
        }
        try (Arena arena = Arena.ofConfined(); LlamaCheckpoint checkpoint = LlamaCheckpoint.open(dir)) {
            Map<String, LlamaCheckpoint.Tensor> reference =
                    LlamaCheckpoint.readSafetensors(dir.resolve("reference.safetensors"), arena);
            int[] tokens = reference.get("tokens").data()
                    .toArray(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            LlamaCheckpoint.Tensor expected = reference.get("logits_fp32");
            int rows = (int) expected.shape()[0];
            int vocab = (int) expected.shape()[1];
            assertEquals(checkpoint.config().vocabSize(), vocab);
            float[][] logits = new LlamaCpuReference(checkpoint).logits(tokens);
            int first = tokens.length - rows;
            for (int r = 0; r < rows; r++) {
                float[] want = expected.data().asSlice(4L * r * vocab, 4L * vocab)
                        .toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
                float[] got = logits[first + r];
                double error = Logits.relativeL2(got, want);
                // Both are FP32 computations of the same BF16 weights; they differ in summation order only.
                assertTrue(error < 1e-5, "row " + r + ": relative L2 error " + error);
                assertEquals(Logits.argmax(want), Logits.argmax(got), "row " + r);
            }
            assertTrue(Arrays.stream(tokens).allMatch(t -> t >= 0 && t < vocab));
        }
    }
}
