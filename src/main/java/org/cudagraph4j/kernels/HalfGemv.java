package org.cudagraph4j.kernels;

import java.util.List;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.LaunchConfig;

/**
 * The shipped half-precision GEMV with bias+ReLU, {@code y = relu(x Wᵀ + b)} for a BF16 or FP16
 * {@link Linear} layer of a few rows: one warp streams each weight row once, 16 bytes per load,
 * against every row of x, summing exact products in FP32 and rounding once. At such batches a layer
 * is a read of its weights, which the GEMV does in one kernel; {@link Linear} sends it the batches
 * it takes. Two instances per format: one row, with eight loads of the weights in flight per lane,
 * and up to eight rows, with two.
 *
 * <p>Thread safety: immutable; safe to share.
 */
final class HalfGemv {
    /** One loaded instance. */
    record Instance(CudaKernel kernel, KernelManifest.HalfGemvKernel description) {}

    /** Fewest rows first. */
    private final List<Instance> instances;
    private final ElementType type;

    HalfGemv(List<Instance> instances, ElementType type) {
        this.instances = List.copyOf(instances);
        this.type = type;
    }

    /** {@return the most rows of x it takes} */
    int maxBatch() {
        return instances.getLast().description().maxBatch();
    }

    /**
     * Whether it takes this product: at most {@link #maxBatch()} rows, K a multiple of its vector,
     * and x and W aligned to a vector's 16 bytes.
     */
    boolean takes(int batch, int in, DeviceBuffer x, DeviceBuffer weight) {
        int vector = instances.getFirst().description().alignment();
        long vectorBytes = vector * type.byteSize();
        return batch <= maxBatch() && in % vector == 0 && x.address() % vectorBytes == 0
                && weight.address() % vectorBytes == 0;
    }

    /**
     * Queues {@code y = relu(x Wᵀ + b)}; the caller has checked the buffers' types and lengths and
     * that {@link #takes} holds.
     */
    void apply(CudaStream stream, int batch, int out, int in, DeviceBuffer x, DeviceBuffer weight, DeviceBuffer bias,
            DeviceBuffer y) {
        Instance instance = instances.stream().filter(i -> i.description().maxBatch() >= batch).findFirst()
                .orElseThrow();
        KernelManifest.HalfGemvKernel description = instance.description();
        int blocks = GemmConfig.ceilDiv(out, description.outputsPerBlock());
        instance.kernel().launch(stream, LaunchConfig.of(Dim3.of(blocks), Dim3.of(description.threads())), batch, out,
                in, x, weight, bias, y);
    }
}
