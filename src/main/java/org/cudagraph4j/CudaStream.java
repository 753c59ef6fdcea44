package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.HostFunctions;
import org.cudagraph4j.internal.Streams;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

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
public final class CudaStream extends NativeResource {
    private final CudaDevice device;
    private final MemorySegment handle;
    private final int priority;
    private final boolean borrowed;
    /** The capture this stream takes part in, which every launch on it reads. */
    private final CaptureTracker.Slot captureSlot;

    CudaStream(CudaDevice device, MemorySegment handle, int priority) {
        this(device, handle, priority, false, CaptureTracker.ownSlot(handle));
    }

    private CudaStream(CudaDevice device, MemorySegment handle, int priority, boolean borrowed,
            CaptureTracker.Slot captureSlot) {
        super(new Lifetime(LiveCounters.Kind.STREAM, 0,
                Lifetime.named(borrowed ? "borrowed CudaStream" : "CudaStream", handle) + " on device "
                        + device.ordinal(),
                // A borrowed stream's host-function failures stay reported for other wrappers of it.
                borrowed ? () -> { } : destroy(device.ordinal(), handle, captureSlot)));
        this.device = device;
        this.handle = handle;
        this.priority = priority;
        this.borrowed = borrowed;
        this.captureSlot = captureSlot;
    }

    /**
     * Wraps a stream that another library created and owns: PyTorch's {@code ExternalStream}, the
     * {@code user_compute_stream} of ONNX Runtime's CUDA provider, a {@code cudaStream_t} from
     * JavaCPP's presets or from your own FFM calls. The wrapper takes part in everything a stream of
     * this library does (copies, kernel launches, events, {@link org.cudagraph4j.graph.StreamCapture},
     * graph launches, the serving engine's lanes), and work the other library queues on the same
     * handle is ordered with it, as CUDA orders one stream's work.
     *
     * <p>The library never destroys a borrowed stream: {@link #close()} ends this wrapper's use and
     * frees nothing. The lender must keep the stream alive until the wrapper is closed and the work
     * queued through it has completed; the library cannot tell a destroyed or made-up handle from a
     * live one, and CUDA's behaviour on one is undefined. Several wrappers of one handle share what
     * the library knows of it, such as the capture it takes part in.
     *
     * @param device the device the stream belongs to, which is checked ({@code cudaStreamGetDevice})
     * @param handle the {@code cudaStream_t}; {@link MemorySegment#NULL} is the legacy default stream
     * @return the wrapper, which the caller closes
     * @throws IllegalArgumentException if the stream belongs to another device than {@code device}
     * @throws CudaException if the runtime refuses the handle, e.g. {@code cudaErrorInvalidResourceHandle}
     */
    public static CudaStream borrow(CudaDevice device, MemorySegment handle) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(handle, "handle");
        Devices.use(device.ordinal());
        int actual = Streams.device(handle);
        if (actual != device.ordinal()) {
            throw new IllegalArgumentException(Lifetime.named("stream", handle) + " belongs to device " + actual
                    + ", not " + device + ": borrow it on device " + actual);
        }
        return new CudaStream(device, handle, Streams.priority(handle), true, CaptureTracker.sharedSlot(handle));
    }

    /** Frees the native stream; reaches no stream object, or the cleaner could never run. */
    private static Runnable destroy(int ordinal, MemorySegment handle, CaptureTracker.Slot captureSlot) {
        return () -> {
            Devices.use(ordinal); // the cleaner's thread may have another device current
            Streams.destroy(handle);
            CaptureTracker.retire(captureSlot);
            HostFunctions.forget(handle);
        };
    }

    /**
     * {@return whether this wraps a stream another library owns ({@link #borrow}), which closing
     * does not destroy}
     */
    public boolean isBorrowed() {
        return borrowed;
    }

    /** {@return the device this stream was created on} */
    public CudaDevice device() {
        return device;
    }

    /**
     * {@return the priority asked for at creation, or for a borrowed stream the one it has; lower is
     * more urgent} The runtime may have clamped it into {@link CudaDevice#streamPriorityRange()}.
     */
    public int priority() {
        return priority;
    }

    /**
     * {@return the runtime's unique id of this stream ({@code cudaStreamGetId})}
     *
     * @throws IllegalStateException if the stream is closed
     */
    public long id() {
        return Streams.id(handle());
    }

    /**
     * Blocks until all work queued so far has finished. The wait is a call into the runtime, which
     * spins by default: a virtual thread keeps its carrier thread for the whole wait, as in any
     * native call.
     *
     * @throws HostFunctionException if a host function that ran on this stream since the last
     *     synchronization threw (its exception is the cause); the stream's work has still all run
     */
    public void synchronize() {
        MemorySegment stream = handle();
        Streams.synchronize(stream);
        raiseHostFunctionFailure(stream);
    }

    /**
     * {@return whether all work queued so far has finished, without blocking ({@code cudaStreamQuery})}
     *
     * @throws HostFunctionException as {@link #synchronize()} does, once the work has finished
     */
    public boolean isIdle() {
        MemorySegment stream = handle();
        boolean idle = Streams.isIdle(stream);
        if (idle) {
            raiseHostFunctionFailure(stream);
        }
        return idle;
    }

    /**
     * Queues {@code callback} to run on a CUDA host thread once the work queued before it has
     * finished; work queued after it waits for it ({@code cudaLaunchHostFunc}). On a capturing
     * stream it becomes a host node of the graph being captured, which runs it at every launch and
     * keeps it as long as the graph or an executable made from it is open.
     *
     * <p>The callback must not call CUDA, which CUDA forbids (it can deadlock): any call this library
     * would make from it throws {@link IllegalStateException} instead. An exception the callback
     * throws never reaches CUDA's frame: the next {@link #synchronize()} of the stream it ran on
     * raises it, as the cause of a {@link HostFunctionException}. The callback should be short: the
     * stream's later work, and other host functions, wait for it.
     *
     * @param callback what to run
     * @throws IllegalStateException if this stream is closed
     * @throws CudaException if the runtime refuses the launch
     */
    public void launchHostFunction(Runnable callback) {
        Objects.requireNonNull(callback, "callback");
        MemorySegment stream = handle();
        Devices.use(device.ordinal());
        CaptureTracker.Capture<?> capture = captureSlot.capture();
        if (capture == null) {
            HostFunctions.launchOnce(stream, callback, "host function " + callback + " on " + this);
            return;
        }
        HostFunctions.Registration registration = HostFunctions.forGraph(callback,
                "host function " + callback + " captured on " + this);
        try {
            HostFunctions.launchCaptured(stream, registration);
            capture.use(List.of(registration.lifetime()));
        } finally {
            registration.lifetime().close(); // the capture's graph holds it now, or nothing does
        }
    }

    private void raiseHostFunctionFailure(MemorySegment stream) {
        Throwable failure = HostFunctions.takeFailure(stream);
        if (failure != null) {
            throw new HostFunctionException("a host function that ran on " + this + " threw " + failure, failure);
        }
    }

    /**
     * Allocates {@code length} elements of {@code type} in this stream's order ({@code cudaMallocAsync}),
     * from the current memory pool of this stream's device: its {@linkplain CudaDevice#defaultMemoryPool()
     * default pool}, unless other code in the process changed it with {@code cudaDeviceSetMemPool}.
     * Closing the buffer frees it in this stream's order; {@link MemoryPool#allocate} describes the
     * rules, which are the same.
     *
     * <p>While this stream captures, this adds an allocation node to the graph being captured
     * instead, and returns a view of {@linkplain DeviceBuffer#isGraphMemory() graph memory}: usable
     * by the capture's later work, freed by a free node when it is closed during the capture. The
     * graph owns the memory, and is instantiated only if the capture freed every such buffer.
     *
     * @param type the element type
     * @param length the number of elements (not bytes); must be positive
     * @return the buffer, usable in this stream's order; close it when done
     * @throws IllegalArgumentException if {@code length} is not positive, or its size in bytes exceeds
     *     {@link Long#MAX_VALUE}
     * @throws IllegalStateException if this stream is closed, or is in a capture that this library did
     *     not begin
     * @throws CudaException naming {@code cudaErrorMemoryAllocation} if the pool cannot grow enough
     */
    public DeviceBuffer allocate(ElementType type, long length) {
        return StreamOrder.allocate(this, null, type, length);
    }

    /**
     * Makes later work on this stream wait until {@code event}'s last recorded work completes. If
     * the event was recorded into a capture ({@link org.cudagraph4j.graph.StreamCapture}), this
     * stream joins that capture (a fork); join it
     * back before the capture ends by recording an event here and waiting on it in the capturing
     * stream.
     *
     * @param event the event to wait for; an event never recorded makes nothing wait
     */
    public void waitFor(CudaEvent event) {
        MemorySegment stream = handle();
        MemorySegment waited = event.handle();
        CaptureTracker.Capture<?> running = captureSlot.capture();
        if (running == null) {
            Streams.waitEvent(stream, waited);
        } else {
            // The wait adds another stream's nodes to this one's dependencies: the run of launches
            // before it ends here, while the stream's last node is still its only dependency.
            synchronized (captureSlot) {
                running.endRun(captureSlot, running.hasOpenRun(captureSlot) ? Graphs.capturedNode(stream)
                        : CaptureTracker.UNKNOWN_NODE);
                Streams.waitEvent(stream, waited);
            }
        }
        CaptureTracker.Capture<?> capture = event.recordedIn();
        if (capture != null) {
            CaptureTracker.join(captureSlot, capture);
        }
    }

    /**
     * {@return whether this stream is capturing, and whether an illegal operation invalidated the capture
     * ({@code cudaStreamGetCaptureInfo})}
     */
    public CaptureStatus captureStatus() {
        return CaptureStatus.fromValue(Graphs.captureInfo(handle()).status());
    }

    /** {@return the id of the capture this stream takes part in, unique in the process; empty if none} */
    public OptionalLong captureId() {
        Graphs.CaptureInfo info = Graphs.captureInfo(handle());
        return info.status() == CaptureStatus.NONE.value() ? OptionalLong.empty() : OptionalLong.of(info.id());
    }

    /**
     * {@return the {@code cudaStream_t}, for interop with other CUDA libraries} It is valid until this
     * stream is closed.
     *
     * @throws IllegalStateException if the stream is closed
     */
    public MemorySegment handle() {
        lifetime().ensureOpen();
        return handle;
    }

    /**
     * Destroys the stream, or for a {@linkplain #borrow borrowed} one ends this wrapper's use and
     * destroys nothing. Work already queued still completes; the runtime frees the stream
     * afterwards. Idempotent.
     *
     * @throws IllegalStateException if the stream takes part in a capture that has not ended: end or
     *     close its {@link org.cudagraph4j.graph.StreamCapture} first. Destroyed mid-capture, the
     *     stream could never end it, and a capture in global mode left running forbids allocation
     *     in the whole process.
     */
    @Override
    public void close() {
        if (isOpen() && captureSlot.capture() != null) {
            throw new IllegalStateException(this + " is capturing: end or close its StreamCapture before closing "
                    + "the stream");
        }
        super.close();
    }

    /** Where this stream keeps the capture it takes part in. */
    CaptureTracker.Slot captureSlot() {
        return captureSlot;
    }
}
