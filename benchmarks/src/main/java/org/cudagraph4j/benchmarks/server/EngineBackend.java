package org.cudagraph4j.benchmarks.server;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.serving.EngineMetrics;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.ServingOptions;

/**
 * The model on one or more GPUs: its weights uploaded once to each, served by one
 * {@link InferenceEngine} over all of them, in the model's element type. The rows of
 * {@link #infer(MemorySegment, MemorySegment)} go to the engine as they are, so a half-precision
 * request is never widened on the host.
 */
public final class EngineBackend extends MlpBackend {
    private final ReplicatedMlp replicas;
    private final InferenceEngine engine;

    /**
     * Uploads {@code model} to every device of {@code devices} and starts an engine over them.
     *
     * @param devices the GPUs, at least one, each once
     * @param model the weights
     * @param options the engine's batching, capture and limits (its lanes are per device)
     */
    public EngineBackend(List<CudaDevice> devices, MlpWeights model, ServingOptions options) {
        super(model);
        this.replicas = new ReplicatedMlp(devices, model);
        try {
            this.engine = InferenceEngine.start(devices, model.elementType(), model.inputWidth(), model.outputWidth(),
                    replicas.lanes(options.ladder().largest()), options);
        } catch (RuntimeException e) {
            replicas.close();
            throw e;
        }
    }

    /** The engine, for its metrics and capture reports. */
    public InferenceEngine engine() {
        return engine;
    }

    @Override
    public boolean ready() {
        return engine.isHealthy();
    }

    @Override
    public CompletableFuture<float[]> infer(float[] rows) {
        return engine.submit(rows);
    }

    @Override
    public CompletableFuture<MemorySegment> infer(MemorySegment rows, MemorySegment output) {
        return engine.submit(rows, output);
    }

    @Override
    public Optional<EngineMetrics> metrics() {
        return Optional.of(engine.metrics());
    }

    @Override
    public void close() {
        try {
            engine.close();
        } finally {
            replicas.close();
        }
    }
}
