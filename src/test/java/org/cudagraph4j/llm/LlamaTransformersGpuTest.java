package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The decoder against Hugging Face {@code transformers}' {@code LlamaForCausalLM} on checkpoints made
 * by {@code benchmarks/native/llama_reference.py}: random weights from a fixed seed, saved with
 * {@code save_pretrained}, and the reference logits of a prompt and of each teacher-forced step, from
 * the BF16 model and from the same weights in FP32. The folders come from the environment variable
 * {@code CG4J_LLAMA_REFERENCES} (comma-separated); without it the test is skipped.
 *
 * <p>The tolerance is derived from transformers itself: its own BF16 run differs from FP32 by some
 * relative L2 error per step, and ours, which keeps the residual stream in FP32 and rounds fewer
 * intermediates, must differ from FP32 by no more than that. With random weights the top logits are
 * near ties, so the argmax is compared only where FP32's margin between its first two tokens exceeds
 * both runs' errors, and the top-10 sets must overlap in at least 8 tokens.
 */
@GpuTest
class LlamaTransformersGpuTest {
    static Stream<Path> references() {
        String property = System.getenv().getOrDefault("CG4J_LLAMA_REFERENCES", "");
        assumeTrue(!property.isBlank(), "CG4J_LLAMA_REFERENCES is not set: run benchmarks/native/llama_reference.py"
                + " on the GPU host and name its output folders there");
        return Arrays.stream(property.split(",")).map(Path::of);
    }

    @ParameterizedTest
    @MethodSource("references")
    void logitsMatchTransformersWithinItsOwnBf16Error(Path folder) throws Exception {
        assertTrue(Files.isDirectory(folder), folder + " is not a folder");
        try (Arena arena = Arena.ofConfined()) {
            Map<String, LlamaCheckpoint.Tensor> reference =
                    LlamaCheckpoint.readSafetensors(folder.resolve("reference.safetensors"), arena);
            int[] tokens = ints(reference.get("tokens"));
            float[][] fp32 = rows(reference.get("logits_fp32"));
            float[][] bf16 = rows(reference.get("logits_bf16"));
            int steps = fp32.length - 1;
            int promptLength = tokens.length - steps;
            int[] prompt = Arrays.copyOf(tokens, promptLength);
            int[] forced = Arrays.copyOfRange(tokens, promptLength, tokens.length);
            try (LlamaDecoder decoder = LlamaDecoder.load(TestData.device(), folder, 1, tokens.length + 1)) {
                float[][] ours = decoder.scoreLogits(prompt, Arrays.copyOf(forced, steps));
                assertEquals(fp32.length, ours.length);
                for (int s = 0; s < ours.length; s++) {
                    double oursError = Logits.relativeL2(ours[s], fp32[s]);
                    double theirs = Logits.relativeL2(bf16[s], fp32[s]);
                    assertTrue(oursError <= theirs, folder.getFileName() + " step " + s + ": relative L2 error "
                            + oursError + " against FP32, transformers' BF16 run has " + theirs);
                    assertTrue(overlap(Logits.top(ours[s], 10), Logits.top(fp32[s], 10)) >= 8, "step " + s + ": top-10 sets differ");
                    int[] best = Logits.top(fp32[s], 2);
                    double margin = fp32[s][best[0]] - fp32[s][best[1]];
                    double bound = 2 * (maxAbsDiff(ours[s], fp32[s]) + maxAbsDiff(bf16[s], fp32[s]));
                    if (margin > bound) {
                        assertEquals(best[0], Logits.argmax(ours[s]), "step " + s + ": argmax");
                    }
                }
            }
        }
    }

    private static int[] ints(LlamaCheckpoint.Tensor tensor) {
        return tensor.data().toArray(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
    }

    private static float[][] rows(LlamaCheckpoint.Tensor tensor) {
        long[] shape = tensor.shape();
        int n = (int) shape[0];
        int v = (int) shape[1];
        float[][] out = new float[n][];
        MemorySegment data = tensor.data();
        for (int i = 0; i < n; i++) {
            out[i] = data.asSlice(4L * i * v, 4L * v)
                    .toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
        }
        return out;
    }

    private static double maxAbsDiff(float[] a, float[] b) {
        double max = 0;
        for (int i = 0; i < a.length; i++) {
            max = Math.max(max, Math.abs(a[i] - b[i]));
        }
        return max;
    }

    private static int overlap(int[] a, int[] b) {
        List<Integer> bs = Arrays.stream(b).boxed().toList();
        return (int) Arrays.stream(a).filter(bs::contains).count();
    }
}
