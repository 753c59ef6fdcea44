package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.Function;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.MemoryPools.Attribute;
import org.cudagraph4j.internal.MemoryPools;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * A pool of device memory for stream-ordered allocation ({@code cudaMemPool_t}): per-batch scratch
 * that is allocated and freed in a stream's order, without the device-wide synchronization that
 * {@code cudaMalloc} and {@code cudaFree} may cause. Freed memory goes back to the pool and is
 * reused by later allocations; the pool keeps up to its {@linkplain #setReleaseThreshold release
 * threshold} reserved across synchronizations and gives the rest back to the device.
 *
 * <p>Either a device's {@linkplain CudaDevice#defaultMemoryPool() default pool}, which the runtime
 * owns (closing it does nothing, and its settings are shared with every other user of the device in
 * the process), or a pool made by {@link CudaDevice#createMemoryPool}, which the caller owns.
 *
 * <h2>Stream-ordered buffers</h2>
 * {@link #allocate} returns an ordinary {@link DeviceBuffer}: kernels, copies, kernel arguments and
 * graphs take it like any other. What differs is the ordering, which is CUDA's:
 * <ul>
 *   <li>The memory is usable in the allocating stream's order. Work on another stream must wait
 *       for that stream first (an event), and must be ordered before the buffer's {@code close()}
 *       in the same way: "the allocation must not be accessed after stream execution reaches the
 *       free" (cudaFreeAsync). The library does not track other streams; that ordering is the
 *       caller's, as in CUDA. Synchronous copies and memsets of the buffer wait for its stream
 *       first, so they are always safe.</li>
 *   <li>{@code close()} queues {@code cudaFreeAsync} on the allocating stream and returns at once;
 *       work already queued there still sees the memory, and an allocation queued later may reuse
 *       it.</li>
 *   <li>A graph or a capture that uses the buffer keeps it alive past {@code close()}, as for any
 *       buffer. When the last of them lets go (or the cleaner frees a forgotten buffer), it cannot
 *       know which streams the graph was launched on: it synchronizes the device, then frees with
 *       {@code cudaFreeAsync} on the buffer's stream (with {@code cudaFree} only if that stream is
 *       capturing again then, which leaves the bytes counted in {@link #statistics()}).</li>
 *   <li>The buffer keeps its stream and its pool alive: closing either while buffers are out only
 *       drops the owner's reference, and the native stream or pool goes when the last buffer is
 *       freed. So a buffer's free is always ordered on a valid stream, and a pool's
 *       {@link #close()} never pulls memory from under a buffer.</li>
 *   <li>Allocating from a pool on a capturing stream is refused ({@link IllegalStateException}).
 *       {@link CudaStream#allocate} on a capturing stream adds an allocation node instead, whose
 *       memory the graph owns (graph memory, see {@link org.cudagraph4j.graph}). Closing a pool's
 *       buffer while its stream captures is allowed: the graph the capture makes frees it when it
 *       is closed.</li>
 * </ul>
 *
 * <p>Thread safety: safe to use from several threads, as the runtime's pool calls are; concurrent
 * allocations on one stream are ordered as the calls reach the runtime. {@link #close()} may race
 * with {@link #allocate}: an allocation that loses the race throws {@link IllegalStateException}.
 * Settings and statistics are the pool's, shared by every thread (and, for the default pool, by
 * every library in the process).
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">Stream Ordered
 *     Memory Allocator</a>
 */
public final class MemoryPool implements AutoCloseable {
    private final CudaDevice device;
    private final MemorySegment handle;
    /** Null for a default pool, which the runtime owns. */
    private final Lifetime lifetime;

    private MemoryPool(CudaDevice device, MemorySegment handle, Lifetime lifetime) {
        this.device = device;
        this.handle = handle;
        this.lifetime = lifetime;
    }

    static MemoryPool defaultOf(CudaDevice device) {
        requireSupport(device);
        return new MemoryPool(device, MemoryPools.defaultPool(device.ordinal()), null);
    }

    static MemoryPool create(CudaDevice device, Options options) {
        Objects.requireNonNull(options, "options");
        requireSupport(device);
        int ordinal = device.ordinal();
        Devices.use(ordinal);
        MemorySegment handle = MemoryPools.create(ordinal, options.maxSizeBytes());
        try {
            MemoryPools.set(handle, Attribute.RELEASE_THRESHOLD, options.releaseThresholdBytes());
        } catch (RuntimeException e) {
            try {
                MemoryPools.destroy(handle);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        Lifetime lifetime = new Lifetime(LiveCounters.Kind.MEMORY_POOL, 0,
                Lifetime.named("MemoryPool", handle) + " on device " + ordinal, () -> MemoryPools.destroy(handle));
        MemoryPool pool = new MemoryPool(device, handle, lifetime);
        lifetime.watch(pool);
        return pool;
    }

    private static void requireSupport(CudaDevice device) {
        if (!MemoryPools.supported(device.ordinal())) {
            throw new UnsupportedOperationException(device + " has no stream-ordered allocator "
                    + "(cudaDevAttrMemoryPoolsSupported is 0)");
        }
    }

    /**
     * How to create a pool.
     *
     * @param releaseThresholdBytes the reserved memory the pool keeps when the device, a stream or an event
     *     is synchronized; above it, memory goes back to the device then ({@code cudaMemPoolAttrReleaseThreshold}).
     *     0, the runtime's default, keeps nothing; a server keeps its steady-state scratch with a larger value
     * @param maxSizeBytes the most device memory the pool may reserve ({@code cudaMemPoolProps.maxSize}); 0 for no
     *     limit beyond the device's. Allocations beyond it fail with {@code cudaErrorMemoryAllocation}
     */
    public record Options(long releaseThresholdBytes, long maxSizeBytes) {
        /**
         * Checks the values.
         *
         * @throws IllegalArgumentException if a value is negative
         */
        public Options {
            if (releaseThresholdBytes < 0) {
                throw new IllegalArgumentException("releaseThresholdBytes must not be negative, got "
                        + releaseThresholdBytes);
            }
            if (maxSizeBytes < 0) {
                throw new IllegalArgumentException("maxSizeBytes must not be negative, got " + maxSizeBytes);
            }
        }

        /** {@return the runtime's defaults: release threshold 0, no size limit} */
        public static Options defaults() {
            return new Options(0, 0);
        }

        /**
         * {@return these options with {@code bytes} as the release threshold}
         *
         * @param bytes the reserved memory to keep across synchronizations; not negative
         */
        public Options withReleaseThreshold(long bytes) {
            return new Options(bytes, maxSizeBytes);
        }

        /**
         * {@return these options with {@code bytes} as the maximum size}
         *
         * @param bytes the most memory the pool may reserve; 0 for no limit; not negative
         */
        public Options withMaxSize(long bytes) {
            return new Options(releaseThresholdBytes, bytes);
        }
    }

    /**
     * A pool's memory, as the runtime counts it.
     *
     * @param reservedBytes device memory the pool holds now, in use or not ({@code cudaMemPoolAttrReservedMemCurrent})
     * @param reservedHighBytes the most it has held since the pool was made or {@link #resetHighWatermarks}
     * @param usedBytes memory in allocations not yet freed ({@code cudaMemPoolAttrUsedMemCurrent}), at least the
     *     bytes asked for; to see a {@code close()} here for sure, read after its stream has reached the free
     * @param usedHighBytes the most that was in use since the pool was made or {@link #resetHighWatermarks}
     */
    public record Statistics(long reservedBytes, long reservedHighBytes, long usedBytes, long usedHighBytes) {}

    /** {@return the device whose memory the pool holds} */
    public CudaDevice device() {
        return device;
    }

    /** {@return whether this is a device's default pool, which the runtime owns} */
    public boolean isDefault() {
        return lifetime == null;
    }

    /**
     * Allocates {@code length} elements of {@code type} from this pool, in {@code stream}'s order
     * ({@code cudaMallocFromPoolAsync}). The contents are undefined. The class documentation gives the
     * ordering rules.
     *
     * @param stream the stream the allocation, and later the free, are ordered on; on this pool's device
     * @param type the element type
     * @param length the number of elements (not bytes); must be positive
     * @return the buffer, usable in {@code stream}'s order; close it when done
     * @throws IllegalArgumentException if {@code length} is not positive, its size in bytes exceeds
     *     {@link Long#MAX_VALUE}, or {@code stream} is on another device
     * @throws IllegalStateException if this pool or {@code stream} is closed, or {@code stream} is capturing
     * @throws CudaException naming {@code cudaErrorMemoryAllocation} if the pool cannot grow enough
     */
    public DeviceBuffer allocate(CudaStream stream, ElementType type, long length) {
        return StreamOrder.allocate(stream, this, type, length);
    }

    /**
     * Allocates {@code length} floats, as {@link #allocate} with {@link ElementType#FLOAT32}.
     *
     * @param stream the stream the allocation, and later the free, are ordered on; on this pool's device
     * @param length the number of floats (not bytes); must be positive
     * @return the buffer, usable in {@code stream}'s order; close it when done
     */
    public DeviceBuffer allocateFloats(CudaStream stream, long length) {
        return allocate(stream, ElementType.FLOAT32, length);
    }

    /**
     * {@return the pool's memory counts, read now} Frees count once their stream has reached them, so
     * synchronize the stream before reading what a {@code close()} gave back.
     *
     * @throws IllegalStateException if this pool is closed
     */
    public Statistics statistics() {
        return use(pool -> new Statistics(MemoryPools.get(pool, Attribute.RESERVED_CURRENT),
                MemoryPools.get(pool, Attribute.RESERVED_HIGH), MemoryPools.get(pool, Attribute.USED_CURRENT),
                MemoryPools.get(pool, Attribute.USED_HIGH)));
    }

    /**
     * Resets both high watermarks, which then count again from now ({@code cudaMemPoolAttrReservedMemHigh} and
     * {@code cudaMemPoolAttrUsedMemHigh} set to 0, the only value the runtime accepts).
     *
     * @throws IllegalStateException if this pool is closed
     */
    public void resetHighWatermarks() {
        use(pool -> {
            MemoryPools.set(pool, Attribute.RESERVED_HIGH, 0);
            MemoryPools.set(pool, Attribute.USED_HIGH, 0);
            return null;
        });
    }

    /**
     * {@return the reserved memory, in bytes, that the pool keeps when a synchronization would give memory back}
     *
     * @throws IllegalStateException if this pool is closed
     */
    public long releaseThreshold() {
        return use(pool -> MemoryPools.get(pool, Attribute.RELEASE_THRESHOLD));
    }

    /**
     * Sets the reserved memory the pool keeps across synchronizations ({@code cudaMemPoolAttrReleaseThreshold}).
     * "When more than the release threshold bytes of memory are held by the memory pool, the allocator
     * will try to release memory back to the OS on the next call to stream, event or context
     * synchronize." {@link Long#MAX_VALUE} keeps everything. On a default pool this changes the pool
     * for every user of the device in the process.
     *
     * @param bytes the threshold; not negative
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException if this pool is closed
     */
    public void setReleaseThreshold(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("release threshold must not be negative, got " + bytes);
        }
        use(pool -> {
            MemoryPools.set(pool, Attribute.RELEASE_THRESHOLD, bytes);
            return null;
        });
    }

    /**
     * Gives unused reserved memory back to the device until the pool reserves at most about
     * {@code minBytesToKeep} ({@code cudaMemPoolTrimTo}). Memory behind live allocations stays, and so
     * may memory whose free its stream has not reached yet: synchronize first to trim the most.
     *
     * @param minBytesToKeep the reserved memory to keep; not negative
     * @throws IllegalArgumentException if {@code minBytesToKeep} is negative
     * @throws IllegalStateException if this pool is closed
     */
    public void trimTo(long minBytesToKeep) {
        if (minBytesToKeep < 0) {
            throw new IllegalArgumentException("minBytesToKeep must not be negative, got " + minBytesToKeep);
        }
        use(pool -> {
            MemoryPools.trimTo(pool, minBytesToKeep);
            return null;
        });
    }

    /**
     * {@return the {@code cudaMemPool_t}, for interop} It is valid until this pool is closed and its
     * last buffer freed.
     *
     * @throws IllegalStateException if this pool is closed
     */
    public MemorySegment handle() {
        if (lifetime != null) {
            lifetime.ensureOpen();
        }
        return handle;
    }

    /** {@return whether this pool is open: false once an owned pool has been closed; a default pool always is} */
    public boolean isOpen() {
        return lifetime == null || lifetime.isOpen();
    }

    /**
     * Closes an owned pool: no new allocations, and the pool is destroyed ({@code cudaMemPoolDestroy})
     * once the last buffer allocated from it is freed, at once if there is none. Buffers still out
     * stay valid. On a default pool this does nothing. Idempotent.
     */
    @Override
    public void close() {
        if (lifetime != null) {
            lifetime.close();
        }
    }

    @Override
    public String toString() {
        return lifetime != null ? lifetime.toString()
                : "default " + Lifetime.named("MemoryPool", handle) + " on device " + device.ordinal();
    }

    /** The lifetime that buffers from an owned pool hold; null for a default pool. */
    Lifetime lifetime() {
        return lifetime;
    }

    /** Runs {@code call} on the native pool while holding it, so that a racing close cannot destroy it meanwhile. */
    private <T> T use(Function<MemorySegment, T> call) {
        if (lifetime == null) {
            return call.apply(handle);
        }
        lifetime.ensureOpen();
        lifetime.retain();
        try {
            return call.apply(handle);
        } finally {
            lifetime.release();
        }
    }
}
