package org.cudagraph4j.benchmarks.server;

import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.cudagraph4j.llm.Sampling;

/**
 * A generative model the server serves through the Open Inference Protocol's generate extension
 * ({@code /generate}, {@code /generate_stream}). {@link LlamaGenerator} runs a Llama checkpoint on
 * the GPU; the server's tests use a deterministic stand-in.
 *
 * <p>Thread safety: implementations take {@link #generate} from many request threads at once.
 */
public interface TextGenerator extends AutoCloseable {
    /** The tokens a request generates when it does not say: 64, or fewer where the sequence has less room. */
    int DEFAULT_MAX_TOKENS = 64;

    /** The model's name in the URLs. */
    String name();

    /** Whether requests can be served now. */
    boolean ready();

    /**
     * Starts generating a continuation of {@code prompt}.
     *
     * @param prompt the text, tokenized by the model (with its begin-of-text token)
     * @param parameters how many tokens and how to pick them
     * @param text receives each token's completed text in order, never an empty piece and never half a
     *     character; it runs on the generator's own thread and must not block. The pieces together are
     *     the generated text without special tokens
     * @return the running generation
     * @throws IllegalArgumentException if the request does not fit the model, the message naming the
     *     request's field ({@code text_input} or {@code parameters.max_tokens})
     * @throws java.util.concurrent.RejectedExecutionException if the model cannot take a request now
     *     (its queue is full, it is closed or has failed)
     */
    Generation generate(String prompt, Parameters parameters, Consumer<String> text);

    /** Stops the model: running generations end with a {@link java.util.concurrent.CancellationException}. */
    @Override
    void close();

    /**
     * How a request generates.
     *
     * @param maxTokens the most tokens to generate; empty for {@link #DEFAULT_MAX_TOKENS}, or the room the
     *     sequence has left if that is less
     * @param sampling how to pick each token
     */
    record Parameters(OptionalInt maxTokens, Sampling sampling) {
        /** Checks the parameters. */
        public Parameters {
            Objects.requireNonNull(maxTokens, "maxTokens");
            Objects.requireNonNull(sampling, "sampling");
            if (maxTokens.isPresent() && maxTokens.getAsInt() < 1) {
                throw new IllegalArgumentException("maxTokens must be at least 1, got " + maxTokens.getAsInt());
            }
        }
    }

    /**
     * How a generation ended.
     *
     * @param promptTokens the prompt's tokens
     * @param generatedTokens the tokens generated, the stop token included
     * @param finishReason {@code "stop"} for a stop token, {@code "length"} for the token limit
     */
    record Completion(int promptTokens, int generatedTokens, String finishReason) {}

    /** One running generation. Thread safety: usable from any thread. */
    interface Generation {
        /**
         * Completes once every piece of text has been given, or fails: with a
         * {@link java.util.concurrent.CancellationException} when cancelled or the model closed.
         */
        CompletableFuture<Completion> completion();

        /** Ends the generation early and frees what it holds; no effect once it has ended. */
        void cancel();
    }
}
