package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** Streams and events. Handles are opaque pointers owned by the public types. */
public final class Streams {
    /** {@code cudaErrorNotReady}: a query found work still pending. Not a failure. */
    private static final int NOT_READY = 600;

    private Streams() {}

    /**
     * A non-blocking stream (no implicit sync with the legacy default stream) on the current device.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamCreateWithPriority</a>
     */
    public static MemorySegment create(int priority) {
        return Out.pointer("cudaStreamCreateWithPriority", null,
                (arena, stream) -> cudaStreamCreateWithPriority(stream, cudaStreamNonBlocking(), priority));
    }

    /**
     * Destroys {@code stream}; work already queued on it still runs to completion.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamDestroy</a>
     */
    public static void destroy(MemorySegment stream) {
        Status.check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    }

    /**
     * Blocks until all work queued on {@code stream} has finished.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamSynchronize</a>
     */
    public static void synchronize(MemorySegment stream) {
        HostFunctions.refuseInCallback("cudaStreamSynchronize"); // before the call, which would deadlock
        Status.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }

    /**
     * Whether all work queued on {@code stream} has finished.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamQuery</a>
     */
    public static boolean isIdle(MemorySegment stream) {
        int status = cudaStreamQuery(stream);
        if (status == NOT_READY) {
            return false;
        }
        Status.check(status, "cudaStreamQuery");
        return true;
    }

    /**
     * Makes work queued on {@code stream} after this call wait for the work {@code event} last recorded.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamWaitEvent</a>
     */
    public static void waitEvent(MemorySegment stream, MemorySegment event) {
        Status.check(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
    }

    /**
     * The runtime's unique id for {@code stream}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamGetId</a>
     */
    public static long id(MemorySegment stream) {
        return Out.longValue("cudaStreamGetId", null, (arena, id) -> cudaStreamGetId(stream, id));
    }

    /**
     * The device {@code stream} belongs to, for a stream another library made.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamGetDevice</a>
     */
    public static int device(MemorySegment stream) {
        return Out.intValue("cudaStreamGetDevice", null, (arena, device) -> cudaStreamGetDevice(stream, device));
    }

    /**
     * The priority {@code stream} has, for a stream another library made.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamGetPriority</a>
     */
    public static int priority(MemorySegment stream) {
        return Out.intValue("cudaStreamGetPriority", null, (arena, priority) -> cudaStreamGetPriority(stream, priority));
    }

    /**
     * A new event with the given {@code cudaEvent*} flags.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">cudaEventCreateWithFlags</a>
     */
    public static MemorySegment createEvent(int flags) {
        return Out.pointer("cudaEventCreateWithFlags", null, (arena, event) -> cudaEventCreateWithFlags(event, flags));
    }

    /**
     * Destroys {@code event}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">cudaEventDestroy</a>
     */
    public static void destroyEvent(MemorySegment event) {
        Status.check(cudaEventDestroy(event), "cudaEventDestroy");
    }

    /**
     * Records {@code event} after the work queued on {@code stream} so far.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">cudaEventRecord</a>
     */
    public static void record(MemorySegment event, MemorySegment stream) {
        Status.check(cudaEventRecord(event, stream), "cudaEventRecord");
    }

    /**
     * Blocks until the work {@code event} last recorded has completed.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">cudaEventSynchronize</a>
     */
    public static void synchronizeEvent(MemorySegment event) {
        HostFunctions.refuseInCallback("cudaEventSynchronize"); // before the call, which would deadlock
        Status.check(cudaEventSynchronize(event), "cudaEventSynchronize");
    }

    /**
     * Whether the work the event last recorded has completed.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">cudaEventQuery</a>
     */
    public static boolean isComplete(MemorySegment event) {
        int status = cudaEventQuery(event);
        if (status == NOT_READY) {
            return false;
        }
        Status.check(status, "cudaEventQuery");
        return true;
    }

    /**
     * Milliseconds between two completed events, {@code start} and {@code end}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html">cudaEventElapsedTime</a>
     */
    public static float elapsedMillis(MemorySegment start, MemorySegment end) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment millis = arena.allocate(JAVA_FLOAT);
            Status.check(cudaEventElapsedTime(millis, start, end), "cudaEventElapsedTime");
            return millis.get(JAVA_FLOAT, 0);
        }
    }
}
