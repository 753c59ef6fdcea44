package org.cudagraph4j.llm;

import java.util.Arrays;
import java.util.Objects;

/**
 * What a generation makes: up to {@code maxNewTokens} tokens per sequence, picked by
 * {@code sampling}, ending early at any of {@code stopTokens} (kept as the last token), launched as
 * {@code mode} says, each token passed to {@code listener} as it arrives.
 *
 * <p>Thread safety: immutable; safe to share between threads.
 *
 * @param maxNewTokens the most tokens to make per sequence, at least 1
 * @param sampling how to pick tokens
 * @param stopTokens token ids that end a sequence, at most {@link LlamaDecoder#MAX_STOP_TOKENS}; null for the
 *     checkpoint's {@code eos_token_id}
 * @param mode how steps are launched
 * @param listener receives tokens as they are made; null for none
 */
public record GenerationOptions(int maxNewTokens, Sampling sampling, int[] stopTokens, DecodeMode mode,
        TokenListener listener) {
    /**
     * Checks the options.
     *
     * @throws IllegalArgumentException if {@code maxNewTokens} is below 1 or there are too many stop tokens
     */
    public GenerationOptions {
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("maxNewTokens must be at least 1, got " + maxNewTokens);
        }
        Objects.requireNonNull(sampling, "sampling");
        Objects.requireNonNull(mode, "mode");
        if (stopTokens != null) {
            if (stopTokens.length > LlamaDecoder.MAX_STOP_TOKENS) {
                throw new IllegalArgumentException("at most " + LlamaDecoder.MAX_STOP_TOKENS + " stop tokens, got "
                        + stopTokens.length);
            }
            stopTokens = stopTokens.clone();
        }
    }

    /**
     * Greedy decoding of up to {@code maxNewTokens} tokens, stopping at the checkpoint's end-of-sequence
     * tokens, in one device-side loop.
     *
     * @param maxNewTokens the most tokens per sequence
     * @return the options
     */
    public static GenerationOptions greedy(int maxNewTokens) {
        return new GenerationOptions(maxNewTokens, Sampling.greedy(), null, DecodeMode.DEVICE_LOOP, null);
    }

    /**
     * These options with another sampling.
     *
     * @param newSampling how to pick tokens
     * @return the new options
     */
    public GenerationOptions withSampling(Sampling newSampling) {
        return new GenerationOptions(maxNewTokens, newSampling, stopTokens, mode, listener);
    }

    /**
     * These options with other stop tokens.
     *
     * @param tokens the ids that end a sequence; none to run to {@code maxNewTokens}
     * @return the new options
     */
    public GenerationOptions withStopTokens(int... tokens) {
        return new GenerationOptions(maxNewTokens, sampling, tokens, mode, listener);
    }

    /**
     * These options with another launch mode.
     *
     * @param newMode how steps are launched
     * @return the new options
     */
    public GenerationOptions withMode(DecodeMode newMode) {
        return new GenerationOptions(maxNewTokens, sampling, stopTokens, newMode, listener);
    }

    /**
     * These options with a listener.
     *
     * @param newListener receives tokens as they are made
     * @return the new options
     */
    public GenerationOptions withListener(TokenListener newListener) {
        return new GenerationOptions(maxNewTokens, sampling, stopTokens, mode, newListener);
    }

    /** {@return a copy of the stop tokens, or null for the checkpoint's} */
    @Override
    public int[] stopTokens() {
        return stopTokens == null ? null : stopTokens.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof GenerationOptions o && maxNewTokens == o.maxNewTokens && sampling.equals(o.sampling)
                && Arrays.equals(stopTokens, o.stopTokens) && mode == o.mode && Objects.equals(listener, o.listener);
    }

    @Override
    public int hashCode() {
        return Objects.hash(maxNewTokens, sampling, Arrays.hashCode(stopTokens), mode, listener);
    }

    @Override
    public String toString() {
        return "GenerationOptions[maxNewTokens=" + maxNewTokens + ", sampling=" + sampling + ", stopTokens="
                + (stopTokens == null ? "eos" : Arrays.toString(stopTokens)) + ", mode=" + mode + "]";
    }
}
