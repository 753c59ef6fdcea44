package org.cudagraph4j.benchmarks.server;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;
import org.cudagraph4j.serving.ServingOptions;

/** The model on the GPU: its weights uploaded once, served by an {@link InferenceEngine}. */
public final class EngineBackend implements InferenceBackend {
    private final MlpWeights model;
    private final ShippedKernels kernels;
    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private final InferenceEngine engine;

    /**
     * Uploads {@code model} to {@code device} and starts an engine on it.
     *
     * @param device the GPU
     * @param model the weights
     * @param options the engine's batching, capture and limits
     */
    public EngineBackend(CudaDevice device, MlpWeights model, ServingOptions options) {
        this.model = model;
        this.kernels = ShippedKernels.load(device);
        try {
            List<Linear> layers = new ArrayList<>();
            for (int l = 0; l < model.weights().size(); l++) {
                DeviceBuffer w = upload(device, model.weights().get(l));
                DeviceBuffer b = upload(device, model.biases().get(l));
                layers.add(new Linear(kernels, w, b, model.widths().get(l), model.widths().get(l + 1)));
            }
            this.engine = InferenceEngine.start(device, model.inputWidth(), model.outputWidth(),
                    d -> LaneModel.of(new Mlp(kernels, layers, options.ladder().largest()), Linear.Mode.FUSED),
                    options);
        } catch (RuntimeException e) {
            buffers.forEach(DeviceBuffer::close);
            kernels.close();
            throw e;
        }
    }

    private DeviceBuffer upload(CudaDevice device, float[] values) {
        DeviceBuffer buffer = device.allocateFloats(values.length);
        buffers.add(buffer);
        buffer.copyFrom(values);
        return buffer;
    }

    /** The engine, for its metrics and capture reports. */
    public InferenceEngine engine() {
        return engine;
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
        return engine.isHealthy();
    }

    @Override
    public CompletableFuture<float[]> infer(float[] rows) {
        return engine.submit(rows);
    }

    @Override
    public void close() {
        try {
            engine.close();
        } finally {
            buffers.forEach(DeviceBuffer::close);
            kernels.close();
        }
    }
}
