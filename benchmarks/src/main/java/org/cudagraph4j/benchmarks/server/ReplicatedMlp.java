package org.cudagraph4j.benchmarks.server;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.blas.CublasLt;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;

/**
 * One MLP on each of several GPUs, for an {@link InferenceEngine} over all of them: on every device,
 * the shipped kernels loaded for it (loading sets per-device kernel attributes) and the weights
 * uploaded from the same host arrays in the model's element type, so that every device computes the
 * same model. A lane's copy uses only its own device's kernels and weights. FP32 layers multiply on
 * the shipped sgemm; FP16 and BF16 layers on cuBLASLt, through a handle of the lane's own, since a
 * handle's workspace serves one stream.
 */
public final class ReplicatedMlp implements AutoCloseable {
    private record Replica(ShippedKernels kernels, List<DeviceBuffer> buffers, List<Linear> layers) {
        void close() {
            buffers.forEach(DeviceBuffer::close);
            kernels.close();
        }
    }

    private final Map<CudaDevice, Replica> replicas = new LinkedHashMap<>();
    private final ElementType elementType;

    /**
     * Loads the kernels on each device and uploads {@code model} there.
     *
     * @param devices the GPUs, each once
     * @param model the weights
     * @throws IllegalArgumentException if a device is given twice
     * @throws org.cudagraph4j.error.CudaException if loading or uploading fails; what was made is freed
     */
    public ReplicatedMlp(List<CudaDevice> devices, MlpWeights model) {
        this.elementType = model.elementType();
        try {
            for (CudaDevice device : devices) {
                if (replicas.containsKey(device)) {
                    throw new IllegalArgumentException(device + " is given twice in " + devices);
                }
                replicas.put(device, upload(device, model));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private static Replica upload(CudaDevice device, MlpWeights model) {
        ShippedKernels kernels = ShippedKernels.load(device);
        List<DeviceBuffer> buffers = new ArrayList<>();
        try {
            List<Linear> layers = new ArrayList<>();
            for (int l = 0; l < model.weights().size(); l++) {
                DeviceBuffer w = upload(device, model.elementType(), model.weights().get(l), buffers);
                DeviceBuffer b = upload(device, model.elementType(), model.biases().get(l), buffers);
                layers.add(new Linear(kernels, w, b, model.widths().get(l), model.widths().get(l + 1)));
            }
            return new Replica(kernels, buffers, List.copyOf(layers));
        } catch (RuntimeException e) {
            buffers.forEach(DeviceBuffer::close);
            kernels.close();
            throw e;
        }
    }

    private static DeviceBuffer upload(CudaDevice device, ElementType type, float[] values, List<DeviceBuffer> owned) {
        DeviceBuffer buffer = device.allocate(type, values.length);
        owned.add(buffer);
        if (type == ElementType.FLOAT32) {
            buffer.copyFrom(values);
        } else {
            buffer.copyFromRounded(values); // the model's values are the format's: the rounding is exact
        }
        return buffer;
    }

    /** The model's element type, which the engine's rows hold. */
    public ElementType elementType() {
        return elementType;
    }

    /** The devices the model is on, in the order given. */
    public List<CudaDevice> devices() {
        return List.copyOf(replicas.keySet());
    }

    /**
     * The engine's model factory: each lane's copy is an {@link Mlp} on its device's kernels and
     * weights, with scratch of its own and, for an FP16 or BF16 model, a cuBLASLt handle of its own,
     * which it closes with itself.
     *
     * @param maxBatch the ladder's largest bucket
     * @return the factory, for an engine of {@link #elementType()} on some or all of {@link #devices()}
     */
    public LaneModel.Factory lanes(int maxBatch) {
        return device -> {
            Replica replica = replicas.get(device);
            if (replica == null) {
                throw new IllegalArgumentException("the model is on " + devices() + ", not on " + device);
            }
            if (elementType == ElementType.FLOAT32) {
                return LaneModel.of(new Mlp(replica.kernels(), replica.layers(), maxBatch), Linear.Mode.FUSED);
            }
            CublasLt lt = CublasLt.create(device);
            try {
                List<Linear> layers = replica.layers().stream().map(layer -> layer.withCublasLt(lt)).toList();
                return LaneModel.of(new Mlp(replica.kernels(), layers, maxBatch), Linear.Mode.FUSED, lt);
            } catch (RuntimeException e) {
                lt.close();
                throw e;
            }
        };
    }

    /** Frees every device's weights and kernels; close the engine first. */
    @Override
    public void close() {
        replicas.values().forEach(Replica::close);
        replicas.clear();
    }
}
