package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import org.cudagraph4j.internal.Lifetime;
import org.cudagraph4j.internal.Streams;

/**
 * A non-blocking CUDA stream: work queued on it runs in order, and it does not synchronize
 * implicitly with the legacy default stream.
 *
 * <p>Thread safety: safe to use from several threads; the runtime serializes what they queue, in
 * the order the calls reach it. {@link #close()} must not race with other calls on the same
 * stream.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">Stream management</a>
 */
public final class CudaStream implements AutoCloseable {
    private final CudaDevice device;
    private final MemorySegment handle;
    private final int priority;
    private final Lifetime lifetime;

    CudaStream(CudaDevice device, MemorySegment handle, int priority) {
        this.device = device;
        this.handle = handle;
        this.priority = priority;
        this.lifetime = new Lifetime("CudaStream " + hex(handle) + " on device " + device.ordinal(),
                () -> Streams.destroy(handle));
    }

    public CudaDevice device() {
        return device;
    }

    /** The priority asked for at creation; lower is more urgent. */
    public int priority() {
        return priority;
    }

    /** The runtime's unique id of this stream ({@code cudaStreamGetId}). */
    public long id() {
        return Streams.id(handle());
    }

    /** Blocks until all work queued so far has finished. */
    public void synchronize() {
        Streams.synchronize(handle());
    }

    /** Whether all work queued so far has finished, without blocking ({@code cudaStreamQuery}). */
    public boolean isIdle() {
        return Streams.isIdle(handle());
    }

    /** Makes later work on this stream wait until {@code event}'s last recorded work completes. */
    public void waitFor(CudaEvent event) {
        Streams.waitEvent(handle(), event.handle());
    }

    /**
     * The {@code cudaStream_t}, for interop with other CUDA libraries. It is valid until this stream
     * is closed.
     *
     * @throws IllegalStateException if the stream is closed
     */
    public MemorySegment handle() {
        lifetime.ensureOpen();
        return handle;
    }

    public boolean isOpen() {
        return lifetime.isOpen();
    }

    /**
     * Destroys the stream. Work already queued still completes; the runtime frees the stream
     * afterwards. Idempotent.
     */
    @Override
    public void close() {
        lifetime.close();
    }

    @Override
    public String toString() {
        return lifetime.toString();
    }

    static String hex(MemorySegment handle) {
        return String.format("0x%016X", handle.address());
    }
}
