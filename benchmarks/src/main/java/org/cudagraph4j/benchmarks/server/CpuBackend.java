package org.cudagraph4j.benchmarks.server;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.cudagraph4j.ElementType;

/**
 * The model on the CPU, one virtual thread per request, in its element type as
 * {@link MlpWeights#forward} computes it: for machines without a GPU, and for tests.
 */
public final class CpuBackend implements InferenceBackend {
    private final MlpWeights model;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();

    /**
     * Serves {@code model} on the CPU.
     *
     * @param model the weights
     */
    public CpuBackend(MlpWeights model) {
        this.model = model;
    }

    @Override
    public ElementType elementType() {
        return model.elementType();
    }

    @Override
    public int inputWidth() {
        return model.inputWidth();
    }

    @Override
    public int outputWidth() {
        return model.outputWidth();
    }

    @Override
    public boolean ready() {
        return !executor.isShutdown();
    }

    @Override
    public CompletableFuture<float[]> infer(float[] rows) {
        return CompletableFuture.supplyAsync(() -> model.forward(rows), executor);
    }

    @Override
    public void close() {
        executor.close();
    }
}
