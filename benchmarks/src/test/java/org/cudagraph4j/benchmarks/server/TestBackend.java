package org.cudagraph4j.benchmarks.server;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.cudagraph4j.serving.EngineMetrics;

/**
 * A stand-in model for the server's tests: rows of one width in and out, answered by a function;
 * ready unless told otherwise, without engine metrics unless given some, and with nothing to release
 * on close. A test that needs more (state to hold requests, a pool to shut down) subclasses it and
 * overrides what it needs.
 */
class TestBackend implements InferenceBackend {
    private final int width;
    private final Function<float[], CompletableFuture<float[]>> answer;
    private final BooleanSupplier ready;
    private final EngineMetrics metrics;

    /**
     * A backend that answers every request with {@code answer}.
     *
     * @param width elements per row, in and out
     * @param answer what {@link #infer(float[])} returns for the rows
     */
    TestBackend(int width, Function<float[], CompletableFuture<float[]>> answer) {
        this(width, answer, () -> true, null);
    }

    /** A backend for a subclass that overrides {@link #infer(float[])}. */
    TestBackend(int width) {
        this(width, rows -> {
            throw new UnsupportedOperationException("the subclass answers");
        });
    }

    private TestBackend(int width, Function<float[], CompletableFuture<float[]>> answer, BooleanSupplier ready,
            EngineMetrics metrics) {
        this.width = width;
        this.answer = answer;
        this.ready = ready;
        this.metrics = metrics;
    }

    /** One that refuses every request, as a full engine's queue does. */
    static TestBackend failing(int width, Supplier<RuntimeException> failure) {
        return new TestBackend(width, rows -> CompletableFuture.failedFuture(failure.get()));
    }

    /** A backend made with an answer function, ready only while {@code ready} says so. */
    TestBackend readyWhile(BooleanSupplier ready) {
        return new TestBackend(width, answer, ready, metrics);
    }

    /** A backend made with an answer function, with {@code metrics} as its engine's counters. */
    TestBackend withMetrics(EngineMetrics metrics) {
        return new TestBackend(width, answer, ready, metrics);
    }

    @Override
    public int inputWidth() {
        return width;
    }

    @Override
    public int outputWidth() {
        return width;
    }

    @Override
    public boolean ready() {
        return ready.getAsBoolean();
    }

    @Override
    public CompletableFuture<float[]> infer(float[] rows) {
        return answer.apply(rows);
    }

    @Override
    public Optional<EngineMetrics> metrics() {
        return Optional.ofNullable(metrics);
    }

    @Override
    public void close() {}
}
