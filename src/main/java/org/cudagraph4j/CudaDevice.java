package org.cudagraph4j;

import org.cudagraph4j.internal.Devices;
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

    public int ordinal() {
        return ordinal;
    }

    public DeviceProperties properties() {
        return Devices.properties(ordinal);
    }

    /** Free and total device memory in bytes, as {@code cudaMemGetInfo} reports them now. */
    public MemoryInfo memoryInfo() {
        Devices.use(ordinal);
        long[] info = Devices.memoryInfo();
        return new MemoryInfo(info[0], info[1]);
    }

    /** Free and total device memory. */
    public record MemoryInfo(long freeBytes, long totalBytes) {}

    /**
     * The stream priorities this device offers. Lower numbers are higher priorities, so
     * {@code greatest <= least}.
     */
    public record PriorityRange(int least, int greatest) {}

    public PriorityRange streamPriorityRange() {
        Devices.use(ordinal);
        int[] range = Devices.streamPriorityRange();
        return new PriorityRange(range[0], range[1]);
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

    /** A non-blocking stream at the default priority. */
    public CudaStream createStream() {
        return createStream(0);
    }

    /**
     * A non-blocking stream at {@code priority}; see {@link #streamPriorityRange()}. The runtime
     * clamps values outside the range.
     */
    public CudaStream createStream(int priority) {
        Devices.use(ordinal);
        return new CudaStream(this, Streams.create(priority), priority);
    }

    /** An event; with no options it records timing and waits by spinning. */
    public CudaEvent createEvent(CudaEvent.Option... options) {
        Devices.use(ordinal);
        int flags = 0;
        for (CudaEvent.Option option : options) {
            flags |= option.flag();
        }
        return new CudaEvent(this, Streams.createEvent(flags), flags);
    }

    /** Allocates {@code length} elements of {@code type} on this device. The contents are undefined. */
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

    /** Allocates {@code length} floats on this device. */
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
