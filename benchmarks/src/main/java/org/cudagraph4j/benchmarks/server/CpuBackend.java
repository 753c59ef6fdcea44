package org.cudagraph4j.benchmarks.server;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The model on the CPU, one virtual thread per request, in its element type as
 * {@link MlpWeights#forward} computes it: for machines without a GPU, and for tests.
 */
public final class CpuBackend extends MlpBackend {
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();

    /**
     * Serves {@code model} on the CPU.
     *
     * @param model the weights
     */
    public CpuBackend(MlpWeights model) {
        super(model);
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
