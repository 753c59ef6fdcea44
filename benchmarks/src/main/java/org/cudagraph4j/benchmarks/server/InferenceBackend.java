package org.cudagraph4j.benchmarks.server;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.cudagraph4j.serving.EngineMetrics;

/**
 * What the server serves: rows in, rows out. {@link EngineBackend} runs the model on the GPU
 * through the serving engine; {@link CpuBackend} runs it on the CPU (a server without a GPU, and the
 * tests').
 */
public interface InferenceBackend extends AutoCloseable {
    /** Floats per input row. */
    int inputWidth();

    /** Floats per output row. */
    int outputWidth();

    /** Whether requests can be served now. */
    boolean ready();

    /**
     * Runs the model on {@code rows}.
     *
     * @param rows {@code n * inputWidth()} floats
     * @return the future of {@code n * outputWidth()} floats; it fails with
     *     {@link org.cudagraph4j.serving.QueueFullException} when the backend is saturated
     */
    CompletableFuture<float[]> infer(float[] rows);

    /**
     * The serving engine's counters, per device included, for {@code GET /v2/models/{name}/metrics}.
     *
     * @return them, or empty for a backend without an engine (the default)
     */
    default Optional<EngineMetrics> metrics() {
        return Optional.empty();
    }

    @Override
    void close();
}
