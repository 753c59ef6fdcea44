package org.cudagraph4j.kernels;

import java.util.Objects;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphBindings;

/**
 * Device memory that split-K sgemm instances reduce through: a partial output per slice, and one
 * ticket per output tile that tells the last slice of a tile to add the partials (in slice order,
 * so the result is the same bits every run) and apply the epilogue. The kernels leave the tickets
 * at zero, as they found them, so launches can be replayed in a graph with nothing in between.
 *
 * <p>Thread safety: one launch at a time. Launches that use a workspace must be ordered on the
 * device (one stream, or one chain of graph nodes); two that overlap would mix their partials and
 * give wrong results, which nothing can detect. Give each stream, or each model instance, its own.
 * {@link #close()} frees the memory; a graph captured with it keeps it alive.
 */
public final class GemmWorkspace implements AutoCloseable {
    private final DeviceBuffer partials;
    private final DeviceBuffer tickets;

    private GemmWorkspace(DeviceBuffer partials, DeviceBuffer tickets) {
        this.partials = partials;
        this.tickets = tickets;
    }

    /**
     * Allocates a workspace for problems of up to {@code maxM x maxN} outputs split into up to
     * {@code maxSlices} slices, on tiles of at least 16 x 32 elements (every shipped split-K tile).
     *
     * @param device the device the kernels run on
     * @param maxM the most rows of output, at least 1
     * @param maxN the most columns of output, at least 1
     * @param maxSlices the most slices, at least 1
     * @return a zeroed workspace of {@code maxSlices * maxM * maxN} floats and its tickets
     * @throws IllegalArgumentException if a bound is below 1
     * @throws NullPointerException if {@code device} is null
     */
    public static GemmWorkspace allocate(CudaDevice device, int maxM, int maxN, int maxSlices) {
        Objects.requireNonNull(device, "device");
        if (maxM < 1 || maxN < 1 || maxSlices < 1) {
            throw new IllegalArgumentException("a workspace needs maxM, maxN, maxSlices >= 1, got " + maxM + ", "
                    + maxN + ", " + maxSlices);
        }
        long partialFloats = maxSlices == 1 ? 1 : Math.multiplyExact((long) maxSlices, (long) maxM * maxN);
        return allocate(device, new Size(partialFloats,
                (long) GemmConfig.ceilDiv(maxM, 16) * GemmConfig.ceilDiv(maxN, 32)));
    }

    /** A zeroed workspace of exactly this size. */
    static GemmWorkspace allocate(CudaDevice device, Size size) {
        DeviceBuffer partials = device.allocateFloats(size.partialFloats());
        try {
            DeviceBuffer tickets = device.allocate(ElementType.INT32, size.tickets());
            tickets.memset(0);
            return new GemmWorkspace(partials, tickets);
        } catch (RuntimeException e) {
            partials.close();
            throw e;
        }
    }

    /**
     * Binds this workspace's two buffers as {@code <prefix>partials} and {@code <prefix>tickets}, so
     * that a graph using it can be saved and loaded as a {@link GraphArchive}.
     *
     * @param bindings where to bind them
     * @param prefix the slot names' prefix
     * @return {@code bindings}
     */
    public GraphBindings bindTo(GraphBindings bindings, String prefix) {
        return bindings.buffer(prefix + "partials", partials).buffer(prefix + "tickets", tickets);
    }

    /**
     * Whether a launch of {@code config} on an {@code m x n} output fits.
     *
     * @param config the instance and slice count
     * @param m rows of the output
     * @param n columns of the output
     * @return whether the partials and tickets it needs fit in this workspace
     */
    public boolean fits(GemmConfig config, int m, int n) {
        return new Size(partials.length(), tickets.length()).holds(config, m, n);
    }

    /**
     * What a workspace holds: partial floats and tickets, each at least 1 (a launch of one slice
     * touches neither).
     */
    record Size(long partialFloats, long tickets) {
        /** The least a workspace can hold. */
        static final Size NONE = new Size(1, 1);

        Size {
            if (partialFloats < 1 || tickets < 1) {
                throw new IllegalArgumentException("a workspace holds at least 1 partial float and 1 ticket, got "
                        + partialFloats + " and " + tickets);
            }
        }

        /** What a launch of {@code config} on an {@code m x n} output needs: partials per slice, a ticket per tile. */
        static Size of(GemmConfig config, int m, int n) {
            if (config.slices() == 1) {
                return NONE;
            }
            return new Size((long) config.slices() * m * n,
                    (long) GemmConfig.ceilDiv(m, config.tileM()) * GemmConfig.ceilDiv(n, config.tileN()));
        }

        /** Whether a workspace of this size takes a launch of {@code config} on an {@code m x n} output. */
        boolean holds(GemmConfig config, int m, int n) {
            Size needed = of(config, m, n);
            return needed.partialFloats <= partialFloats && needed.tickets <= tickets;
        }

        /** The size that holds what either holds. */
        Size max(Size other) {
            return new Size(Math.max(partialFloats, other.partialFloats), Math.max(tickets, other.tickets));
        }
    }

    DeviceBuffer partials() {
        return partials;
    }

    DeviceBuffer tickets() {
        return tickets;
    }

    /** Frees the workspace (graphs that captured it keep it alive); idempotent. */
    @Override
    public void close() {
        try (tickets) {
            partials.close();
        }
    }
}
