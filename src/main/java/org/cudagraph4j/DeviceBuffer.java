package org.cudagraph4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Driver;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.MemoryPools;
import org.cudagraph4j.internal.lifetime.BorrowedHostMemory;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * A typed array in device memory: an allocation from {@link CudaDevice#allocate}, memory another
 * library owns ({@link #borrow}), or a {@link #slice} of either.
 *
 * <p>Copies to and from Java arrays and heap segments go through a bounded native staging buffer;
 * copies to and from native segments go straight to the runtime. Synchronous copies and
 * {@link #memset} return when they have completed: work queued afterwards on any stream sees their
 * result (plain {@code cudaMemcpy} does not promise that for device-to-device copies). The
 * {@code Async} forms are ordered on a stream and return at once: the
 * host segment must stay valid until the stream reaches the copy, and only pinned memory
 * ({@link PinnedBuffer}) makes them truly asynchronous.
 *
 * <p>A slice shares its allocation: closing a slice does nothing, and a slice becomes unusable
 * when its allocation's owner is closed. Each buffer knows its allocation ({@link #allocation()})
 * and offset, which is what a graph retains and what a portable graph file would name.
 *
 * <p>A stream-ordered buffer ({@link MemoryPool#allocate}, {@link CudaStream#allocate}) is usable
 * in its stream's order: other streams must wait for that stream (an event) before touching it,
 * and it is freed in that order on {@code close()}. Its synchronous copies and memsets first wait
 * for its stream.
 *
 * <p>A graph-memory buffer ({@link #isGraphMemory()}: from
 * {@link org.cudagraph4j.graph.CudaGraph#addMemAlloc}, or {@link CudaStream#allocate} during a
 * capture) is a view of memory its graph owns, which exists only while a launch of the graph runs
 * between the allocation node and the free node. Only nodes of that graph may use it (copies,
 * memsets and kernels captured into it, or added to it); synchronous copies and memsets, and
 * launches outside the capture, are refused.
 *
 * <p>Thread safety: safe to use from several threads as long as their accesses do not overlap in
 * a way that races on the device; {@link #close()} must not race with other calls on the buffer.
 */
public final class DeviceBuffer implements AutoCloseable {
    private static final long STAGING_BYTES = 8L << 20;

    private final CudaDevice device;
    private final DeviceBuffer allocation;
    private final long address;
    private final ElementType type;
    private final long length;
    private final Lifetime lifetime;
    /** The stream a stream-ordered allocation is ordered on; null for {@code cudaMalloc} memory and slices. */
    private final StreamOrder order;
    /** The graph memory this allocation is, which its graph owns; null for other memory and slices. */
    private final GraphAllocations graphOwner;
    /** The capturing stream a captured graph allocation was made on, where its close() adds the free node. */
    private final CudaStream capturedOn;
    /** Whether another library owns the memory ({@link #borrow}). */
    private final boolean borrowed;

    private DeviceBuffer(CudaDevice device, DeviceBuffer allocation, long address, ElementType type, long length,
            Lifetime lifetime, StreamOrder order, GraphAllocations graphOwner, CudaStream capturedOn) {
        this(device, allocation, address, type, length, lifetime, order, graphOwner, capturedOn, false);
    }

    private DeviceBuffer(CudaDevice device, DeviceBuffer allocation, long address, ElementType type, long length,
            Lifetime lifetime, StreamOrder order, GraphAllocations graphOwner, CudaStream capturedOn,
            boolean borrowed) {
        this.borrowed = borrowed;
        this.device = device;
        this.allocation = allocation == null ? this : allocation;
        this.address = address;
        this.type = type;
        this.length = length;
        this.lifetime = lifetime;
        this.order = order;
        this.graphOwner = graphOwner;
        this.capturedOn = capturedOn;
    }

    static DeviceBuffer own(CudaDevice device, long address, ElementType type, long length) {
        int ordinal = device.ordinal();
        Lifetime lifetime = new Lifetime(LiveCounters.Kind.DEVICE_BUFFER, length * type.byteSize(),
                String.format("DeviceBuffer 0x%X (%d x %s) on device %d", address, length, type, ordinal), () -> {
                    Devices.use(ordinal); // the cleaner's thread may have another device current
                    Memory.free(address);
                });
        DeviceBuffer buffer = new DeviceBuffer(device, null, address, type, length, lifetime, null, null, null);
        lifetime.watch(buffer);
        return buffer;
    }

    /** A stream-ordered allocation, which {@code order} frees. */
    static DeviceBuffer own(CudaDevice device, long address, ElementType type, long length, Lifetime lifetime,
            StreamOrder order) {
        DeviceBuffer buffer = new DeviceBuffer(device, null, address, type, length, lifetime, order, null, null);
        lifetime.watch(buffer);
        return buffer;
    }

    /**
     * A view of graph memory at {@code address}, which {@code owner}'s graph allocates at each launch
     * and owns: the view frees nothing, and the graph closes it with itself.
     *
     * @param capturedOn the capturing stream that allocated it, whose capture {@link #close()} adds
     *     the free node to; null for an allocation node added to a built graph
     */
    static DeviceBuffer graphMemory(CudaDevice device, long address, ElementType type, long length,
            GraphAllocations owner, CudaStream capturedOn, String graph) {
        Lifetime lifetime = new Lifetime(LiveCounters.Kind.DEVICE_BUFFER, 0, String.format(
                "DeviceBuffer 0x%X (%d x %s) on device %d, graph memory of %s", address, length, type,
                device.ordinal(), graph), () -> { });
        owner.allocated(lifetime);
        return new DeviceBuffer(device, null, address, type, length, lifetime, null, owner, capturedOn);
    }

    /**
     * Wraps device memory that another library allocated and owns (PyTorch's caching allocator,
     * ONNX Runtime's arena, a {@code cudaMalloc} through JavaCPP or your own FFM calls) as a typed
     * buffer: copies, memsets, slices, kernel arguments, captures and graph nodes take it like
     * memory of this library's own.
     *
     * <p>The library never frees borrowed memory: {@link #close()} ends this wrapper's use, and the
     * wrapper, its slices and new uses of it are refused from then on. A graph or an executable
     * that uses the buffer keeps the wrapper's lifetime, as for any buffer, but cannot keep the
     * lender's memory: the lender must keep it allocated until every graph and executable using it
     * is closed and their launches have completed. Memory freed before then is freed under them,
     * and what a launch then reads or writes is undefined, as in CUDA; the library cannot see a
     * free it did not make.
     *
     * <p>The address is checked before the wrapper is made: it must be device (or managed) memory
     * of {@code device} ({@code cudaPointerGetAttributes}), aligned to the element size, with
     * {@code length} elements inside its allocation ({@code cuMemGetAddressRange}, through the
     * driver's entry point; where the driver cannot tell an allocation's bounds, as for some
     * virtual-memory mappings, the view's last byte must be device memory of that device too).
     *
     * @param device the device the memory belongs to
     * @param address the device address of the first element
     * @param type the element type, which fixes the size of an element and the arrays it copies
     * @param length the number of elements; at least 1
     * @return the wrapper, which the caller closes; closing frees nothing
     * @throws IllegalArgumentException if the address is 0, misaligned, host memory, memory of
     *     another device, or the allocation holds fewer than {@code length} elements from it
     */
    public static DeviceBuffer borrow(CudaDevice device, long address, ElementType type, long length) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(type, "type");
        if (length < 1) {
            throw new IllegalArgumentException("a borrowed buffer needs at least one element, got " + length);
        }
        if (length > Long.MAX_VALUE / type.byteSize()) {
            throw new IllegalArgumentException(length + " elements of " + type + " exceed Long.MAX_VALUE bytes");
        }
        long byteSize = length * type.byteSize();
        String view = String.format("0x%X (%d x %s, %d bytes)", address, length, type, byteSize);
        if (address == 0) {
            throw new IllegalArgumentException("cannot borrow address 0: it is no device memory");
        }
        if (address % type.byteSize() != 0) {
            throw new IllegalArgumentException(view + " is not aligned to the " + type.byteSize() + "-byte elements");
        }
        Devices.use(device.ordinal());
        requireDeviceMemory(device, address, view);
        Driver.AddressRange range = Driver.addressRange(address);
        if (range != null) {
            if (range.bytesFrom(address) < byteSize) {
                throw new IllegalArgumentException(String.format("%s does not fit its allocation: the allocation at "
                        + "0x%X holds %d bytes, %d of them from 0x%X", view, range.base(), range.byteSize(),
                        range.bytesFrom(address), address));
            }
        } else {
            requireDeviceMemory(device, address + byteSize - 1, view + " ends at 0x"
                    + Long.toHexString(address + byteSize - 1) + ", which");
        }
        Lifetime lifetime = new Lifetime(LiveCounters.Kind.DEVICE_BUFFER, 0, String.format(
                "borrowed DeviceBuffer 0x%X (%d x %s) on device %d", address, length, type, device.ordinal()), () -> { });
        DeviceBuffer buffer = new DeviceBuffer(device, null, address, type, length, lifetime, null, null, null, true);
        lifetime.watch(buffer);
        return buffer;
    }

    private static void requireDeviceMemory(CudaDevice device, long address, String what) {
        Memory.Kind kind = Memory.kindOf(address);
        if (kind.type() != Memory.DEVICE && kind.type() != Memory.MANAGED) {
            throw new IllegalArgumentException(what + " is " + (kind.type() == Memory.HOST ? "pinned host memory"
                    : "not memory CUDA knows (unregistered host memory, or nothing)") + ", not device memory");
        }
        if (kind.type() == Memory.DEVICE && kind.device() != device.ordinal()) {
            throw new IllegalArgumentException(what + " is memory of device " + kind.device() + ", not of " + device);
        }
    }

    /**
     * {@return whether another library owns this buffer's memory ({@link #borrow}), which closing does
     * not free}
     */
    public boolean isBorrowed() {
        return allocation.borrowed;
    }

    /** {@return the device the memory is on} */
    public CudaDevice device() {
        return device;
    }

    /** {@return the type of the elements, which fixes their size and the arrays this buffer copies} */
    public ElementType elementType() {
        return type;
    }

    /** {@return the number of elements (not bytes)} */
    public long length() {
        return length;
    }

    /** {@return the size in bytes: {@link #length()} times the element size} */
    public long byteSize() {
        return length * type.byteSize();
    }

    /** {@return the allocation this buffer lies in: itself, unless it is a slice} */
    public DeviceBuffer allocation() {
        return allocation;
    }

    /** {@return the offset in bytes from the start of {@link #allocation()}; 0 for an allocation} */
    public long byteOffset() {
        return address - allocation.address;
    }

    /**
     * {@return whether this is graph memory: its allocation is owned by a graph, and exists only
     * while a launch of that graph runs between its allocation and free nodes}
     */
    public boolean isGraphMemory() {
        return allocation.graphOwner != null;
    }

    /** {@return whether this buffer owns its allocation (it is not a slice)} */
    public boolean isAllocation() {
        return allocation == this;
    }

    /**
     * Makes a view of {@code length} elements starting at element {@code offset}. It does not own memory.
     *
     * @param offset the first element of the view, counted in elements (not bytes) from this buffer's start
     * @param length the number of elements in the view; at least 1
     * @return the slice, which shares this buffer's allocation and element type
     * @throws IndexOutOfBoundsException if the range is not inside this buffer
     * @throws IllegalArgumentException if {@code length} is 0
     * @throws IllegalStateException if the allocation is closed
     */
    public DeviceBuffer slice(long offset, long length) {
        ensureOpen();
        Objects.checkFromIndexSize(offset, length, this.length);
        if (length == 0) {
            throw new IllegalArgumentException("a slice needs at least one element");
        }
        return new DeviceBuffer(device, allocation, address + offset * type.byteSize(), type, length,
                allocation.lifetime, null, null, null);
    }

    /**
     * {@return the device address as a segment of size zero, for interop} It cannot be dereferenced on
     * the host.
     *
     * @throws IllegalStateException if the allocation is closed
     */
    public MemorySegment handle() {
        return MemorySegment.ofAddress(address());
    }

    /**
     * {@return the device address; used as a kernel argument}
     *
     * @throws IllegalStateException if the allocation is closed
     */
    public long address() {
        ensureOpen();
        return address;
    }

    /**
     * {@return whether this buffer is open: false once its allocation has been closed, even while a graph
     * still keeps the memory alive}
     */
    public boolean isOpen() {
        return lifetime.isOpen();
    }

    // Copies from and to Java arrays.

    /**
     * Copies all of {@code source} into this buffer; complete on return.
     *
     * @param source exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#FLOAT32}, or the
     *     lengths differ
     */
    public void copyFrom(float[] source) {
        copyFrom(MemorySegment.ofArray(source), ElementType.FLOAT32, source.length);
    }

    /**
     * Copies all of {@code source} into this buffer; complete on return.
     *
     * @param source exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#FLOAT64}, or the
     *     lengths differ
     */
    public void copyFrom(double[] source) {
        copyFrom(MemorySegment.ofArray(source), ElementType.FLOAT64, source.length);
    }

    /**
     * Copies all of {@code source} into this buffer; complete on return.
     *
     * @param source exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#INT32}, or the
     *     lengths differ
     */
    public void copyFrom(int[] source) {
        copyFrom(MemorySegment.ofArray(source), ElementType.INT32, source.length);
    }

    /**
     * Copies all of {@code source} into this buffer; complete on return.
     *
     * @param source exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#INT64}, or the
     *     lengths differ
     */
    public void copyFrom(long[] source) {
        copyFrom(MemorySegment.ofArray(source), ElementType.INT64, source.length);
    }

    /**
     * Copies all of {@code source} into this buffer; complete on return.
     *
     * @param source exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#INT8}, or the
     *     lengths differ
     */
    public void copyFrom(byte[] source) {
        copyFrom(MemorySegment.ofArray(source), ElementType.INT8, source.length);
    }

    /**
     * Copies all of {@code source}, the bits of 16-bit floats, into this buffer; complete on return.
     *
     * @param source exactly {@link #length()} values, each the bits of a {@link ElementType#FLOAT16} or
     *     {@link ElementType#BFLOAT16} as this buffer holds (see {@link HalfFloats})
     * @throws IllegalArgumentException if this buffer does not hold FLOAT16 or BFLOAT16, or the lengths differ
     */
    public void copyFrom(short[] source) {
        requireHalf();
        checkLength(source.length);
        stage(MemorySegment.ofArray(source), true);
    }

    /**
     * Copies floats into this {@link ElementType#FLOAT16} or {@link ElementType#BFLOAT16} buffer, each
     * rounded to the nearest value of the buffer's type, ties to even ({@link HalfFloats}); complete
     * on return.
     *
     * @param source exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold FLOAT16 or BFLOAT16, or the lengths differ
     */
    public void copyFromRounded(float[] source) {
        requireHalf();
        checkLength(source.length);
        stage(MemorySegment.ofArray(HalfFloats.fromFloats(source, type)), true);
    }

    /**
     * Copies this buffer of 16-bit floats into all of {@code destination}, as their bits; complete on return.
     *
     * @param destination room for exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold FLOAT16 or BFLOAT16, or the lengths differ
     */
    public void copyTo(short[] destination) {
        requireHalf();
        checkLength(destination.length);
        stage(MemorySegment.ofArray(destination), false);
    }

    /**
     * Copies this buffer into all of {@code destination}; complete on return.
     *
     * @param destination room for exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#FLOAT32}, or the
     *     lengths differ
     */
    public void copyTo(float[] destination) {
        copyTo(MemorySegment.ofArray(destination), ElementType.FLOAT32, destination.length);
    }

    /**
     * Copies this buffer into all of {@code destination}; complete on return.
     *
     * @param destination room for exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#FLOAT64}, or the
     *     lengths differ
     */
    public void copyTo(double[] destination) {
        copyTo(MemorySegment.ofArray(destination), ElementType.FLOAT64, destination.length);
    }

    /**
     * Copies this buffer into all of {@code destination}; complete on return.
     *
     * @param destination room for exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#INT32}, or the
     *     lengths differ
     */
    public void copyTo(int[] destination) {
        copyTo(MemorySegment.ofArray(destination), ElementType.INT32, destination.length);
    }

    /**
     * Copies this buffer into all of {@code destination}; complete on return.
     *
     * @param destination room for exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#INT64}, or the
     *     lengths differ
     */
    public void copyTo(long[] destination) {
        copyTo(MemorySegment.ofArray(destination), ElementType.INT64, destination.length);
    }

    /**
     * Copies this buffer into all of {@code destination}; complete on return.
     *
     * @param destination room for exactly {@link #length()} values
     * @throws IllegalArgumentException if this buffer does not hold {@link ElementType#INT8}, or the
     *     lengths differ
     */
    public void copyTo(byte[] destination) {
        copyTo(MemorySegment.ofArray(destination), ElementType.INT8, destination.length);
    }

    /**
     * {@return a new float array holding this buffer's contents; a {@link ElementType#FLOAT16} or
     * {@link ElementType#BFLOAT16} buffer's values are widened, exactly}
     *
     * @throws IllegalArgumentException if this buffer does not hold FLOAT32, FLOAT16 or BFLOAT16
     * @throws ArithmeticException if the buffer has more elements than an array can hold
     */
    public float[] toFloatArray() {
        if (type == ElementType.FLOAT16 || type == ElementType.BFLOAT16) {
            short[] bits = new short[Math.toIntExact(length)];
            copyTo(bits);
            return HalfFloats.toFloats(bits, type);
        }
        checkType(ElementType.FLOAT32);
        float[] result = new float[Math.toIntExact(length)];
        copyTo(result);
        return result;
    }

    // Copies from and to segments.

    /**
     * Copies {@link #byteSize()} bytes from {@code source}, which must have exactly that size; complete on
     * return.
     *
     * @param source host memory: a native segment is copied directly, a heap one through a staging buffer
     * @throws IllegalArgumentException if the sizes differ
     * @throws IllegalStateException if {@code source}'s arena or this buffer's allocation is closed
     */
    public void copyFrom(MemorySegment source) {
        checkSize(source);
        if (source.isNative()) {
            copy(address(), source.address(), byteSize());
        } else {
            stage(source, true);
        }
    }

    /**
     * Copies {@link #byteSize()} bytes to {@code destination}, which must have exactly that size; complete
     * on return.
     *
     * @param destination host memory: a native segment is copied directly, a heap one through a staging
     *     buffer
     * @throws IllegalArgumentException if the sizes differ
     * @throws IllegalStateException if {@code destination}'s arena or this buffer's allocation is closed
     */
    public void copyTo(MemorySegment destination) {
        checkSize(destination);
        if (destination.isNative()) {
            copy(destination.address(), address(), byteSize());
        } else {
            stage(destination, false);
        }
    }

    /**
     * Queues a copy from native host memory; {@code source} must stay valid until it runs. In a
     * capture the graph borrows {@code source}: it holds the segment (an automatic arena's memory
     * stays valid while the graph or an executable does), but an arena its owner closes must stay
     * open until they are closed; for a {@link PinnedBuffer}, pass the buffer itself, which the graph
     * keeps allocated.
     *
     * @param source native host memory of exactly {@link #byteSize()} bytes; a {@link PinnedBuffer}'s
     *     segment makes the copy truly asynchronous
     * @param stream the stream the copy is ordered on
     * @throws IllegalArgumentException if the sizes differ, or {@code source} is a heap segment
     * @throws IllegalStateException if {@code source}'s arena, this buffer or the stream is closed
     */
    public void copyFromAsync(MemorySegment source, CudaStream stream) {
        checkSize(source);
        checkNative(source);
        requireGraphOrder(stream);
        onDeviceOf(stream);
        Memory.copyAsync(address(), source.address(), byteSize(), stream.handle());
        keepAliveIfCapturing(stream, source);
    }

    /**
     * Queues a copy to native host memory; read it only after the stream has reached the copy. In a
     * capture the graph borrows {@code destination}, as {@link #copyFromAsync(MemorySegment, CudaStream)}
     * borrows its source.
     *
     * @param destination native host memory of exactly {@link #byteSize()} bytes; a {@link PinnedBuffer}'s
     *     segment makes the copy truly asynchronous
     * @param stream the stream the copy is ordered on
     * @throws IllegalArgumentException if the sizes differ, or {@code destination} is a heap segment
     * @throws IllegalStateException if {@code destination}'s arena, this buffer or the stream is closed
     */
    public void copyToAsync(MemorySegment destination, CudaStream stream) {
        checkSize(destination);
        checkNative(destination);
        requireGraphOrder(stream);
        onDeviceOf(stream);
        Memory.copyAsync(destination.address(), address(), byteSize(), stream.handle());
        keepAliveIfCapturing(stream, destination);
    }

    /**
     * Queues a copy of all of {@code source}, page-locked host memory, into this buffer, truly
     * asynchronous. In a capture the graph keeps {@code source} allocated, as it keeps this buffer:
     * closing it before the graph and its executables are closed defers the free, so a launch never
     * reads freed host memory (a copy of {@code source.segment()} keeps nothing alive). Outside a
     * capture, keep {@code source} open until the stream has reached the copy.
     *
     * @param source page-locked host memory of exactly {@link #byteSize()} bytes
     * @param stream the stream the copy is ordered on
     * @throws IllegalArgumentException if the sizes differ
     * @throws IllegalStateException if {@code source}, this buffer or the stream is closed
     */
    public void copyFromAsync(PinnedBuffer source, CudaStream stream) {
        Lifetime host = source.lifetime();
        host.ensureOpen();
        keepAliveIfCapturing(stream, host); // first: a close racing with the copy cannot free it under the node
        copyFromAsync(source.segment(), stream);
    }

    /**
     * Queues a copy of all of this buffer into {@code destination}, page-locked host memory, truly
     * asynchronous; read it after the stream has reached the copy. In a capture the graph keeps
     * {@code destination} allocated, as {@link #copyFromAsync(PinnedBuffer, CudaStream)} keeps its
     * source.
     *
     * @param destination page-locked host memory of exactly {@link #byteSize()} bytes
     * @param stream the stream the copy is ordered on
     * @throws IllegalArgumentException if the sizes differ
     * @throws IllegalStateException if {@code destination}, this buffer or the stream is closed
     */
    public void copyToAsync(PinnedBuffer destination, CudaStream stream) {
        Lifetime host = destination.lifetime();
        host.ensureOpen();
        keepAliveIfCapturing(stream, host); // first: a close racing with the copy cannot free it under the node
        copyToAsync(destination.segment(), stream);
    }

    // Device to device.

    /**
     * Copies all of {@code source}, which must have this buffer's type and length; complete on return.
     *
     * @param source the device buffer to copy from
     * @throws IllegalArgumentException if the element types or lengths differ
     * @throws IllegalStateException if either buffer's allocation is closed
     */
    public void copyFrom(DeviceBuffer source) {
        checkSame(source);
        source.awaitStreamOrder();
        copy(address(), source.address(), byteSize());
    }

    /**
     * Queues a copy of all of {@code source}, which must have this buffer's type and length.
     *
     * @param source the device buffer to copy from
     * @param stream the stream the copy is ordered on
     * @throws IllegalArgumentException if the element types or lengths differ
     * @throws IllegalStateException if either buffer's allocation or the stream is closed
     */
    public void copyFromAsync(DeviceBuffer source, CudaStream stream) {
        checkSame(source);
        requireGraphOrder(stream);
        source.requireGraphOrder(stream);
        onDeviceOf(stream);
        Memory.copyAsync(address(), source.address(), byteSize(), stream.handle());
        keepAliveIfCapturing(stream);
        source.keepAliveIfCapturing(stream);
    }

    /**
     * Sets every byte to {@code byteValue} (its low 8 bits); complete on return. 0xFF in every byte of a
     * float is NaN.
     *
     * @param byteValue the value for each byte; only the low 8 bits count
     * @throws IllegalStateException if the allocation is closed
     */
    public void memset(int byteValue) {
        ensureOpen();
        awaitStreamOrder();
        Devices.use(device.ordinal());
        Memory.set(address, byteValue, byteSize());
    }

    /**
     * Queues setting every byte to {@code byteValue} (its low 8 bits).
     *
     * @param byteValue the value for each byte; only the low 8 bits count
     * @param stream the stream the memset is ordered on
     * @throws IllegalArgumentException if the stream's device cannot reach this buffer: neither its
     *     device nor a peer with {@linkplain CudaDevice#enablePeerAccess access enabled}
     * @throws IllegalStateException if the allocation or the stream is closed
     */
    public void memsetAsync(int byteValue, CudaStream stream) {
        int launchDevice = stream.device().ordinal();
        if (!Devices.reaches(launchDevice, device.ordinal())) {
            throw new IllegalArgumentException(this + " is on device " + device.ordinal() + ", but the stream is on device "
                    + launchDevice + ", which has no peer access to it: set it on a stream of device "
                    + device.ordinal() + ", or enable peer access first (CudaDevice.enablePeerAccess)");
        }
        requireGraphOrder(stream);
        onDeviceOf(stream);
        Memory.setAsync(address(), byteValue, byteSize(), stream.handle());
        keepAliveIfCapturing(stream);
    }

    /**
     * Makes {@code stream}'s device current before an asynchronous copy or memset: without it, on a
     * host of two H200s, a thread with device 0 current that queued a memset and a copy on a stream of
     * device 1 read back bytes the memset had not yet written.
     */
    private static void onDeviceOf(CudaStream stream) {
        Devices.use(stream.device().ordinal());
    }

    /**
     * Graph memory is usable only on a stream capturing into its own graph.
     *
     * @throws IllegalStateException if this is graph memory and {@code stream} is not capturing into
     *     the graph that owns it
     */
    private void requireGraphOrder(CudaStream stream) {
        GraphAllocations owner = allocation.graphOwner;
        if (owner != null) {
            CaptureTracker.Capture<?> capture = CaptureTracker.of(stream.captureSlot());
            if (capture == null || capture.allocations() != owner) {
                throw new IllegalStateException(this + " exists only inside its own graph, but " + stream
                        + (capture == null ? " is not capturing" : " is capturing into another graph")
                        + ": use it in the capture that allocated it, or in nodes of its graph");
            }
        }
    }

    /** {@return the graph memory this buffer lies in, or {@code null} if it is not graph memory} */
    GraphAllocations graphOwner() {
        return allocation.graphOwner;
    }

    /** A captured operation keeps the allocation alive for the graph it goes into. */
    private void keepAliveIfCapturing(CudaStream stream) {
        CaptureTracker.Capture<?> capture = CaptureTracker.of(stream.captureSlot());
        if (capture != null) {
            capture.use(List.of(lifetime));
        }
    }

    /**
     * A captured copy keeps the allocation alive, and holds the caller's host segment, for the graph it
     * goes into, so that an automatic arena's memory is not collected under the node
     * ({@link BorrowedHostMemory}).
     */
    private void keepAliveIfCapturing(CudaStream stream, MemorySegment host) {
        CaptureTracker.Capture<?> capture = CaptureTracker.of(stream.captureSlot());
        if (capture != null) {
            Lifetime borrowed = BorrowedHostMemory.of(host);
            try {
                capture.use(List.of(lifetime, borrowed));
            } finally {
                borrowed.close(); // the capture holds it now, or nothing does
            }
        }
    }

    /** A captured copy keeps the host memory it reads or writes alive for the graph it goes into. */
    private static void keepAliveIfCapturing(CudaStream stream, Lifetime host) {
        CaptureTracker.Capture<?> capture = CaptureTracker.of(stream.captureSlot());
        if (capture != null) {
            capture.use(List.of(host));
        }
    }

    /**
     * Frees the allocation; on a slice this does nothing. Idempotent. A stream-ordered allocation is
     * freed in its stream's order ({@link MemoryPool#allocate} says more).
     *
     * @throws IllegalStateException if this stream-ordered buffer's stream is in a capture that the
     *     library did not begin; the buffer then stays open
     */
    @Override
    public void close() {
        if (!isAllocation()) {
            return;
        }
        if (graphOwner != null) {
            closeGraphMemory();
        } else if (order != null) {
            order.close(lifetime);
        } else {
            lifetime.close();
        }
    }

    /**
     * Frees this stream-ordered allocation in {@code stream}'s order ({@code cudaFreeAsync} on
     * {@code stream}), a stream other than the one that allocated it, as CUDA allows; otherwise as
     * {@link #close()}. The caller orders the work that uses the buffer on other streams before the
     * free, as in CUDA: typically {@code stream} waits for an event recorded on the allocating stream
     * after the last use there ({@link CudaStream#waitFor}). If a graph, an executable or a capture
     * still holds the buffer, the free is deferred until they let go, and then made as
     * {@link MemoryPool} describes, whatever {@code stream} was. Idempotent, like {@code close()}.
     *
     * @param stream the stream whose order the free takes; on this buffer's device, open and not
     *     capturing
     * @throws IllegalArgumentException if {@code stream} is on another device
     * @throws IllegalStateException if this buffer is not a stream-ordered allocation
     *     ({@code cudaMalloc} memory, borrowed memory or a slice: {@link #close()} it), is graph memory,
     *     which its graph frees, or {@code stream} is closed or capturing; the buffer then stays open
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY__POOLS.html">cudaFreeAsync</a>
     */
    public void closeOn(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        if (graphOwner != null || allocation.graphOwner != null) {
            throw new IllegalStateException(this + " is graph memory: its graph frees it (a free node, or the end of "
                    + "its capture), and this library lets no graph memory outlive its graph's launch, so nothing "
                    + "is left to free on a stream afterwards");
        }
        if (!isAllocation() || order == null) {
            throw new IllegalStateException(this + " is not a stream-ordered allocation (MemoryPool.allocate, "
                    + "CudaStream.allocate), which alone cudaFreeAsync frees: close() it");
        }
        order.close(lifetime, stream);
    }

    /**
     * Graph memory's close: during the capture that allocated it, a free node
     * ({@code cudaFreeAsync} on the capturing stream), after which the capture may not use it; in
     * all other cases the graph that owns the memory frees it, and this only stops new uses.
     */
    private void closeGraphMemory() {
        if (!lifetime.isOpen()) {
            return;
        }
        if (capturedOn != null && capturedOn.isOpen()) {
            CaptureTracker.Capture<?> capture = CaptureTracker.of(capturedOn.captureSlot());
            if (capture != null && capture.allocations() == graphOwner) {
                Devices.use(device.ordinal());
                MemoryPools.freeAsync(address, capturedOn.handle());
                graphOwner.freed(lifetime, toString());
            }
        }
        lifetime.close();
    }

    /**
     * Before a synchronous access: graph memory is refused, and a stream-ordered allocation waits
     * for its stream.
     */
    private void awaitStreamOrder() {
        if (allocation.graphOwner != null) {
            throw new IllegalStateException(this + " exists only while its graph runs, between its allocation and "
                    + "free nodes, so the host cannot copy or set it: copy it into a buffer of your own inside the "
                    + "graph (a memcpy node, or an Async copy on the capturing stream)");
        }
        StreamOrder streamOrder = allocation.order;
        if (streamOrder != null) {
            streamOrder.awaitStream(this);
        }
    }

    /** The lifetime of the allocation, for what must keep it alive (graphs). */
    Lifetime lifetime() {
        return lifetime;
    }

    @Override
    public String toString() {
        return isAllocation() ? lifetime.toString()
                : String.format("slice [%d, %d) of %s", byteOffset() / type.byteSize(),
                        byteOffset() / type.byteSize() + length, lifetime);
    }

    private void ensureOpen() {
        lifetime.ensureOpen();
    }

    private void copyFrom(MemorySegment array, ElementType arrayType, int arrayLength) {
        checkType(arrayType);
        checkLength(arrayLength);
        stage(array, true);
    }

    private void copyTo(MemorySegment array, ElementType arrayType, int arrayLength) {
        checkType(arrayType);
        checkLength(arrayLength);
        stage(array, false);
    }

    /** Copies through a native staging buffer of at most {@link #STAGING_BYTES}. */
    private void stage(MemorySegment heap, boolean toDevice) {
        long total = byteSize();
        long device = address();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(Math.min(total, STAGING_BYTES), 16);
            for (long done = 0; done < total; done += staging.byteSize()) {
                long chunk = Math.min(staging.byteSize(), total - done);
                if (toDevice) {
                    MemorySegment.copy(heap, done, staging, 0, chunk);
                    copy(device + done, staging.address(), chunk);
                } else {
                    copy(staging.address(), device + done, chunk);
                    MemorySegment.copy(staging, 0, heap, done, chunk);
                }
            }
        }
    }

    /** A copy complete on return, made from this buffer's device. */
    private void copy(long destination, long source, long byteSize) {
        awaitStreamOrder();
        Devices.use(device.ordinal());
        Memory.copy(destination, source, byteSize);
    }

    private void checkType(ElementType expected) {
        if (type != expected) {
            throw new IllegalArgumentException("buffer holds " + type + ", not " + expected);
        }
    }

    private void requireHalf() {
        if (type != ElementType.FLOAT16 && type != ElementType.BFLOAT16) {
            throw new IllegalArgumentException("buffer holds " + type + ", not FLOAT16 or BFLOAT16");
        }
    }

    private void checkLength(long arrayLength) {
        if (arrayLength != length) {
            throw new IllegalArgumentException("buffer has " + length + " elements but the array has " + arrayLength
                    + "; copy through a slice for part of a buffer");
        }
    }

    private void checkSize(MemorySegment segment) {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the host segment's arena is closed");
        }
        if (segment.byteSize() != byteSize()) {
            throw new IllegalArgumentException("buffer has " + byteSize() + " bytes but the segment has "
                    + segment.byteSize());
        }
    }

    private static void checkNative(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("an asynchronous copy needs a native segment (ideally a PinnedBuffer), "
                    + "not a heap segment");
        }
    }

    private void checkSame(DeviceBuffer source) {
        if (source.type != type || source.length != length) {
            throw new IllegalArgumentException("source is " + source.length + " x " + source.type + " but this buffer is "
                    + length + " x " + type);
        }
    }
}
