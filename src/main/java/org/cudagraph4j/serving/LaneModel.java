package org.cudagraph4j.serving;

import java.util.Objects;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;

/**
 * One lane's copy of the model: queues a forward pass of {@code batch} rows on a stream, reading
 * and writing only device memory and launching only kernels, so that it can be captured into a
 * graph. An engine asks its {@link Factory} for one per lane, since a lane's passes may overlap
 * another's on the device: copies on one device share weights, not scratch buffers.
 *
 * <p>Thread safety: each copy is used by one lane's thread at a time.
 */
public interface LaneModel extends AutoCloseable {
    /**
     * Queues the forward pass.
     *
     * @param stream the lane's stream
     * @param batch rows, one of the ladder's buckets
     * @param input [batch, inputWidth] floats
     * @param output [batch, outputWidth] floats
     */
    void forward(CudaStream stream, int batch, DeviceBuffer input, DeviceBuffer output);

    /** Frees what this copy owns; the engine calls it once the lane has stopped. */
    @Override
    void close();

    /** Makes one lane's copy of the model. */
    @FunctionalInterface
    interface Factory {
        /**
         * Makes a copy for a lane on {@code device}, with its weights there and scratch of its own.
         *
         * @param device the lane's device, current on the calling thread
         * @return the copy, which the engine closes
         */
        LaneModel create(CudaDevice device);
    }

    /**
     * A lane model on an {@link Mlp}, which it owns and closes.
     *
     * @param mlp the stack, with a maxBatch of at least the ladder's largest bucket
     * @param mode how its layers apply bias and ReLU
     * @return the lane model
     * @throws NullPointerException if an argument is null
     */
    static LaneModel of(Mlp mlp, Linear.Mode mode) {
        Objects.requireNonNull(mlp, "mlp");
        Objects.requireNonNull(mode, "mode");
        return new LaneModel() {
            @Override
            public void forward(CudaStream stream, int batch, DeviceBuffer input, DeviceBuffer output) {
                mlp.forward(stream, batch, input, output, mode);
            }

            @Override
            public void close() {
                mlp.close();
            }
        };
    }
}
