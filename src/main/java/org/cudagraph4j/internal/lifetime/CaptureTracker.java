package org.cudagraph4j.internal.lifetime;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Knows which streams are capturing, so that what a capture records (kernels' libraries, buffers,
 * events) is kept alive for the graph it produces. A stream joins a capture when it waits on an
 * event recorded in one, which is how fork/join captures reach other streams.
 *
 * <p>Each stream holds its own {@link Slot}; launch paths read it on every call, one volatile read.
 * The tracker itself keeps only the set of running captures, for error messages.
 */
public final class CaptureTracker {
    private static final Set<Capture<?>> RUNNING = ConcurrentHashMap.newKeySet();

    private CaptureTracker() {}

    /** Where one stream keeps the capture it takes part in; each stream owns one. */
    public static final class Slot {
        private volatile Capture<?> capture;

        /** {@return the capture the stream takes part in, or {@code null}} */
        public Capture<?> capture() {
            return capture;
        }
    }

    /**
     * One captured kernel node: its address, what it keeps alive, and what it launches.
     *
     * @param <L> how a kernel launch is described (see {@link Capture})
     */
    public record KernelNode<L>(long node, List<Lifetime> uses, L launch) {}

    /**
     * What one capture has used: the resources its nodes need, held until the graph takes them
     * over, and what each kernel node launches.
     *
     * @param <L> how a kernel launch is described: the root's {@code KernelLaunch}, which this
     *     package, below the root, cannot name; checked against the class given to {@link #begin}
     */
    public static final class Capture<L> {
        private final String description;
        private final HeldResources held = new HeldResources();
        /**
         * Every kernel node in capture order, appended under its own lock and handed to the graph
         * as it is: per-node hash maps built during or at the end of a capture cost more than the
         * capture itself (JFR on the H200: half of a 1000-node capture, then 45% after the maps were
         * sized). The graph indexes the nodes when it is first asked about one.
         */
        private final List<KernelNode<L>> kernelNodes = new ArrayList<>();
        /** The slots of the streams that record into this capture; guarded by {@code this}. */
        private final List<Slot> slots = new ArrayList<>(2);
        private final Class<L> launchType;
        /** What the capture allocates on its streams ({@code cudaMallocAsync}), which its graph owns. */
        private final GraphAllocations allocations = new GraphAllocations();
        private boolean ended;
        private boolean handedOver;

        Capture(String description, Class<L> launchType) {
            this.description = description;
            this.launchType = launchType;
        }

        /** Keeps {@code lifetimes} alive for a node of the graph that is not a kernel node. */
        public void use(List<Lifetime> lifetimes) {
            held.hold(lifetimes);
        }

        /**
         * Records a captured kernel node: what it keeps alive, and what it launches, which the
         * runtime cannot report for library kernels.
         *
         * @param launch the launch, of the type the capture began with
         * @throws ClassCastException if {@code launch} is not of that type
         */
        public void recordKernelNode(long node, List<Lifetime> lifetimes, Object launch) {
            KernelNode<L> recorded = new KernelNode<>(node, List.copyOf(lifetimes), launchType.cast(launch));
            held.hold(lifetimes);
            synchronized (kernelNodes) {
                kernelNodes.add(recorded);
            }
        }

        /** Every kernel node launched through the library, in capture order; call once the capture ended. */
        public List<KernelNode<L>> kernelNodes() {
            synchronized (kernelNodes) {
                return List.copyOf(kernelNodes);
            }
        }

        /**
         * Hands what the capture holds, one use per captured node, to the graph made from it, which
         * releases it when closed; {@link #releaseAll()} then does nothing. Holding it all again for
         * the graph, then releasing the capture's, walked every use of a long capture twice more.
         */
        public synchronized HeldResources handOver() {
            if (handedOver) {
                throw new IllegalStateException(description + " was already handed to its graph");
            }
            handedOver = true;
            return held;
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
            return description;
        }
    }

    /**
     * Starts tracking a capture on the stream that owns {@code slot}.
     *
     * @param launchType the class that describes a kernel launch, which launch paths record
     * @throws IllegalStateException if the stream already takes part in a capture
     */
    public static <L> Capture<L> begin(Slot slot, String description, Class<L> launchType) {
        Capture<L> capture = new Capture<>(description, launchType);
        synchronized (slot) {
            Capture<?> running = slot.capture;
            if (running != null) {
                throw new IllegalStateException("stream is already capturing: " + running);
            }
            capture.slots.add(slot);
            slot.capture = capture;
        }
        RUNNING.add(capture);
        return capture;
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
            }
        }
    }

    /** The capture is over: its streams record nothing into it any more. Releases nothing. */
    public static void end(Capture<?> capture) {
        synchronized (capture) {
            capture.ended = true;
            for (Slot slot : capture.slots) {
                synchronized (slot) {
                    if (slot.capture == capture) {
                        slot.capture = null;
                    }
                }
            }
        }
        RUNNING.remove(capture);
    }

    /** The captures running now, for error messages. */
    public static String describeRunning() {
        List<String> running = RUNNING.stream().map(Capture::toString).toList();
        return running.isEmpty()
                ? "no capture tracked by cudagraph4j (another library may have begun one)"
                : String.join("; ", running);
    }
}
