package org.cudagraph4j.kernels;

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
 * it takes.
 *
 * <p>Thread safety: immutable; safe to share.
 */
final class HalfGemv {
    private final CudaKernel kernel;
    private final KernelManifest.HalfGemvKernel instance;
    private final ElementType type;

    HalfGemv(CudaKernel kernel, KernelManifest.HalfGemvKernel instance, ElementType type) {
        this.kernel = kernel;
        this.instance = instance;
        this.type = type;
    }

    /** {@return the most rows of x it takes} */
    int maxBatch() {
        return instance.maxBatch();
    }

    /**
     * Whether it takes this product: at most {@link #maxBatch()} rows, K a multiple of its vector,
     * and x and W aligned to a vector's 16 bytes.
     */
    boolean takes(int batch, int in, DeviceBuffer x, DeviceBuffer weight) {
        long vectorBytes = instance.alignment() * type.byteSize();
        return batch <= instance.maxBatch() && in % instance.alignment() == 0 && x.address() % vectorBytes == 0
                && weight.address() % vectorBytes == 0;
    }

    /**
     * Queues {@code y = relu(x Wᵀ + b)}; the caller has checked the buffers' types and lengths and
     * that {@link #takes} holds.
     */
    void apply(CudaStream stream, int batch, int out, int in, DeviceBuffer x, DeviceBuffer weight, DeviceBuffer bias,
            DeviceBuffer y) {
        int blocks = GemmConfig.ceilDiv(out, instance.outputsPerBlock());
        kernel.launch(stream, LaunchConfig.of(Dim3.of(blocks), Dim3.of(instance.threads())), batch, out, in, x, weight,
                bias, y);
    }
}
