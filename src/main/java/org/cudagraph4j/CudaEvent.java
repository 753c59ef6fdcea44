package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Streams;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * A CUDA event: a marker recorded into a stream, to wait on or to time with.
 *
 * <p>Thread safety: safe to use from several threads; {@link #close()} must not race with other
 * calls on the same event.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">Event management</a>
 */
public final class CudaEvent extends NativeResource {
    /** Creation options; none gives a timing event that waits by spinning. */
    public enum Option {
        /** No timing data: cheaper to record and wait on, for pure synchronization. */
        DISABLE_TIMING(0x02),
        /** {@link #synchronize()} blocks the thread instead of spinning. */
        BLOCKING_SYNC(0x01);

        private final int flag;

        Option(int flag) {
            this.flag = flag;
        }

        /** {@return the flag bit this option sets: {@code cudaEventDisableTiming} or {@code cudaEventBlockingSync}} */
        public int flag() {
            return flag;
        }
    }

    private final CudaDevice device;
    private final MemorySegment handle;
    private final boolean timing;
    private volatile CaptureTracker.Capture<?> recordedIn;

    private final boolean borrowed;

    CudaEvent(CudaDevice device, MemorySegment handle, int flags) {
        this(device, handle, (flags & Option.DISABLE_TIMING.flag()) == 0, false);
    }

    private CudaEvent(CudaDevice device, MemorySegment handle, boolean timing, boolean borrowed) {
        super(borrowed ? new Lifetime(LiveCounters.Kind.EVENT, 0, "borrowed CudaEvent", handle, () -> { })
                : new Lifetime(LiveCounters.Kind.EVENT, 0, "CudaEvent", handle, () -> Streams.destroyEvent(handle)));
        this.device = device;
        this.handle = handle;
        this.timing = timing;
        this.borrowed = borrowed;
    }

    /**
     * Wraps an event that another library created and owns ({@code cudaEvent_t}), to record, wait
     * on and time through this library, and to join captures with, like an event of its own.
     *
     * <p>The library never destroys a borrowed event: {@link #close()} ends this wrapper's use and
     * frees nothing. The lender must keep the event alive until the wrapper is closed and every
     * graph that recorded or waited on it through the wrapper is closed. CUDA cannot say which device
     * an event belongs to, so {@code device} is taken as given; recording the event on a stream of
     * another device then fails with the runtime's error. Timing is allowed: an event created
     * without timing makes {@link #elapsedMillisSince} fail with {@code cudaErrorInvalidResourceHandle}.
     *
     * @param device the device the event was created on
     * @param handle the {@code cudaEvent_t}
     * @return the wrapper, which the caller closes
     * @throws IllegalArgumentException if {@code handle} is {@code NULL}
     * @throws CudaException if the runtime refuses the handle ({@code cudaEventQuery})
     */
    public static CudaEvent borrow(CudaDevice device, MemorySegment handle) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(handle, "handle");
        if (handle.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("NULL is no cudaEvent_t: borrow an event another library created");
        }
        Devices.use(device.ordinal());
        Streams.isComplete(handle); // a handle the runtime refuses fails here, named
        return new CudaEvent(device, handle, true, true);
    }

    /**
     * {@return whether this wraps an event another library owns ({@link #borrow}), which closing
     * does not destroy}
     */
    public boolean isBorrowed() {
        return borrowed;
    }

    /** {@return the device this event was created on} */
    public CudaDevice device() {
        return device;
    }

    /**
     * Captures the work queued on {@code stream} so far; the event completes when that work does.
     * Recording into a capturing stream records into its capture, so that streams waiting on this
     * event join it.
     *
     * @param stream the stream whose queued work the event marks
     * @throws IllegalArgumentException if the stream is on another device than this event (CUDA records
     *     an event only on its own device's streams; a stream of any device may {@linkplain
     *     CudaStream#waitFor wait} for it)
     */
    public void record(CudaStream stream) {
        if (!stream.device().equals(device)) {
            throw new IllegalArgumentException(this + " is on " + device + " and cannot record " + stream
                    + ": record it on a stream of its own device; streams of any device can wait for it");
        }
        MemorySegment streamHandle = stream.handle();
        Streams.record(handle(), streamHandle);
        CaptureTracker.Capture<?> capture = CaptureTracker.of(stream.captureSlot());
        if (capture != null) {
            capture.use(List.of(lifetime()));
        }
        recordedIn = capture;
    }

    /** The capture the last {@link #record} went into, so that a stream waiting on it joins that capture. */
    CaptureTracker.Capture<?> recordedIn() {
        return recordedIn;
    }

    /**
     * Blocks until the recorded work has completed: spinning, or asleep with
     * {@link Option#BLOCKING_SYNC}. Either way a virtual thread keeps its carrier thread for the
     * whole wait, as in any native call.
     */
    public void synchronize() {
        Streams.synchronizeEvent(handle());
    }

    /**
     * {@return whether the recorded work has completed, without blocking ({@code cudaEventQuery}); true
     * for an event never recorded}
     */
    public boolean isComplete() {
        return Streams.isComplete(handle());
    }

    /**
     * Milliseconds between {@code start} and this event, both recorded and completed; the
     * resolution is about half a microsecond.
     *
     * @param start the event recorded first
     * @return the elapsed time in milliseconds
     * @throws IllegalStateException if either event was created with {@link Option#DISABLE_TIMING}
     * @throws CudaException naming {@code cudaErrorNotReady} if either event has not completed yet
     */
    public float elapsedMillisSince(CudaEvent start) {
        if (!timing || !start.timing) {
            throw new IllegalStateException("elapsed time needs two timing events; one was created with DISABLE_TIMING");
        }
        return Streams.elapsedMillis(start.handle(), handle());
    }

    /**
     * {@return the {@code cudaEvent_t}, for interop; valid until this event is closed}
     *
     * @throws IllegalStateException if the event is closed
     */
    public MemorySegment handle() {
        lifetime().ensureOpen();
        return handle;
    }
}
