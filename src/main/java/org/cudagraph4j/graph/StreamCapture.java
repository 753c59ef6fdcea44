package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.internal.CaptureTracker;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.Lifetime;

/**
 * A stream capture in progress, from {@link CudaStream#beginCapture}: work queued on the stream
 * (and on streams that join it through events) is recorded into a graph instead of running.
 *
 * <pre>{@code
 * try (StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL)) {
 *     kernel.launch(config, args);
 *     graph = capture.end();
 * }
 * }</pre>
 *
 * <p>Closing without {@link #end()} ends capture and discards the partial graph, also after an
 * illegal operation invalidated it, so the stream is usable again.
 *
 * <p>Thread safety: in {@link CaptureMode#GLOBAL} and {@link CaptureMode#THREAD_LOCAL} modes, end
 * the capture on the thread that began it; a virtual thread may be on another carrier by then, so
 * capture from platform threads, or use {@link CaptureMode#RELAXED}.
 */
public final class StreamCapture implements AutoCloseable {
    private final CudaStream stream;
    private final CaptureMode mode;
    private final CaptureTracker.Capture capture;
    private boolean finished;

    private StreamCapture(CudaStream stream, CaptureMode mode, CaptureTracker.Capture capture) {
        this.stream = stream;
        this.mode = mode;
        this.capture = capture;
    }

    /** Same as {@link CudaStream#beginCapture(CaptureMode)}. */
    public static StreamCapture begin(CudaStream stream, CaptureMode mode) {
        MemorySegment handle = stream.handle();
        CaptureTracker.Capture capture = CaptureTracker.begin(handle.address(), mode + " capture on " + stream);
        try {
            Graphs.beginCapture(handle, mode.value());
        } catch (RuntimeException e) {
            CaptureTracker.end(capture);
            throw e;
        }
        return new StreamCapture(stream, mode, capture);
    }

    public CudaStream stream() {
        return stream;
    }

    public CaptureMode mode() {
        return mode;
    }

    /**
     * Ends capture and returns the graph.
     *
     * @throws StreamCaptureException if an illegal operation invalidated the capture, or a forked
     *     stream was not joined back
     * @throws IllegalStateException if the capture already ended
     */
    public CudaGraph end() {
        if (finished) {
            throw new IllegalStateException("capture already ended: " + capture);
        }
        finished = true;
        MemorySegment graph;
        try {
            graph = Graphs.endCapture(stream.handle());
        } catch (RuntimeException e) {
            releaseAll();
            throw e;
        } finally {
            CaptureTracker.end(capture);
        }
        return new CudaGraph(graph, capture.takeRetained(), capture.kernelNodes());
    }

    /** Ends capture if {@link #end()} was not called, discarding the partial graph. Idempotent. */
    @Override
    public void close() {
        if (finished) {
            return;
        }
        finished = true;
        try {
            Graphs.destroy(Graphs.endCapture(stream.handle()));
        } catch (CudaException invalidated) {
            // The capture was invalidated or unjoined; ending it is all that was needed.
        } finally {
            CaptureTracker.end(capture);
            releaseAll();
        }
    }

    @Override
    public String toString() {
        return capture.toString();
    }

    private void releaseAll() {
        capture.takeRetained().forEach(Lifetime::release);
    }
}
