package org.cudagraph4j;

import java.util.Objects;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.GraphMemory;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.Streams;

/**
 * A CUDA device, and the factory for what lives on it: streams, events and memory.
 *
 * <p>The runtime keeps the current device per OS thread. Every method here that depends on it makes
 * this device current first, so a device object can be used from any thread, including a virtual
 * thread that moves between carriers between calls. What this leaves current on the calling
 * thread is this device.
 *
 * <p>Thread safety: immutable; safe to share.
 */
public final class CudaDevice {
    private final int ordinal;

    CudaDevice(int ordinal) {
        this.ordinal = ordinal;
    }

    /** {@return this device's ordinal, as CUDA numbers devices: from 0 to {@link Cuda#deviceCount()} - 1} */
    public int ordinal() {
        return ordinal;
    }

    /**
     * Queries this device's name, compute capability and limits ({@code cudaGetDeviceProperties}).
     *
     * @return the properties, read anew on each call
     */
    public DeviceProperties properties() {
        Devices.Properties p = Devices.properties(ordinal);
        return new DeviceProperties(p.name(), p.major(), p.minor(), p.multiprocessorCount(), p.totalMemoryBytes(),
                p.sharedMemPerBlockOptinBytes(), p.l2CacheBytes(), p.maxThreadsPerBlock(), p.warpSize());
    }

    /**
     * Reads one attribute of this device ({@code cudaDeviceGetAttribute}), as NVIDIA's samples do for
     * what {@link #properties()} does not carry: the clock rates, whether memory pools, managed memory
     * or compute preemption are there, and the like. Does not change the current device.
     *
     * @param attribute what to read
     * @return the value, in the unit the attribute's name says; 1 or 0 for an attribute that says
     *     whether the device supports something
     * @throws CudaException naming {@code cudaErrorInvalidValue} where the device does not report the
     *     attribute (CUDA 13's {@code cudaDeviceProp} no longer holds the clock rates, and NVIDIA's
     *     samples take that error for the clock rate as "not reported"); or another error if the
     *     runtime fails, e.g. for a device that is gone
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceGetAttribute</a>
     */
    public int attribute(DeviceAttribute attribute) {
        Objects.requireNonNull(attribute, "attribute");
        return Devices.attribute(ordinal, attribute.value(), attribute.cudaName());
    }

    /** {@return free and total device memory in bytes, as {@code cudaMemGetInfo} reports them now} */
    public MemoryInfo memoryInfo() {
        Devices.use(ordinal);
        Devices.MemoryInfo info = Devices.memoryInfo();
        return new MemoryInfo(info.freeBytes(), info.totalBytes());
    }

    /**
     * Free and total device memory.
     *
     * @param freeBytes memory still free for allocation, in bytes
     * @param totalBytes all of the device's memory, in bytes
     */
    public record MemoryInfo(long freeBytes, long totalBytes) {}

    /**
     * {@return the memory graphs use on this device now ({@code cudaDeviceGetGraphMemAttribute}): what
     * their allocation nodes have mapped, and what the runtime has reserved for them}
     */
    public GraphMemoryUsage graphMemoryUsage() {
        long[] usage = GraphMemory.usage(ordinal);
        return new GraphMemoryUsage(usage[0], usage[1], usage[2], usage[3]);
    }

    /**
     * Graph memory on a device: memory that graphs' allocation nodes use, from a reserve the runtime
     * keeps for graphs and grows as their launches need. An executable keeps what its allocations
     * are mapped to until it is closed; {@link #trimGraphMemory()} returns the rest.
     *
     * @param usedBytes memory that graphs' allocations have mapped now
     * @param usedHighBytes the most {@code usedBytes} has been since the last reset
     * @param reservedBytes memory the runtime holds for graphs now, used or not
     * @param reservedHighBytes the most {@code reservedBytes} has been since the last reset
     */
    public record GraphMemoryUsage(long usedBytes, long usedHighBytes, long reservedBytes, long reservedHighBytes) {}

    /**
     * Returns graph memory that no executable's allocation is mapped to back to the system
     * ({@code cudaDeviceGraphMemTrim}); memory that executables still hold stays.
     */
    public void trimGraphMemory() {
        GraphMemory.trim(ordinal);
    }

    /** Resets the high-water marks of {@link #graphMemoryUsage()} to zero. */
    public void resetGraphMemoryHighWaterMarks() {
        GraphMemory.resetHighWaterMarks(ordinal);
    }

    /**
     * The stream priorities this device offers. Lower numbers are higher priorities, so
     * {@code greatest <= least}.
     *
     * @param least the lowest priority: the largest number
     * @param greatest the highest priority: the smallest number
     */
    public record PriorityRange(int least, int greatest) {}

    /**
     * Queries the stream priorities this device offers ({@code cudaDeviceGetStreamPriorityRange}).
     *
     * @return the least and greatest priority; {@link #createStream(int)} clamps values outside them
     */
    public PriorityRange streamPriorityRange() {
        Devices.use(ordinal);
        Devices.PriorityRange range = Devices.streamPriorityRange();
        return new PriorityRange(range.least(), range.greatest());
    }

    /** Blocks until all work queued on this device has finished. */
    public void synchronize() {
        Devices.use(ordinal);
        Devices.synchronize();
    }

    /** Makes this device current on the calling OS thread. */
    public void makeCurrent() {
        Devices.use(ordinal);
    }

    /**
     * Creates a non-blocking stream at the default priority, 0.
     *
     * @return the stream, to be closed when done
     */
    public CudaStream createStream() {
        return createStream(0);
    }

    /**
     * Creates a non-blocking stream at {@code priority}; see {@link #streamPriorityRange()}. The runtime
     * clamps values outside the range.
     *
     * @param priority the priority; lower numbers are more urgent
     * @return the stream, to be closed when done
     */
    public CudaStream createStream(int priority) {
        Devices.use(ordinal);
        return new CudaStream(this, Streams.create(priority), priority);
    }

    /**
     * Creates an event; with no options it records timing and waits by spinning.
     *
     * @param options the creation options; a repeated one counts once
     * @return the event, to be closed when done
     */
    public CudaEvent createEvent(CudaEvent.Option... options) {
        Devices.use(ordinal);
        int flags = 0;
        for (CudaEvent.Option option : options) {
            flags |= option.flag();
        }
        return new CudaEvent(this, Streams.createEvent(flags), flags);
    }

    /**
     * Allocates {@code length} elements of {@code type} on this device. The contents are undefined.
     *
     * @param type the element type
     * @param length the number of elements (not bytes); must be positive
     * @return the buffer, which owns the allocation; close it when done
     * @throws IllegalArgumentException if {@code length} is not positive, or its size in bytes exceeds
     *     {@link Long#MAX_VALUE}
     * @throws CudaException naming {@code cudaErrorMemoryAllocation} if the device is out of memory
     */
    public DeviceBuffer allocate(ElementType type, long length) {
        if (length <= 0) {
            throw new IllegalArgumentException("length must be positive, got " + length);
        }
        if (length > Long.MAX_VALUE / type.byteSize()) {
            throw new IllegalArgumentException(length + " x " + type + " is more than " + Long.MAX_VALUE + " bytes");
        }
        long byteSize = length * type.byteSize();
        Devices.use(ordinal);
        return DeviceBuffer.own(this, Memory.malloc(byteSize), type, length);
    }

    /**
     * Whether this device can read and write {@code peer}'s memory directly, over NVLink or PCIe
     * ({@code cudaDeviceCanAccessPeer}). Copies between devices work either way (through the host
     * when it cannot); kernels may touch a peer's memory only once {@link #enablePeerAccess} did.
     *
     * @param peer another device of this host
     * @return whether peer access is possible; false for this device itself
     */
    public boolean canAccessPeer(CudaDevice peer) {
        Objects.requireNonNull(peer, "peer");
        return !peer.equals(this) && Devices.canAccessPeer(ordinal, peer.ordinal);
    }

    /**
     * Lets this device's kernels and copies reach {@code peer}'s memory directly
     * ({@code cudaDeviceEnablePeerAccess}); the access is one way, from this device to the peer.
     * Enabling it again does nothing.
     *
     * @param peer another device of this host
     * @throws IllegalArgumentException if {@code peer} is this device
     * @throws UnsupportedOperationException if the hardware gives this device no direct access to
     *     {@code peer} ({@link #canAccessPeer} is false): copies between them still work, through the host
     * @throws CudaException if the runtime refuses, e.g. with too many peers enabled
     */
    public void enablePeerAccess(CudaDevice peer) {
        Objects.requireNonNull(peer, "peer");
        if (peer.equals(this)) {
            throw new IllegalArgumentException(this + " is its own memory's device, not a peer");
        }
        if (!Devices.canAccessPeer(ordinal, peer.ordinal)) {
            throw new UnsupportedOperationException(this + " cannot access " + peer + "'s memory directly "
                    + "(cudaDeviceCanAccessPeer is 0); copies between them still work, through the host");
        }
        Devices.enablePeerAccess(ordinal, peer.ordinal);
    }

    /**
     * {@return this device's default memory pool ({@code cudaDeviceGetDefaultMemPool})}, which the runtime
     * owns and shares with every other user of the device in this process.
     *
     * @throws UnsupportedOperationException if this device has no stream-ordered allocator
     *     ({@code cudaDevAttrMemoryPoolsSupported} is 0)
     */
    public MemoryPool defaultMemoryPool() {
        return MemoryPool.defaultOf(this);
    }

    /**
     * Creates a memory pool of this device's memory ({@code cudaMemPoolCreate}), owned by the caller.
     *
     * @param options its release threshold and maximum size
     * @return the pool, to be closed when done
     * @throws UnsupportedOperationException if this device has no stream-ordered allocator
     * @throws CudaException if the runtime refuses, e.g. for a maximum size it cannot reserve
     */
    public MemoryPool createMemoryPool(MemoryPool.Options options) {
        return MemoryPool.create(this, options);
    }

    /**
     * Allocates {@code length} floats on this device, as {@link #allocate} with {@link ElementType#FLOAT32}.
     *
     * @param length the number of floats (not bytes); must be positive
     * @return the buffer, which owns the allocation; close it when done
     * @throws IllegalArgumentException if {@code length} is not positive
     */
    public DeviceBuffer allocateFloats(long length) {
        return allocate(ElementType.FLOAT32, length);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CudaDevice device && device.ordinal == ordinal;
    }

    @Override
    public int hashCode() {
        return Integer.hashCode(ordinal);
    }

    @Override
    public String toString() {
        return "CudaDevice[" + ordinal + "]";
    }
}
