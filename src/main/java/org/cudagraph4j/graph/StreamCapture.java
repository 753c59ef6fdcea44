package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.internal.CaptureTracker;
import org.cudagraph4j.internal.Graphs;

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
 * <p>Thread safety: use one scope from one thread at a time. In {@link CaptureMode#GLOBAL} and
 * {@link CaptureMode#THREAD_LOCAL} modes, end the capture on the OS thread that began it; a virtual
 * thread may be on another carrier by then, so capture from platform threads, or use
 * {@link CaptureMode#RELAXED}. Ending from the wrong thread throws (see {@link #end()}).
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

    /**
     * Starts capturing the work queued on {@code stream}; same as {@link CudaStream#beginCapture(CaptureMode)}.
     *
     * @param stream the stream to capture
     * @param mode which unsafe calls the capture forbids while it runs
     * @return the capture scope, to end or close
     * @throws IllegalStateException if {@code stream} is closed or already capturing
     * @throws CudaException if the runtime refuses to begin capture
     */
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

    /**
     * The stream being captured.
     *
     * @return the stream given to {@link #begin}
     */
    public CudaStream stream() {
        return stream;
    }

    /**
     * The capture mode.
     *
     * @return the mode given to {@link #begin}
     */
    public CaptureMode mode() {
        return mode;
    }

    /**
     * Ends capture and returns the graph.
     *
     * @return the captured graph, which the caller closes; it keeps alive what its nodes use
     * @throws StreamCaptureException if an illegal operation invalidated the capture, a forked
     *     stream was not joined back, or a global or thread-local capture was ended from another
     *     thread ({@code cudaErrorStreamCaptureWrongThread}). The scope follows the stream: if the
     *     runtime ended the capture anyway (driver 580 does, for the wrong thread), the scope is
     *     finished; if the stream goes on capturing, the scope stays open for {@link #end()} or
     *     {@link #close()} from the right thread
     * @throws IllegalStateException if the capture already ended
     */
    public CudaGraph end() {
        if (finished) {
            throw new IllegalStateException("capture already ended: " + capture);
        }
        MemorySegment graph;
        try {
            graph = Graphs.endCapture(stream.handle());
        } catch (RuntimeException e) {
            finishUnlessStillCapturing();
            throw e;
        }
        finish();
        try {
            return new CudaGraph(graph, capture.resources(), capture.kernelNodes());
        } finally {
            capture.releaseAll();
        }
    }

    /**
     * Ends capture if {@link #end()} was not called, discarding the partial graph, also after an
     * illegal operation invalidated it. Idempotent.
     *
     * @throws CudaException if the runtime refuses to end the capture and the stream goes on
     *     capturing (see {@link #end()}); the scope then stays open
     */
    @Override
    public void close() {
        if (finished) {
            return;
        }
        try {
            Graphs.destroy(Graphs.endCapture(stream.handle()));
        } catch (CudaException e) {
            if (finishUnlessStillCapturing()) {
                return; // invalidated or unjoined: ending it was all that was needed
            }
            throw e;
        }
        finish();
        capture.releaseAll();
    }

    /** Whether the capture is over after a failed end; if so, this scope is finished. */
    private boolean finishUnlessStillCapturing() {
        if (stream.isOpen() && stream.captureStatus() != CaptureStatus.NONE) {
            return false;
        }
        finish();
        capture.releaseAll();
        return true;
    }

    private void finish() {
        finished = true;
        CaptureTracker.end(capture);
    }

    @Override
    public String toString() {
        return capture.toString();
    }

}
