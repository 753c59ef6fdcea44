package org.cudagraph4j.internal;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Knows which streams are capturing, so that what a capture records (kernels' libraries, buffers,
 * events) is kept alive for the graph it produces. A stream joins a capture when it waits on an
 * event recorded in one, which is how fork/join captures reach other streams.
 *
 * <p>Launch paths ask {@link #of(long)} on every call; with no capture active that is one volatile
 * read.
 */
public final class CaptureTracker {
    private static final AtomicInteger ACTIVE = new AtomicInteger();
    private static final Map<Long, Capture<?>> BY_STREAM = new ConcurrentHashMap<>();

    private CaptureTracker() {}

    /** One captured kernel node: its address, what it keeps alive, and what it launches. */
    private record KernelNode<L>(long node, List<Lifetime> uses, L launch) {}

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
         * Every kernel node in capture order, appended under its own lock: per-node hash maps that
         * grow during a capture cost more than the capture itself (half of a 1000-node capture's
         * time on the H200 went to resizing them); the maps are built once, at the end.
         */
        private final List<KernelNode<L>> kernelNodes = new ArrayList<>();
        private final Queue<Lifetime> otherResources = new ConcurrentLinkedQueue<>();
        private final Set<Long> streams = ConcurrentHashMap.newKeySet();
        private final Class<L> launchType;
        private boolean handedOver;

        Capture(String description, Class<L> launchType) {
            this.description = description;
            this.launchType = launchType;
        }

        /** Keeps {@code lifetimes} alive for a node of the graph that is not a kernel node. */
        public void use(List<Lifetime> lifetimes) {
            held.hold(lifetimes);
            otherResources.addAll(lifetimes);
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

        /** Node address to launch, for every kernel launched through the library. */
        public Map<Long, L> kernelNodes() {
            synchronized (kernelNodes) {
                Map<Long, L> launches = HashMap.newHashMap(kernelNodes.size());
                kernelNodes.forEach(k -> launches.put(k.node(), k.launch()));
                return launches;
            }
        }

        /** What the captured nodes use. */
        public NodeResources resources() {
            synchronized (kernelNodes) {
                // Built immutable at once: NodeResources keeps an immutable map as it is.
                @SuppressWarnings({"unchecked", "rawtypes"}) // no generic array creation in Java
                Map.Entry<Long, List<Lifetime>>[] uses = new Map.Entry[kernelNodes.size()];
                for (int i = 0; i < uses.length; i++) {
                    KernelNode<L> node = kernelNodes.get(i);
                    uses[i] = Map.entry(node.node(), node.uses());
                }
                return new NodeResources(Map.ofEntries(uses), List.copyOf(otherResources));
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

        /** Lets go of everything the capture held, unless its graph took it over. */
        public synchronized void releaseAll() {
            if (!handedOver) {
                held.dropAll();
            }
        }

        @Override
        public String toString() {
            return description;
        }
    }

    /**
     * Starts tracking a capture on {@code stream}.
     *
     * @param launchType the class that describes a kernel launch, which launch paths record
     */
    public static <L> Capture<L> begin(long stream, String description, Class<L> launchType) {
        Capture<L> capture = new Capture<>(description, launchType);
        capture.streams.add(stream);
        if (BY_STREAM.putIfAbsent(stream, capture) != null) {
            throw new IllegalStateException("stream is already capturing: " + BY_STREAM.get(stream));
        }
        ACTIVE.incrementAndGet();
        return capture;
    }

    /** The capture {@code stream} takes part in, or {@code null}. */
    public static Capture<?> of(long stream) {
        return ACTIVE.get() == 0 ? null : BY_STREAM.get(stream);
    }

    /** {@code stream} now records into {@code capture} too (it waited on one of its events). */
    public static void join(long stream, Capture<?> capture) {
        if (capture.streams.add(stream)) {
            BY_STREAM.put(stream, capture);
        }
    }

    /** The capture is over: its streams record nothing into it any more. Releases nothing. */
    public static void end(Capture<?> capture) {
        for (Long stream : capture.streams) {
            BY_STREAM.remove(stream, capture);
        }
        ACTIVE.decrementAndGet();
    }

    /** The captures running now, for error messages. */
    public static String describeActive() {
        if (ACTIVE.get() == 0) {
            return "no capture tracked by cudagraph4j (another library may have begun one)";
        }
        return String.join("; ", BY_STREAM.values().stream().distinct().map(Capture::toString).toList());
    }
}
