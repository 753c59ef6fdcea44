package org.cudagraph4j.benchmarks;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.llm.DecodeMode;
import org.cudagraph4j.llm.GenerationOptions;
import org.cudagraph4j.llm.LlamaConfig;
import org.cudagraph4j.llm.LlamaDecoder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Decode speed of {@link LlamaDecoder} on a checkpoint, in the three launch modes, timed as the
 * PyTorch peers ({@code native/llama_torch.py}) time theirs, so one run on one GPU gives both sides.
 * For each batch: {@code B} random prompts of {@code --prompt-len} tokens, greedy, no stop token, so
 * every sequence makes exactly {@code --new-tokens} tokens. The prefill (which samples the first
 * token) is timed alone; decode time is the whole generation's minus it, over the
 * {@code new-tokens - 1} decode steps. Medians of {@code --repeats} runs after a warm-up run. Each
 * mode's tokens are checked equal to the device loop's.
 * Prints {@code LLAMA cg4j <mode>: batch B: prefill P ms, S ms/step, T tokens/s}.
 */
public final class LlamaDecode {
    private LlamaDecode() {}

    public static void main(String[] args) {
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line. */
    @Command(name = "LlamaDecode", mixinStandardHelpOptions = true,
            description = "Llama decode tokens/s through cudagraph4j: eager, one graph per step, the device loop.")
    static final class Main implements Callable<Integer> {
        @Option(names = "--model", required = true, description = "checkpoint directory")
        Path model;

        @Option(names = "--prompt-len", description = "prompt tokens (default: ${DEFAULT-VALUE})")
        int promptLength = 128;

        @Option(names = "--new-tokens", description = "tokens generated per sequence (default: ${DEFAULT-VALUE})")
        int newTokens = 256;

        @Option(names = "--batches", split = ",", description = "batch sizes (default: ${DEFAULT-VALUE})")
        int[] batches = {1, 4, 16};

        @Option(names = "--repeats", description = "timed runs per cell (default: ${DEFAULT-VALUE})")
        int repeats = 5;

        @Option(names = "--modes", split = ",", description = "launch modes (default: all)")
        DecodeMode[] modes = DecodeMode.values();

        @Override
        public Integer call() {
            CudaDevice device = Cuda.device(0);
            int maxBatch = Arrays.stream(batches).max().orElse(1);
            long load = System.nanoTime();
            try (LlamaDecoder decoder = LlamaDecoder.load(device, model, maxBatch, promptLength + newTokens)) {
                LlamaConfig c = decoder.config();
                System.out.printf("cudagraph4j LlamaDecoder on %s: %d layers, hidden %d, vocab %d, %.3f GB of BF16"
                        + " weights, loaded in %.1f s%n", device.properties().name(), c.layers(), c.hiddenSize(),
                        c.vocabSize(), c.weightBytes() / 1e9, (System.nanoTime() - load) / 1e9);
                SplittableRandom random = new SplittableRandom(0);
                for (int batch : batches) {
                    List<int[]> prompts = new ArrayList<>();
                    for (int i = 0; i < batch; i++) {
                        prompts.add(random.ints(promptLength, 0, Math.min(c.vocabSize(), 128000)).toArray());
                    }
                    GenerationOptions prefill = GenerationOptions.greedy(1).withStopTokens();
                    GenerationOptions full = GenerationOptions.greedy(newTokens).withStopTokens();
                    List<int[]> reference = decoder.generate(prompts, full);
                    double prefillMs = median(repeats, () -> decoder.generate(prompts, prefill));
                    for (DecodeMode mode : modes) {
                        GenerationOptions options = full.withMode(mode);
                        List<int[]> tokens = decoder.generate(prompts, options);
                        for (int i = 0; i < batch; i++) {
                            if (!Arrays.equals(reference.get(i), tokens.get(i))) {
                                throw new IllegalStateException(mode + " made other tokens than the device loop for"
                                        + " sequence " + i + " of batch " + batch);
                            }
                        }
                        double totalMs = median(repeats, () -> decoder.generate(prompts, options));
                        double stepMs = (totalMs - prefillMs) / (newTokens - 1);
                        System.out.printf("LLAMA cg4j %s: batch %d: prefill %.2f ms, %.4f ms/step, %.1f tokens/s,"
                                + " total %.1f ms%n", mode.name().toLowerCase(java.util.Locale.ROOT), batch, prefillMs,
                                stepMs, batch * 1000.0 / stepMs, totalMs);
                    }
                }
            }
            return 0;
        }
    }

    private static double median(int repeats, Runnable run) {
        run.run();
        double[] ms = new double[repeats];
        for (int i = 0; i < repeats; i++) {
            long start = System.nanoTime();
            run.run();
            ms[i] = (System.nanoTime() - start) / 1e6;
        }
        Arrays.sort(ms);
        return ms[repeats / 2];
    }
}
