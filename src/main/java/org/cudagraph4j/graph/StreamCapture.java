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
import org.cudagraph4j.internal.lifetime.Lifetime;

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
    /** The existing graph the capture records into ({@link #beginInto}); {@code null} for a new graph. */
    private final CudaGraph target;
    /** What keeps {@link #target}'s native graph alive until the capture is over; {@code null} without a target. */
    private final Lifetime targetRoot;

    private StreamCapture(CudaStream stream, CaptureMode mode, CaptureTracker.Capture<KernelLaunch> capture,
            CudaGraph target, Lifetime targetRoot) {
        this.stream = stream;
        this.mode = mode;
        this.capture = capture;
        this.target = target;
        this.targetRoot = targetRoot;
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
        return new StreamCapture(stream, mode, capture, null, null);
    }

    /**
     * Starts capturing the work queued on {@code stream} into {@code graph}, an existing graph, after
     * {@code dependencies} ({@code cudaStreamBeginCaptureToGraph}): what NVIDIA's
     * {@code graphConditionalNodes} does to fill a conditional node's body by stream capture rather
     * than node by node. {@code graph} may be a graph of your own or a
     * {@linkplain ConditionalNode#body() conditional node's body}.
     *
     * <pre>{@code
     * ConditionalNode loop = graph.whileLoop(handle, start);
     * try (StreamCapture capture = StreamCapture.beginInto(loop.body(), stream, CaptureMode.GLOBAL)) {
     *     step.launch(stream);
     *     conditions.countDown(handle, count).launch(stream);
     *     capture.end(); // returns loop.body(), now holding the two kernel nodes
     * }
     * }</pre>
     *
     * <p>The captured nodes join {@code graph}, which keeps alive what they use, as for nodes added to
     * it; its kernel nodes report their launches ({@link GraphNode#kernelParams()}), and the graph's
     * own memory ({@link CudaGraph#addMemAlloc}, or a body's graph's) may be used by the captured
     * work. Allocations made on the capturing stream ({@link CudaStream#allocate}) become the
     * graph's, which must free them before it is instantiated. CUDA's rules for the graph still hold
     * as the work is recorded: a body takes only kernel, memcpy, memset and conditional work, and an
     * operation it refuses invalidates the capture, which {@link #end()} then reports. The graph
     * stays open until the capture is over even if its owner closes it, and must not be changed
     * through its own methods while the capture records into it.
     *
     * <p>Closing without {@link #end()} ends the capture, but what was recorded stays in
     * {@code graph}: CUDA records straight into it, and the library does not take nodes out. The
     * graph then keeps what those nodes use alive, as after {@link #end()}.
     *
     * @param graph the graph to record into; open, on {@code stream}'s device
     * @param stream the stream to capture
     * @param mode which unsafe calls the capture forbids while it runs
     * @param dependencies nodes of {@code graph} the captured work runs after; none for root nodes
     * @return the capture scope, to end or close, as {@link #begin} returns one
     * @throws IllegalArgumentException if {@code graph} is on another device than {@code stream}, or
     *     a dependency belongs to another graph
     * @throws IllegalStateException if {@code graph} or {@code stream} is closed, {@code stream} is
     *     already capturing, or {@code graph} is a body of a node whose own capture is still running
     * @throws CudaException if the runtime refuses to begin capture
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamBeginCaptureToGraph</a>
     */
    public static StreamCapture beginInto(CudaGraph graph, CudaStream stream, CaptureMode mode,
            GraphNode... dependencies) {
        Objects.requireNonNull(graph, "graph");
        Objects.requireNonNull(mode, "mode");
        MemorySegment graphHandle = graph.handle();
        MemorySegment handle = stream.handle();
        if (stream.device().ordinal() != graph.device().ordinal()) {
            throw new IllegalArgumentException(graph + " runs on " + graph.device() + " but " + stream + " is on "
                    + stream.device() + ": capture into a graph from a stream of its device");
        }
        List<MemorySegment> after = graph.handles(dependencies);
        Lifetime root = graph.rootLifetime();
        root.retain();
        try {
            graph.beforeCaptureInto();
            CaptureTracker.Capture<KernelLaunch> capture = CaptureTracker.begin(ROOT.captureSlot(stream),
                    new Name(mode, stream, graph), KernelLaunch.class, graph.allocations(), false);
            try {
                Devices.use(stream.device().ordinal());
                Graphs.beginCaptureToGraph(handle, graphHandle, after, mode.value());
            } catch (RuntimeException e) {
                CaptureTracker.end(capture);
                throw e;
            }
            return new StreamCapture(stream, mode, capture, graph, root);
        } catch (RuntimeException e) {
            root.release();
            throw e;
        }
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
     * @return the captured graph, which the caller closes; it keeps alive what its nodes use. For a
     *     capture {@linkplain #beginInto into an existing graph}, that graph itself, still its owner's
     *     to close (a body closes with the graph that holds its node)
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
        if (target != null) {
            return endInto();
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

    /** {@link #end()} of a capture into {@link #target}. */
    private CudaGraph endInto() {
        try {
            capture.endRuns(Graphs::capturedNode);
            Graphs.endCaptureToGraph(stream.handle());
        } catch (RuntimeException e) {
            finishUnlessStillCapturing();
            throw e;
        }
        finished = true;
        handOverToTarget(true);
        return target;
    }

    /**
     * The capture into {@link #target} is over: the graph takes what it recorded (its kernel
     * launches only after a successful end, when they can be matched to nodes), and the capture
     * lets go of the graph.
     */
    private void handOverToTarget(boolean withLaunches) {
        try {
            HeldResources held = capture.handOver();
            target.adoptCapture(held, withLaunches ? capture.runs() : List.of(), conditionals);
            conditionals.clear();
        } finally {
            targetRoot.release();
        }
    }

    /** What a capture that made no graph lets go of: for a capture into a graph, that graph takes it all. */
    private void letGo() {
        if (target != null) {
            handOverToTarget(false);
        } else {
            capture.releaseAll();
            discardConditionals();
        }
    }

    /**
     * Ends capture if {@link #end()} was not called, discarding the partial graph, also after an
     * illegal operation invalidated it. Idempotent. A capture {@linkplain #beginInto into an existing
     * graph} leaves what it recorded in that graph.
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
            if (target != null) {
                Graphs.endCaptureToGraph(stream.handle());
            } else {
                Graphs.destroy(Graphs.endCapture(stream.handle()));
            }
        } catch (CudaException e) {
            if (finishUnlessStillCapturing()) {
                return; // invalidated or unjoined: ending it was all that was needed
            }
            throw e;
        }
        finish();
        letGo();
    }

    /** Whether the capture is over after a failed end; if so, this scope is finished. */
    private boolean finishUnlessStillCapturing() {
        if (stream.isOpen() && stream.captureStatus() != CaptureStatus.NONE) {
            return false;
        }
        finish();
        letGo();
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
                CudaGraph.bodies(added.bodies(), stream.device().ordinal(), type, toString(), capture.allocations(),
                        target));
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
    private record Name(CaptureMode mode, CudaStream stream, CudaGraph into) {
        Name(CaptureMode mode, CudaStream stream) {
            this(mode, stream, null);
        }

        @Override
        public String toString() {
            return mode + " capture on " + stream + (into == null ? "" : " into " + into);
        }
    }

}
