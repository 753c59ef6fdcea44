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

    /** A non-blocking stream (no implicit sync with the legacy default stream) on the current device. */
    public static MemorySegment create(int priority) {
        return Out.pointer("cudaStreamCreateWithPriority", null,
                (arena, stream) -> cudaStreamCreateWithPriority(stream, cudaStreamNonBlocking(), priority));
    }

    public static void destroy(MemorySegment stream) {
        Status.check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    }

    public static void synchronize(MemorySegment stream) {
        Status.check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }

    /** Whether all work queued on {@code stream} has finished. */
    public static boolean isIdle(MemorySegment stream) {
        int status = cudaStreamQuery(stream);
        if (status == NOT_READY) {
            return false;
        }
        Status.check(status, "cudaStreamQuery");
        return true;
    }

    public static void waitEvent(MemorySegment stream, MemorySegment event) {
        Status.check(cudaStreamWaitEvent(stream, event, 0), "cudaStreamWaitEvent");
    }

    public static long id(MemorySegment stream) {
        return Out.longValue("cudaStreamGetId", null, (arena, id) -> cudaStreamGetId(stream, id));
    }

    public static MemorySegment createEvent(int flags) {
        return Out.pointer("cudaEventCreateWithFlags", null, (arena, event) -> cudaEventCreateWithFlags(event, flags));
    }

    public static void destroyEvent(MemorySegment event) {
        Status.check(cudaEventDestroy(event), "cudaEventDestroy");
    }

    public static void record(MemorySegment event, MemorySegment stream) {
        Status.check(cudaEventRecord(event, stream), "cudaEventRecord");
    }

    public static void synchronizeEvent(MemorySegment event) {
        Status.check(cudaEventSynchronize(event), "cudaEventSynchronize");
    }

    /** Whether the work the event last recorded has completed. */
    public static boolean isComplete(MemorySegment event) {
        int status = cudaEventQuery(event);
        if (status == NOT_READY) {
            return false;
        }
        Status.check(status, "cudaEventQuery");
        return true;
    }

    public static float elapsedMillis(MemorySegment start, MemorySegment end) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment millis = arena.allocate(JAVA_FLOAT);
            Status.check(cudaEventElapsedTime(millis, start, end), "cudaEventElapsedTime");
            return millis.get(JAVA_FLOAT, 0);
        }
    }
}
