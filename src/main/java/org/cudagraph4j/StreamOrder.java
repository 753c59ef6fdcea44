package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.MemoryPools;
import org.cudagraph4j.internal.Streams;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * The stream a stream-ordered allocation ({@code cudaMallocAsync}, {@code cudaMallocFromPoolAsync})
 * is ordered on, and how it is freed: the free action of the buffer's {@link Lifetime}.
 *
 * <p>The allocation holds a reference to its stream's lifetime (and to its pool's, for a pool the
 * library created), so the native stream outlives the buffer even if its owner closes it first:
 * the free is always queued on a valid stream, never on a destroyed handle, and it runs after
 * everything queued there before it.
 *
 * <p>Two ways to free, chosen by who drops the last reference:
 * <ul>
 *   <li>The owner's {@code close()}, when nothing else holds the buffer: {@code cudaFreeAsync} on
 *       the stream. "The allocation must not be accessed after stream execution reaches the free"
 *       (cudaFreeAsync), so work on other streams must be ordered before it by the caller, as in
 *       CUDA.</li>
 *   <li>A graph, executable or capture letting go later, or the cleaner: their launches may be
 *       queued on any stream, which the free cannot be ordered after. So the device is synchronized
 *       first (what {@code cudaFree} of a plain allocation does implicitly), and then the memory is
 *       given back with {@code cudaFreeAsync} on its stream, which nothing is using any more.
 *       {@code cudaFree} would be allowed too ("will not perform any implicit synchronization ...
 *       callers must ensure that all accesses to these pointers have completed", cuMemFree), but
 *       measured on the H200 (driver 580.159.04) it leaves the memory counted in the pool's
 *       {@code cudaMemPoolAttrUsedMemCurrent} for good, while {@code cudaFreeAsync} takes it off
 *       at once. Only if the stream is capturing again at that moment, where a free would become a
 *       graph node, is {@code cudaFree} used, and the pool's statistics keep counting the bytes.</li>
 * </ul>
 * Either way the free runs once: the lifetime's reference count decides, not this class.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">Stream Ordered
 *     Memory Allocator</a>
 */
final class StreamOrder implements Runnable {
    private final int ordinal;
    private final long address;
    private final MemorySegment stream;
    private final Lifetime streamLifetime;
    /** The stream's capture slot: the stream object itself may be gone while the buffer lives. */
    private final CaptureTracker.Slot captureSlot;
    private final Lifetime poolLifetime;
    /** The thread inside the owner's {@code close()}; a free on any other thread is deferred. */
    private volatile Thread closing;
    /** The stream the owner's {@code closeOn} frees on, while it runs; {@code null} for the allocating stream. */
    private volatile MemorySegment closingOn;

    private StreamOrder(int ordinal, long address, MemorySegment stream, Lifetime streamLifetime,
            CaptureTracker.Slot captureSlot, Lifetime poolLifetime) {
        this.ordinal = ordinal;
        this.address = address;
        this.stream = stream;
        this.streamLifetime = streamLifetime;
        this.captureSlot = captureSlot;
        this.poolLifetime = poolLifetime;
    }

    /**
     * Allocates {@code length} elements ordered on {@code stream}, from {@code pool} or, when it is
     * null, from the current pool of the stream's device.
     */
    static DeviceBuffer allocate(CudaStream stream, MemoryPool pool, ElementType type, long length) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(type, "type");
        if (length <= 0) {
            throw new IllegalArgumentException("length must be positive, got " + length);
        }
        if (length > Long.MAX_VALUE / type.byteSize()) {
            throw new IllegalArgumentException(length + " x " + type + " is more than " + Long.MAX_VALUE + " bytes");
        }
        CudaDevice device = stream.device();
        if (pool != null && !pool.device().equals(device)) {
            // cudaMallocFromPoolAsync would accept it, but the stream's device could not touch the
            // memory without cudaMemPoolSetAccess, which this library does not offer.
            throw new IllegalArgumentException(pool + " is on " + pool.device() + " but " + stream + " is on "
                    + device + "; allocate from a pool of the stream's device");
        }
        long byteSize = length * type.byteSize();
        MemorySegment handle = stream.handle();
        Devices.use(device.ordinal());
        if (capturing(handle)) {
            return allocateInCapture(stream, pool, type, length, byteSize);
        }
        Lifetime streamLifetime = stream.lifetime();
        Lifetime poolLifetime = pool == null ? null : pool.lifetime();
        streamLifetime.retain();
        try {
            if (poolLifetime != null) {
                poolLifetime.ensureOpen();
                poolLifetime.retain();
            }
            try {
                long address = pool == null ? MemoryPools.allocate(byteSize, handle)
                        : MemoryPools.allocate(pool.handle(), byteSize, handle);
                StreamOrder order = new StreamOrder(device.ordinal(), address, handle, streamLifetime,
                        stream.captureSlot(), poolLifetime);
                Lifetime lifetime = new Lifetime(LiveCounters.Kind.DEVICE_BUFFER, byteSize,
                        String.format("DeviceBuffer 0x%X (%d x %s) on device %d, stream-ordered on %s", address,
                                length, type, device.ordinal(), stream),
                        order);
                return DeviceBuffer.own(device, address, type, length, lifetime, order);
            } catch (RuntimeException e) {
                if (poolLifetime != null) {
                    poolLifetime.release();
                }
                throw e;
            }
        } catch (RuntimeException e) {
            streamLifetime.release();
            throw e;
        }
    }

    /**
     * During capture {@code cudaMallocAsync} "results in the creation of an allocation node. In this
     * case, the allocation is owned by the graph instead of the memory pool": the buffer is a view
     * of graph memory, whose {@code close()} during the capture adds the free node.
     */
    private static DeviceBuffer allocateInCapture(CudaStream stream, MemoryPool pool, ElementType type, long length,
            long byteSize) {
        CaptureTracker.Capture<?> capture = CaptureTracker.of(stream.captureSlot());
        if (capture == null) {
            throw new IllegalStateException("cannot allocate " + byteSize + " bytes ordered on " + stream + " while it "
                    + "is in a capture that cudagraph4j did not begin: begin it with StreamCapture.begin, whose graph "
                    + "then owns the allocation");
        }
        if (pool != null) {
            throw new IllegalStateException("cannot allocate from " + pool + " while " + stream + " is capturing: "
                    + "allocate with CudaStream.allocate, which adds an allocation node whose memory the graph owns");
        }
        long address = MemoryPools.allocate(byteSize, stream.handle());
        DeviceBuffer buffer = DeviceBuffer.graphMemory(stream.device(), address, type, length, capture.allocations(),
                stream, capture.toString());
        capture.use(List.of(buffer.lifetime()));
        return buffer;
    }

    /**
     * The owner's {@code close()}: frees in stream order unless something still holds the buffer.
     * If the stream is capturing, a {@code cudaFreeAsync} there would become a free node for memory
     * the graph does not own (cudaFreeAsync: "must therefore be passed the address of a graph
     * allocation"), so the capture takes a reference and the graph it makes frees the memory later.
     *
     * @throws IllegalStateException if the stream is in a capture this library did not begin
     */
    void close(Lifetime allocation) {
        if (!allocation.isOpen()) {
            return;
        }
        boolean capturing;
        try {
            capturing = capturing(stream);
        } catch (CudaException e) {
            // A dead context (a sticky error): the free below fails too, but the buffer is closed.
            capturing = false;
        }
        if (capturing) {
            CaptureTracker.Capture<?> capture = CaptureTracker.of(captureSlot);
            if (capture == null) {
                throw new IllegalStateException(allocation + " cannot be freed while its stream is in a capture "
                        + "that cudagraph4j did not begin; close it after that capture ends");
            }
            capture.use(List.of(allocation));
        }
        closing = Thread.currentThread();
        try {
            allocation.close();
        } finally {
            closing = null;
        }
    }

    /**
     * The owner's {@code closeOn(other)}: as {@link #close(Lifetime)}, but the free, if it happens
     * now, is ordered on {@code other} ({@code cudaFreeAsync(p, other)}), which CUDA allows for any
     * stream of the device. Deferred frees (a graph or capture still holds the buffer) do not need
     * it: they synchronize the device first.
     *
     * @throws IllegalArgumentException if {@code other} is on another device
     * @throws IllegalStateException if {@code other} is closed or capturing, where the free would
     *     become a free node for memory no graph owns
     */
    void close(Lifetime allocation, CudaStream other) {
        if (!allocation.isOpen()) {
            return;
        }
        if (other.device().ordinal() != ordinal) {
            throw new IllegalArgumentException(allocation + " is memory of device " + ordinal + ", but " + other
                    + " is on device " + other.device().ordinal() + ": free it on a stream of its own device");
        }
        Lifetime otherLifetime = other.lifetime();
        otherLifetime.ensureOpen();
        otherLifetime.retain(); // its handle stays valid for the free, whoever closes it meanwhile
        try {
            MemorySegment handle = other.handle();
            Devices.use(ordinal);
            if (capturing(handle)) {
                throw new IllegalStateException("cannot free " + allocation + " on " + other + ", which is capturing: "
                        + "cudaFreeAsync there would add a free node, and this memory belongs to no graph; free it "
                        + "after the capture, or on a stream that is not capturing");
            }
            closingOn = handle;
            try {
                close(allocation);
            } finally {
                closingOn = null;
            }
        } finally {
            otherLifetime.release();
        }
    }

    /**
     * Before a synchronous copy or memset: waits until the stream has run the allocation (and
     * whatever was queued before it), since "the allocation must not be accessed until the
     * allocation operation completes" (cudaMallocAsync) and synchronous copies run on another stream.
     *
     * @throws IllegalStateException if the stream is capturing, which forbids waiting for it
     */
    void awaitStream(DeviceBuffer buffer) {
        if (capturing(stream)) {
            throw new IllegalStateException("a synchronous copy or memset of " + buffer + " waits for its stream, which "
                    + "is capturing; use the Async forms on that stream instead");
        }
        Devices.use(ordinal);
        Streams.synchronize(stream);
    }

    /** Whether {@code stream} is recording into a capture (any capture status but none). */
    private static boolean capturing(MemorySegment stream) {
        return Graphs.captureInfo(stream).status() != CaptureStatus.NONE.value();
    }

    /** The lifetime's free action; runs once. */
    @Override
    public void run() {
        try {
            Devices.use(ordinal); // the cleaner's or a graph's thread may have another device current
            if (closing == Thread.currentThread()) {
                MemorySegment on = closingOn;
                MemoryPools.freeAsync(address, on != null ? on : stream);
            } else {
                Devices.synchronize();
                if (capturing(stream)) {
                    Memory.free(address);
                } else {
                    MemoryPools.freeAsync(address, stream);
                }
            }
        } finally {
            try {
                streamLifetime.release();
            } finally {
                if (poolLifetime != null) {
                    poolLifetime.release();
                }
            }
        }
    }
}
