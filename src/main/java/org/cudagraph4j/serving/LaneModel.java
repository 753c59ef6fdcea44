package org.cudagraph4j.serving;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.blas.CublasLt;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphBindings;
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

    /**
     * What a {@link GraphArchive} needs to keep this copy's captured passes between starts (see
     * {@link ServingOptions#withGraphArchives}): the buffers a pass uses besides its input and
     * output, under names that every copy of the model gives its own buffers, and the libraries its
     * kernels come from. Empty, the default, when passes cannot be archived: the engine then captures.
     *
     * @return what to archive with, or empty
     */
    default Optional<Archiving> archiving() {
        return Optional.empty();
    }

    /** Frees what this copy owns; the engine calls it once the lane has stopped. */
    @Override
    void close();

    /**
     * The named buffers and the libraries of a lane model's passes, for {@link GraphArchive}.
     *
     * @param bindings the buffers a pass uses besides its input and output; the lane adds those
     * @param libraries the loaded libraries the pass's kernels come from
     */
    record Archiving(GraphBindings bindings, List<CudaLibrary> libraries) {
        /**
         * Copies the library list.
         *
         * @throws NullPointerException if an argument is null
         */
        public Archiving {
            Objects.requireNonNull(bindings, "bindings");
            libraries = List.copyOf(libraries);
        }
    }

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
     * A lane model on an {@link Mlp}, which it owns and closes; its passes can be archived.
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
            public Optional<Archiving> archiving() {
                return Optional.of(new Archiving(mlp.bindTo(new GraphBindings()), mlp.libraries()));
            }

            @Override
            public void close() {
                mlp.close();
            }
        };
    }

    /**
     * A lane model on an {@link Mlp} whose layers multiply on cuBLASLt through {@code lt} (a BF16 or
     * FP16 model, say), which it owns with the stack and closes after it. Give each lane a handle of
     * its own: a handle's workspace serves one stream, and each lane runs on its own. Its passes are
     * not archived, since a graph archive cannot record cuBLASLt's kernels.
     *
     * @param mlp the stack, with a maxBatch of at least the ladder's largest bucket, its layers on {@code lt}
     * @param mode how its layers apply bias and ReLU
     * @param lt the lane's cuBLASLt handle
     * @return the lane model
     * @throws NullPointerException if an argument is null
     */
    static LaneModel of(Mlp mlp, Linear.Mode mode, CublasLt lt) {
        Objects.requireNonNull(mlp, "mlp");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(lt, "lt");
        return new LaneModel() {
            @Override
            public void forward(CudaStream stream, int batch, DeviceBuffer input, DeviceBuffer output) {
                mlp.forward(stream, batch, input, output, mode);
            }

            @Override
            public void close() {
                try (lt) {
                    mlp.close();
                }
            }
        };
    }
}
