package org.cudagraph4j.internal.lifetime;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.function.ToLongFunction;

/**
 * Knows which streams are capturing, so that what a capture records (kernels' libraries, buffers,
 * events) is kept alive for the graph it produces. A stream joins a capture when it waits on an
 * event recorded in one, which is how fork/join captures reach other streams.
 *
 * <p>Each stream holds its own {@link Slot}; launch paths read it on every call, one volatile read.
 * The tracker itself keeps only a weak set of the slots, to name the running captures in errors.
 *
 * <p>Which node each captured kernel launch became is learned without asking the runtime at every
 * launch: the launches one stream queues back to back form a {@link Run}, whose nodes are found
 * afterwards by walking the graph's edges back from the stream's last node (see
 * {@link Run#resolve}). A run starts where the stream's dependencies are not a chain of its own
 * (the capture's start, a wait on an event) and ends where the next operation may add others.
 */
public final class CaptureTracker {
    /**
     * Every stream's slot, weakly, so that the captures running now can be named in error messages
     * without a registry that each capture joins and leaves (a concurrent set was a twentieth of a
     * 10-node capture's Java samples). Streams are made seldom; errors that name captures are rare.
     */
    private static final Map<Slot, Boolean> SLOTS = Collections.synchronizedMap(new WeakHashMap<>());

    private CaptureTracker() {}

    /**
     * Where one stream keeps the capture it takes part in; each stream owns one. Its monitor orders
     * the stream's captured launches: a launch and its record happen under it, so that runs list
     * launches in the order the runtime queued them.
     */
    public static final class Slot {
        private final MemorySegment stream;
        private volatile Capture<?> capture;
        /** The launches queued back to back since the last run ended; guarded by {@code this}. */
        private Run<?> run;
        /** Whether the stream has no dependencies in its capture yet (it began it); guarded by {@code this}. */
        private boolean atCaptureStart;
        /** Set once its stream is destroyed, so that a stream made later at the same address gets a slot of its own. */
        private volatile boolean retired;

        /** @param stream the {@code cudaStream_t} that owns this slot */
        public Slot(MemorySegment stream) {
            this.stream = stream;
            SLOTS.put(this, Boolean.TRUE);
        }

        /** {@return the capture the stream takes part in, or {@code null}} */
        public Capture<?> capture() {
            return capture;
        }

        /** {@return the {@code cudaStream_t} that owns this slot} */
        public MemorySegment stream() {
            return stream;
        }
    }

    /** In a {@link Run}: the first launch's node is not known, and the run cannot be resolved. */
    public static final long UNKNOWN_NODE = -1;

    /** In a {@link Run}: the first launch had no dependencies, so the walk ends at the graph's root. */
    public static final long NO_NODE = 0;

    /**
     * In a {@link Run}: the run was still open when a capture that only its own stream recorded into
     * ended, so its last node is the graph's one node that no other depends on ({@link
     * Chain#onlySink}), found when the run is resolved instead of asked of the runtime at the end.
     */
    public static final long GRAPH_SINK = -2;

    /**
     * One captured kernel node: its address, what it keeps alive, and what it launches.
     *
     * @param <L> how a kernel launch is described (see {@link Capture})
     */
    public record KernelNode<L>(long node, List<Lifetime> uses, L launch) {}

    /**
     * What the graph tells of a node, for {@link Run#resolve}.
     */
    public interface Chain {
        /** {@return the node's one dependency; {@link #NO_NODE} if it has none, {@link #UNKNOWN_NODE} if several} */
        long onlyDependency(long node);

        /** {@return whether the node is a kernel node} */
        boolean isKernel(long node);

        /** {@return the graph's one node that no node depends on; {@link #NO_NODE} if none, {@link #UNKNOWN_NODE} if several} */
        long onlySink();
    }

    /**
     * Whether a kernel node launches the kernel a recorded launch did, for runs that other
     * libraries' kernels interleave ({@link Run#resolve(Chain, LaunchMatcher)}).
     *
     * @param <L> how a kernel launch is described (see {@link Capture})
     */
    @FunctionalInterface
    public interface LaunchMatcher<L> {
        /** {@return whether kernel node {@code node} launches {@code launch}'s kernel} */
        boolean launches(long node, L launch);
    }

    /**
     * Kernel launches one stream queued back to back in a capture. Between two of them the stream
     * may have queued copies, memsets, host functions or allocations, which the walk passes over,
     * but no other kernel and no wait: a run ends before each wait this library queues, and a
     * kernel or wait queued by other code makes the walk fail rather than guess.
     *
     * @param <L> how a kernel launch is described (see {@link Capture})
     */
    public static final class Run<L> {
        private final long first;
        /**
         * The launches, two slots each: what the launch keeps alive, then what it launches ({@code
         * null} for a kernel node the library does not record). One array, not a record per launch
         * in a list: a captured launch allocates nothing here but the array's growth.
         */
        private Object[] launches = new Object[16];
        private int count;
        private long last = UNKNOWN_NODE;
        /**
         * The uses the last launch held, by identity, and how many launches since used the same list
         * without holding it yet: a capture launches with one argument list again and again, and
         * the capture's lock and hash lookups per launch were a sixth of its Java samples. The
         * capture holds them all when it hands over ({@link Capture#handOver}); until then, the
         * first hold keeps each resource alive.
         */
        private List<Lifetime> repeatedUses;
        private int repeats;

        Run(long first) {
            this.first = first;
        }

        /**
         * The nodes of the launches, walking the graph back from the stream's last node: kernel
         * nodes are matched to launches from the last, other nodes passed over. Empty unless the
         * walk meets the run's first node (or, for a run at the capture's start, the graph's root
         * with no other kernel on the way) after exactly one kernel node per launch, each node on
         * the way with a single dependency.
         */
        public List<KernelNode<L>> resolve(Chain chain) {
            return walk(chain, null);
        }

        /**
         * Walks back from the stream's last node, matching kernel nodes to launches from the last.
         * Without a {@code matcher}, every kernel node on the way is the next launch's, and the walk
         * then reaches the start past non-kernel nodes only; with one, kernel nodes it says are none
         * of the run's are passed over too, before the first launch as after it.
         */
        private List<KernelNode<L>> walk(Chain chain, LaunchMatcher<L> matcher) {
            long end = last == GRAPH_SINK ? chain.onlySink() : last;
            if (first == UNKNOWN_NODE || end == UNKNOWN_NODE || end == NO_NODE) {
                return List.of();
            }
            long[] nodes = new long[count];
            long node = end;
            int index = count - 1;
            int known = first == NO_NODE ? 0 : 1; // launches matched to a node before the walk
            while (index >= known) {
                if (node == NO_NODE || node == UNKNOWN_NODE) {
                    return List.of();
                }
                if (chain.isKernel(node)) {
                    if (matcher == null) {
                        nodes[index--] = node;
                    } else {
                        @SuppressWarnings("unchecked") // add() stores an L there
                        L launch = (L) launches[2 * index + 1];
                        if (launch == null) {
                            return List.of();
                        }
                        if (matcher.launches(node, launch)) {
                            nodes[index--] = node;
                        }
                    }
                }
                node = chain.onlyDependency(node);
            }
            if (!reachesStart(chain, node, matcher == null)) {
                return List.of();
            }
            if (known == 1) {
                nodes[0] = first;
            }
            return recorded(nodes);
        }

        /** The recorded launches, each with its node; launches the library does not record are left out. */
        private List<KernelNode<L>> recorded(long[] nodes) {
            List<KernelNode<L>> resolved = new ArrayList<>(nodes.length);
            for (int i = 0; i < nodes.length; i++) {
                @SuppressWarnings("unchecked") // add() stores an L there, checked by the capture
                L launch = (L) launches[2 * i + 1];
                if (launch != null) {
                    @SuppressWarnings("unchecked") // add() stores the uses there
                    List<Lifetime> uses = (List<Lifetime>) launches[2 * i];
                    resolved.add(new KernelNode<>(nodes[i], uses, launch));
                }
            }
            return resolved;
        }

        /**
         * The nodes of the launches, as {@link #resolve(Chain)} finds them, or where that walk fails,
         * walking again past the kernel nodes that {@code matcher} says are none of the run's: those
         * another library queued on the stream between the library's launches (a cuBLAS GEMM before
         * a bias kernel). Each launch must then be met in order, and the walk must still reach the
         * run's first node (or the root) through nodes of one dependency each; a launch the library
         * does not record cannot be matched, and fails the walk.
         */
        public List<KernelNode<L>> resolve(Chain chain, LaunchMatcher<L> matcher) {
            List<KernelNode<L>> strict = resolve(chain);
            return strict.isEmpty() && count > 0 ? walk(chain, matcher) : strict;
        }

        private void add(List<Lifetime> uses, L launch) {
            if (2 * count == launches.length) {
                launches = Arrays.copyOf(launches, 2 * launches.length);
            }
            launches[2 * count] = uses;
            launches[2 * count + 1] = launch;
            count++;
        }

        private void holdRepeats(HeldResources held) {
            if (repeats > 0) {
                held.hold(repeatedUses, repeats);
                repeats = 0;
            }
        }

        /**
         * Whether the walk, now at {@code node}, reaches the first launch's node (or the root) through
         * nodes of one dependency each: non-kernel nodes only if {@code noOtherKernels}.
         */
        private boolean reachesStart(Chain chain, long node, boolean noOtherKernels) {
            while (node != NO_NODE && node != UNKNOWN_NODE && node != first) {
                if (noOtherKernels && chain.isKernel(node)) {
                    return false;
                }
                node = chain.onlyDependency(node);
            }
            return node == first;
        }
    }

    /**
     * What one capture has used: the resources its nodes need, held until the graph takes them
     * over, and what each kernel node launches.
     *
     * @param <L> how a kernel launch is described: the root's {@code KernelLaunch}, which this
     *     package, below the root, cannot name; checked against the class given to {@link #begin}
     */
    public static final class Capture<L> {
        /** Names the capture in errors through its {@code toString()}, called only then. */
        private final Object description;
        private final HeldResources held = new HeldResources();
        /**
         * Every run of kernel launches, in the order they began, handed to the graph as they are:
         * per-node hash maps built during or at the end of a capture cost more than the capture
         * itself (JFR on the H200: half of a 1000-node capture, then 45% after the maps were sized).
         * The graph resolves and indexes the nodes when it is first asked about one. Guarded by
         * itself: a launch adds to it holding its slot's monitor, which must not wait for the
         * capture's, held while the capture's slots are visited.
         */
        private final List<Run<L>> runs = new ArrayList<>();
        /** The slots of the streams that record into this capture; guarded by {@code this}. */
        private final List<Slot> slots = new ArrayList<>(2);
        private final Class<L> launchType;
        /**
         * What the capture allocates on its streams ({@code cudaMallocAsync}), which its graph owns: a
         * new graph's, or the memory of the existing graph it records into.
         */
        private final GraphAllocations allocations;
        private boolean ended;
        private boolean handedOver;

        Capture(Object description, Class<L> launchType, GraphAllocations allocations) {
            this.description = description;
            this.launchType = launchType;
            this.allocations = allocations;
        }

        /** Keeps {@code lifetimes} alive for a node of the graph that is not a kernel node. */
        public void use(List<Lifetime> lifetimes) {
            held.hold(lifetimes);
        }

        /**
         * Whether the next launch on {@code slot}'s stream starts a run whose first node must be
         * asked of the runtime ({@code cudaStreamGetCaptureInfo}) right after it is queued: the
         * stream has dependencies that are not a run's. Call holding {@code slot}'s monitor.
         */
        public boolean needsFirstNode(Slot slot) {
            return slot.run == null && !slot.atCaptureStart;
        }

        /**
         * Records a kernel launch just queued on {@code slot}'s stream: what it keeps alive, and
         * what it launches, which the runtime cannot report for library kernels. Call holding
         * {@code slot}'s monitor, which must have been held since the launch was queued.
         *
         * @param firstNode the launch's node if {@link #needsFirstNode} said so; ignored otherwise
         * @param launch the launch, of exactly the class the capture began with; {@code null} for a kernel
         *     node the library does not record (its uses are still held)
         * @throws ClassCastException if {@code launch} is not of that type
         */
        public void recordKernelLaunch(Slot slot, long firstNode, List<Lifetime> lifetimes, Object launch) {
            // An exact class check: Class.cast on a class that is not a constant was a seventh of a
            // 10-node capture's Java samples.
            if (launch != null && launch.getClass() != launchType) {
                throw new ClassCastException("a capture of " + launchType.getName() + " launches cannot record a "
                        + launch.getClass().getName());
            }
            @SuppressWarnings("unchecked") // checked just above
            L recorded = (L) launch;
            @SuppressWarnings("unchecked") // a slot's run belongs to the capture the slot takes part in
            Run<L> run = (Run<L>) slot.run;
            List<Lifetime> uses;
            if (run != null && lifetimes == run.repeatedUses) { // the copy the last launch kept
                uses = lifetimes;
                run.repeats++;
            } else {
                uses = List.copyOf(lifetimes);
                held.hold(uses);
                if (run == null) {
                    run = new Run<>(slot.atCaptureStart ? NO_NODE : firstNode);
                    slot.run = run;
                    slot.atCaptureStart = false;
                    synchronized (runs) {
                        runs.add(run);
                    }
                } else {
                    run.holdRepeats(held);
                }
                run.repeatedUses = uses;
            }
            run.add(uses, recorded);
        }

        /**
         * Ends the run of {@code slot}'s stream, if one is open, before an operation that may add
         * dependencies of another stream (a wait on an event), or at the capture's end. Call
         * holding {@code slot}'s monitor.
         *
         * @param lastNode the stream's one dependency now, as {@code cudaStreamGetCaptureInfo}
         *     reports it; {@link #NO_NODE} if it has not exactly one
         */
        public void endRun(Slot slot, long lastNode) {
            if (slot.run != null) {
                slot.run.last = lastNode;
                slot.run = null;
            }
            slot.atCaptureStart = false;
        }

        /** {@return whether {@code slot}'s stream has launches in a run that has not ended} Call holding its monitor. */
        public boolean hasOpenRun(Slot slot) {
            return slot.run != null;
        }

        /**
         * Ends the open run of each stream that records into this capture, at the stream's last
         * node, which only the capture can tell; call just before the capture ends. A capture that
         * only its own stream recorded into asks nothing: every node it made depends on the one
         * before it on that stream, so the stream's last node is the graph's only sink
         * ({@link #GRAPH_SINK}), and one runtime call less per capture is a twentieth of a 10-node
         * capture's cost.
         *
         * @param lastNode the one node the next operation captured on a stream would depend on,
         *     {@link #NO_NODE} if not exactly one ({@code cudaStreamGetCaptureInfo})
         */
        public synchronized void endRuns(ToLongFunction<MemorySegment> lastNode) {
            boolean oneStream = slots.size() == 1;
            for (Slot slot : slots) {
                synchronized (slot) {
                    if (slot.run != null) {
                        endRun(slot, oneStream ? GRAPH_SINK : lastNode.applyAsLong(slot.stream));
                    }
                }
            }
        }

        /**
         * Every run of kernel launches, in the order they began, for the graph made from this
         * capture; the capture must have ended, so that none is added.
         *
         * @throws IllegalStateException if the capture is still running
         */
        public List<Run<L>> runs() {
            synchronized (this) {
                if (!ended) {
                    throw new IllegalStateException(description + " is still running");
                }
            }
            synchronized (runs) {
                return Collections.unmodifiableList(runs);
            }
        }

        /**
         * Ends the capture, as {@link CaptureTracker#end} does, and hands what it holds, one use per
         * captured node, to the graph made from it, which releases it when closed; {@link
         * #releaseAll()} then does nothing. Holding it all again for the graph, then releasing the
         * capture's, walked every use of a long capture twice more.
         */
        public synchronized HeldResources handOver() {
            if (handedOver) {
                throw new IllegalStateException(description + " was already handed to its graph");
            }
            endLocked();
            handedOver = true;
            synchronized (runs) {
                for (Run<L> run : runs) {
                    run.holdRepeats(held);
                }
            }
            return held;
        }

        /** Ends the capture: its streams record nothing into it any more. Call holding this capture's monitor. */
        private void endLocked() {
            ended = true;
            for (Slot slot : slots) {
                synchronized (slot) {
                    if (slot.capture == this) {
                        slot.capture = null;
                        slot.run = null;
                    }
                }
            }
        }

        /** The memory this capture allocates, which the graph made from it takes over with {@link #handOver()}. */
        public GraphAllocations allocations() {
            return allocations;
        }

        /** Lets go of everything the capture held, and closes its allocations' buffers, unless its graph took them over. */
        public synchronized void releaseAll() {
            if (!handedOver) {
                held.dropAll();
                allocations.closeViews();
            }
        }

        @Override
        public String toString() {
            return description.toString();
        }
    }

    /**
     * Starts tracking a capture on the stream that owns {@code slot}.
     *
     * @param description names the capture in errors, through its {@code toString()}, called only then
     * @param launchType the class that describes a kernel launch, which launch paths record
     * @throws IllegalStateException if the stream already takes part in a capture
     */
    public static <L> Capture<L> begin(Slot slot, Object description, Class<L> launchType) {
        return begin(slot, description, launchType, new GraphAllocations(), true);
    }

    /**
     * Starts tracking a capture into an existing graph on the stream that owns {@code slot}, as
     * {@link #begin(Slot, Object, Class)} does into a new one.
     *
     * @param allocations the memory of the graph recorded into, which the captured allocations join
     *     and whose views the captured work may use
     * @param atStart whether the stream starts with no dependencies (the capture's nodes are roots of
     *     the graph); false when it starts after nodes of the graph
     */
    public static <L> Capture<L> begin(Slot slot, Object description, Class<L> launchType,
            GraphAllocations allocations, boolean atStart) {
        Capture<L> capture = new Capture<>(description, launchType, allocations);
        synchronized (slot) {
            Capture<?> running = slot.capture;
            if (running != null) {
                throw new IllegalStateException("stream is already capturing: " + running);
            }
            capture.slots.add(slot);
            slot.capture = capture;
            slot.run = null;
            slot.atCaptureStart = atStart;
        }
        return capture;
    }

    /**
     * A slot for a stream the library just created: any slot left at its address belonged to a
     * stream destroyed since (one another library owned and destroyed, say), and is retired.
     */
    public static Slot ownSlot(MemorySegment stream) {
        synchronized (SLOTS) {
            for (Slot slot : SLOTS.keySet()) {
                if (slot.stream.address() == stream.address()) {
                    slot.retired = true;
                }
            }
            return new Slot(stream);
        }
    }

    /**
     * The slot of a stream another library owns, shared by every wrapper of it, so that a capture
     * begun through one wrapper is seen by launches through another (or through the library's own
     * wrapper of a stream it created).
     */
    public static Slot sharedSlot(MemorySegment stream) {
        synchronized (SLOTS) {
            for (Slot slot : SLOTS.keySet()) {
                if (slot.stream.address() == stream.address() && !slot.retired) {
                    return slot;
                }
            }
            return new Slot(stream);
        }
    }

    /** The slot's stream was destroyed: later wrappers of its address get another slot. */
    public static void retire(Slot slot) {
        slot.retired = true;
    }

    /** The capture the stream that owns {@code slot} takes part in, or {@code null}. */
    public static Capture<?> of(Slot slot) {
        return slot.capture;
    }

    /**
     * The stream that owns {@code slot} now records into {@code capture} too (it waited on one of its
     * events). Does nothing once the capture has ended: an event keeps the capture it was last
     * recorded in, and waiting on it later joins nothing.
     */
    public static void join(Slot slot, Capture<?> capture) {
        synchronized (capture) {
            if (capture.ended || capture.slots.contains(slot)) {
                return;
            }
            synchronized (slot) {
                capture.slots.add(slot);
                slot.capture = capture;
                slot.run = null;
                slot.atCaptureStart = false;
            }
        }
    }

    /** The capture is over: its streams record nothing into it any more. Releases nothing. */
    public static void end(Capture<?> capture) {
        synchronized (capture) {
            capture.endLocked();
        }
    }

    /** The captures running now, for error messages. */
    public static String describeRunning() {
        Set<Capture<?>> running = Collections.newSetFromMap(new IdentityHashMap<>());
        synchronized (SLOTS) {
            for (Slot slot : SLOTS.keySet()) {
                Capture<?> capture = slot.capture;
                if (capture != null) {
                    running.add(capture);
                }
            }
        }
        return running.isEmpty()
                ? "no capture tracked by cudagraph4j (another library may have begun one)"
                : String.join("; ", running.stream().map(Capture::toString).sorted().toList());
    }
}
