package org.cudagraph4j.llm;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Text generation for many clients on one {@link LlamaDecoder}, with continuous batching: every
 * decode step (one CUDA graph over all of the decoder's rows) advances every running sequence by a
 * token, a request waiting for a row is prefilled between two steps as soon as one is free, and a
 * finished or cancelled sequence frees its row at once. Tokens reach each request's
 * {@link TokenListener} as they are made.
 *
 * <pre>{@code
 * try (GenerationEngine engine = GenerationEngine.start(decoder, 64)) {
 *     Generation g = engine.submit(prompt, 128, Sampling.greedy(), (sequence, token) -> send(token));
 *     int[] tokens = g.completion().join();
 * }
 * }</pre>
 *
 * <p>A request ends at the decoder's stop tokens (the checkpoint's {@code eos_token_id}) or its
 * token limit. The engine owns the decoder while it runs: the decoder's own {@code generate} refuses.
 *
 * <p>Thread safety: {@link #submit} and {@link Generation#cancel()} may be called from any thread.
 * Listeners run on the engine's scheduler thread, in order for each request; they must return
 * quickly (hand the token to another thread to write it to a socket). Close once.
 */
public final class GenerationEngine implements AutoCloseable {
    private final LlamaDecoder decoder;
    private final int maxQueued;
    private final int[] stops;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final ArrayDeque<Generation> queue = new ArrayDeque<>();
    private final Generation[] rows;
    private final int[] delivered;
    private final Thread scheduler;
    private boolean closing;
    private volatile Throwable failure;

    private GenerationEngine(LlamaDecoder decoder, int maxQueued) {
        this.decoder = decoder;
        this.maxQueued = maxQueued;
        this.stops = decoder.config().eosTokenIds().stream().limit(LlamaDecoder.MAX_STOP_TOKENS)
                .mapToInt(Integer::intValue).toArray();
        this.rows = new Generation[decoder.maxBatch()];
        this.delivered = new int[decoder.maxBatch()];
        this.scheduler = Thread.ofPlatform().name("cg4j-generation").daemon().unstarted(this::run);
    }

    /**
     * Starts serving {@code decoder}'s rows.
     *
     * @param decoder the decoder; the engine owns it until closed
     * @param maxQueued the most requests that may wait for a row; more are refused
     * @return the running engine
     * @throws IllegalArgumentException if {@code maxQueued} is negative
     * @throws IllegalStateException if the decoder is closed or already served
     */
    public static GenerationEngine start(LlamaDecoder decoder, int maxQueued) {
        Objects.requireNonNull(decoder, "decoder");
        if (maxQueued < 0) {
            throw new IllegalArgumentException("maxQueued must not be negative, got " + maxQueued);
        }
        GenerationEngine engine = new GenerationEngine(decoder, maxQueued);
        decoder.attach(engine, engine.stops);
        engine.scheduler.start();
        return engine;
    }

    /**
     * Queues a request.
     *
     * @param prompt the prompt's token ids, at least one
     * @param maxNewTokens the most tokens to make, at least 1; prompt and tokens must fit the decoder's
     *     {@code maxSequence}
     * @param sampling how to pick tokens
     * @param listener receives each token as it is made, on the scheduler thread, with sequence 0 (a request
     *     is one sequence); null for none
     * @return the request's handle
     * @throws IllegalArgumentException if the prompt or the limit does not fit the decoder
     * @throws IllegalStateException if the queue is full, or the engine is closed or has failed
     */
    public Generation submit(int[] prompt, int maxNewTokens, Sampling sampling, TokenListener listener) {
        Objects.requireNonNull(prompt, "prompt");
        Objects.requireNonNull(sampling, "sampling");
        if (prompt.length == 0) {
            throw new IllegalArgumentException("prompt is empty; a prompt needs at least one token");
        }
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("maxNewTokens must be at least 1, got " + maxNewTokens);
        }
        if (prompt.length + maxNewTokens > decoder.maxSequence()) {
            throw new IllegalArgumentException("the prompt has " + prompt.length + " tokens; with maxNewTokens "
                    + maxNewTokens + " it needs " + (prompt.length + maxNewTokens) + " positions, more than the"
                    + " decoder's maxSequence " + decoder.maxSequence());
        }
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= decoder.config().vocabSize()) {
                throw new IllegalArgumentException("prompt has token " + prompt[i] + " at index " + i
                        + ", outside the vocabulary of " + decoder.config().vocabSize());
            }
        }
        Generation generation = new Generation(this, prompt.clone(), maxNewTokens, sampling, listener);
        lock.lock();
        try {
            if (closing) {
                throw new IllegalStateException("the generation engine is closed");
            }
            if (failure != null) {
                throw new IllegalStateException("the generation engine failed: " + failure, failure);
            }
            if (queue.size() >= maxQueued + freeRows()) {
                throw new IllegalStateException("the generation queue is full (" + maxQueued + " waiting)");
            }
            queue.add(generation);
            work.signalAll();
        } finally {
            lock.unlock();
        }
        return generation;
    }

    /** {@return how many requests are decoding now} */
    public int running() {
        lock.lock();
        try {
            return decoder.maxBatch() - freeRows();
        } finally {
            lock.unlock();
        }
    }

    /** {@return how many requests wait for a row} */
    public int queued() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    private int freeRows() {
        int free = 0;
        for (Generation g : rows) {
            if (g == null) {
                free++;
            }
        }
        return free;
    }

    private void run() {
        try {
            while (true) {
                lock.lock();
                try {
                    while (!closing && queue.isEmpty() && freeRows() == rows.length) {
                        work.awaitUninterruptibly();
                    }
                    if (closing) {
                        break;
                    }
                } finally {
                    lock.unlock();
                }
                admitWaiting();
                retireCancelled();
                if (freeRows() < rows.length) {
                    decoder.stepAllRows();
                    deliver();
                }
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            finish();
        }
    }

    /** Prefills waiting requests into free rows; their first tokens arrive with the next delivery. */
    private void admitWaiting() {
        boolean admitted = false;
        for (int row = 0; row < rows.length; row++) {
            if (rows[row] != null) {
                continue;
            }
            Generation next;
            lock.lock();
            try {
                next = queue.poll();
                while (next != null && next.completion().isDone()) {
                    next = queue.poll();
                }
                if (next == null) {
                    break;
                }
                rows[row] = next;
            } finally {
                lock.unlock();
            }
            delivered[row] = 0;
            decoder.admit(row, next.prompt, next.maxNewTokens, next.sampling);
            admitted = true;
        }
        if (admitted) {
            decoder.synchronizeStream();
            deliver();
        }
    }

    private void retireCancelled() {
        for (int row = 0; row < rows.length; row++) {
            Generation g = rows[row];
            if (g != null && g.completion().isDone()) {
                decoder.retire(row);
                free(row);
            }
        }
    }

    private void deliver() {
        for (int row = 0; row < rows.length; row++) {
            Generation g = rows[row];
            if (g == null) {
                continue;
            }
            int published = Math.min(decoder.published(row), g.maxNewTokens);
            boolean ended = false;
            while (delivered[row] < published) {
                int token = decoder.token(row, delivered[row]++);
                g.tokens[g.count++] = token;
                if (g.listener != null && !g.completion().isDone()) {
                    try {
                        g.listener.onToken(0, token);
                    } catch (RuntimeException e) {
                        g.completion().completeExceptionally(e);
                    }
                }
                ended = g.count >= g.maxNewTokens || contains(stops, token);
            }
            if (ended) {
                g.completion().complete(Arrays.copyOf(g.tokens, g.count));
                free(row);
            } else if (g.completion().isDone()) {
                decoder.retire(row);
                free(row);
            }
        }
    }

    private void free(int row) {
        lock.lock();
        try {
            rows[row] = null;
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void finish() {
        lock.lock();
        try {
            closing = true;
            Throwable cause = failure != null ? failure : new CancellationException("the generation engine closed");
            for (Generation g : queue) {
                g.completion().completeExceptionally(cause);
            }
            queue.clear();
            for (int row = 0; row < rows.length; row++) {
                if (rows[row] != null) {
                    rows[row].completion().completeExceptionally(cause);
                    rows[row] = null;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private static boolean contains(int[] values, int value) {
        for (int v : values) {
            if (v == value) {
                return true;
            }
        }
        return false;
    }

    /**
     * Stops the engine: waiting and running requests end with a {@link CancellationException}, and
     * the decoder is free for its own {@code generate} again. Idempotent.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            closing = true;
            work.signalAll();
        } finally {
            lock.unlock();
        }
        boolean interrupted = false;
        while (scheduler.isAlive()) {
            try {
                scheduler.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        decoder.detach();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "GenerationEngine[" + rows.length + " rows, " + decoder.config().layers() + " layers]";
    }

    /**
     * One request: its tokens so far and its completion.
     *
     * <p>Thread safety: {@link #cancel()} and {@link #completion()} may be used from any thread.
     */
    public static final class Generation {
        private final GenerationEngine engine;
        private final int[] prompt;
        private final int maxNewTokens;
        private final Sampling sampling;
        private final TokenListener listener;
        private final int[] tokens;
        private int count;
        private final CompletableFuture<int[]> completion = new CompletableFuture<>();

        Generation(GenerationEngine engine, int[] prompt, int maxNewTokens, Sampling sampling,
                TokenListener listener) {
            this.engine = engine;
            this.prompt = prompt;
            this.maxNewTokens = maxNewTokens;
            this.sampling = sampling;
            this.listener = listener;
            this.tokens = new int[maxNewTokens];
        }

        /** {@return the generated tokens once the request ends, ending with the stop token if one ended it} */
        public CompletableFuture<int[]> completion() {
            return completion;
        }

        /**
         * Ends the request: its row is freed before the next step, and {@link #completion()} ends with
         * a {@link CancellationException}. No effect on a finished request.
         */
        public void cancel() {
            if (completion.cancel(false)) {
                engine.lock.lock();
                try {
                    engine.work.signalAll();
                } finally {
                    engine.lock.unlock();
                }
            }
        }
    }
}
