package org.cudagraph4j.benchmarks.server;

import java.util.concurrent.CompletableFuture;

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

    @Override
    void close();
}
