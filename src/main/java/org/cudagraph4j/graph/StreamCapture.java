package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.CaptureStatus;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.GraphAccess;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.StreamCaptureException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.HeldResources;

/**
 * A stream capture in progress, from {@link #begin(CudaStream, CaptureMode)}: work queued on the stream
 * (and on streams that join it through events) is recorded into a graph instead of running.
 *
 * <pre>{@code
 * try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
 *     kernel.launch(stream, config, args);
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
    /** What this package does with the root package's objects beyond their public API. */
    private static final GraphAccess ROOT = GraphAccess.get();

    private final CudaStream stream;
    private final CaptureMode mode;
    private final CaptureTracker.Capture<KernelLaunch> capture;
    private boolean finished;
    /** Conditional nodes added to the capture; the graph end() returns takes them in. */
    private final List<ConditionalNode> conditionals = new ArrayList<>();

    private StreamCapture(CudaStream stream, CaptureMode mode, CaptureTracker.Capture<KernelLaunch> capture) {
        this.stream = stream;
        this.mode = mode;
        this.capture = capture;
    }

    /**
     * Starts capturing the work queued on {@code stream} into a graph. Close the returned scope
     * (try-with-resources) to end capture; call {@link #end()} inside it to keep the graph.
     *
     * @param stream the stream to capture
     * @param mode which unsafe calls the capture forbids while it runs
     * @return the capture scope, to end or close; unless {@code mode} is {@link CaptureMode#RELAXED}, end and
     *     close it on the OS thread that began it
     * @throws IllegalStateException if {@code stream} is closed or already capturing
     * @throws CudaException if the runtime refuses to begin capture
     */
    public static StreamCapture begin(CudaStream stream, CaptureMode mode) {
        MemorySegment handle = stream.handle();
        CaptureTracker.Capture<KernelLaunch> capture = CaptureTracker.begin(ROOT.captureSlot(stream),
                new Name(mode, stream), KernelLaunch.class);
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
     * A handle for conditional nodes of the graph being captured, with CUDA's defaults, as
     * {@link CudaGraph#conditionalHandle()} makes one: a launch does not reset the value, so a kernel
     * captured before the node must set it. For a value that every launch starts at, use
     * {@link #conditionalHandle(int, boolean) conditionalHandle(defaultValue, true)}.
     *
     * @return the new handle, with {@link ConditionalHandle#resetsEachLaunch()} false
     * @throws IllegalStateException if the capture has ended, or the stream is not capturing
     */
    public ConditionalHandle conditionalHandle() {
        return conditionalHandle(0, false);
    }

    /**
     * A handle for conditional nodes of the graph being captured, as
     * {@link CudaGraph#conditionalHandle(int, boolean)} makes one for a built graph.
     *
     * @param defaultValue the value at the start of each launch, if {@code resetEachLaunch}
     * @param resetEachLaunch whether each launch starts at {@code defaultValue}
     * @return the new handle
     * @throws IllegalStateException if the capture has ended, or the stream is not capturing
     */
    public ConditionalHandle conditionalHandle(int defaultValue, boolean resetEachLaunch) {
        return ConditionalHandle.create(captureGraph().graph(), defaultValue, resetEachLaunch);
    }

    /**
     * Adds an IF node to the capture after the work captured so far; the work captured next waits
     * for it. Fill its body with {@link CudaGraph}'s methods (it is not captured into).
     *
     * @param condition a handle of this capture, set by a kernel captured before
     * @return the node (its {@link ConditionalNode#node()} exists once the capture has ended) and its body
     * @throws IllegalArgumentException if {@code condition} belongs to another graph or already drives a node
     * @throws IllegalStateException if the capture has ended, or the stream is not capturing
     * @see CudaGraph#ifThen
     */
    public ConditionalNode ifThen(ConditionalHandle condition) {
        return addConditional(condition, ConditionalType.IF, 1);
    }

    /**
     * Adds an IF/ELSE node to the capture, as {@link #ifThen} does an IF node.
     *
     * @param condition a handle of this capture
     * @return the node and its THEN and ELSE bodies
     * @throws IllegalArgumentException if {@code condition} belongs to another graph or already drives a node
     * @throws IllegalStateException if the capture has ended, or the stream is not capturing
     * @see CudaGraph#ifThenElse
     */
    public ConditionalNode ifThenElse(ConditionalHandle condition) {
        return addConditional(condition, ConditionalType.IF, 2);
    }

    /**
     * Adds a WHILE node to the capture, as {@link #ifThen} does an IF node.
     *
     * @param condition a handle of this capture
     * @return the node and its body, which sets the value for the next check
     * @throws IllegalArgumentException if {@code condition} belongs to another graph or already drives a node
     * @throws IllegalStateException if the capture has ended, or the stream is not capturing
     * @see CudaGraph#whileLoop
     */
    public ConditionalNode whileLoop(ConditionalHandle condition) {
        return addConditional(condition, ConditionalType.WHILE, 1);
    }

    /**
     * Adds a SWITCH node to the capture, as {@link #ifThen} does an IF node.
     *
     * @param condition a handle of this capture
     * @param cases the number of bodies, at least 1
     * @return the node and its bodies
     * @throws IllegalArgumentException if {@code cases} is below 1, or {@code condition} belongs to another graph
     *     or already drives a node
     * @throws IllegalStateException if the capture has ended, or the stream is not capturing
     * @see CudaGraph#switchOf
     */
    public ConditionalNode switchOf(ConditionalHandle condition, int cases) {
        if (cases < 1) {
            throw new IllegalArgumentException("a SWITCH node needs at least 1 case, got " + cases);
        }
        return addConditional(condition, ConditionalType.SWITCH, cases);
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
            // Each stream's last node, from which the graph walks back to its launches' nodes.
            capture.endRuns(Graphs::capturedNode);
            graph = Graphs.endCapture(stream.handle());
        } catch (RuntimeException e) {
            finishUnlessStillCapturing();
            throw e;
        }
        finished = true;
        HeldResources held = capture.handOver(); // ends the capture too
        CudaGraph captured;
        try {
            captured = new CudaGraph(graph, stream.device().ordinal(), capture.runs(), held, capture.allocations());
        } catch (RuntimeException e) {
            held.dropAll();
            capture.allocations().closeViews();
            Graphs.destroy(graph);
            discardConditionals();
            throw e;
        }
        captured.adoptConditionals(conditionals);
        conditionals.clear();
        return captured;
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
        discardConditionals();
    }

    /** Whether the capture is over after a failed end; if so, this scope is finished. */
    private boolean finishUnlessStillCapturing() {
        if (stream.isOpen() && stream.captureStatus() != CaptureStatus.NONE) {
            return false;
        }
        finish();
        capture.releaseAll();
        discardConditionals();
        return true;
    }

    private Graphs.CaptureGraph captureGraph() {
        if (finished) {
            throw new IllegalStateException("capture already ended: " + capture);
        }
        // Conditional handles and nodes are made in the current device's context.
        Devices.use(stream.device().ordinal());
        return Graphs.captureGraph(stream.handle());
    }

    private ConditionalNode addConditional(ConditionalHandle condition, ConditionalType type, int size) {
        Objects.requireNonNull(condition, "condition");
        Graphs.CaptureGraph current = captureGraph();
        if (!condition.belongsTo(current.graph())) {
            throw new IllegalArgumentException(condition + " was made for another graph: a conditional node takes a "
                    + "handle made by the capture that holds it");
        }
        Graphs.ConditionalNode added = condition.addNode(current.graph(), current.dependencies(), type, size);
        ConditionalNode node = new ConditionalNode(null, added.node(), type, condition,
                CudaGraph.bodies(added.bodies(), stream.device().ordinal(), type, toString(), capture.allocations()));
        conditionals.add(node);
        Graphs.setCaptureDependencies(stream.handle(), List.of(added.node()));
        return node;
    }

    /** The capture's graph is gone: its conditional nodes' bodies let go of what they held. */
    private void discardConditionals() {
        conditionals.forEach(node -> node.bodies().forEach(CudaGraph::closeBody));
        conditionals.clear();
    }

    private void finish() {
        finished = true;
        CaptureTracker.end(capture);
    }

    @Override
    public String toString() {
        return capture.toString();
    }

    /** How a capture names itself, made into text only for an error or a log. */
    private record Name(CaptureMode mode, CudaStream stream) {
        @Override
        public String toString() {
            return mode + " capture on " + stream;
        }
    }

}
