package org.cudagraph4j.internal;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * What the root package lends the layers around it beyond its public API: the exceptions this
 * package raises, and the streams' capture slots, lifetimes and native arguments the graph package needs. The JDK's own
 * {@code jdk.internal.access.SharedSecrets} pattern, with one difference: this package sits below
 * the root package and must not depend on it, so the interface names the root's types through its
 * type parameters. The root package implements it with them bound ({@code RootAccessBridge}), the
 * graph package uses it with the same binding, and the compiler checks both ends; this package
 * sees only what they erase to.
 */
public final class SharedSecrets {
    /** The root package's bridge, which registers itself when it initializes. */
    private static final String BRIDGE = "org.cudagraph4j.RootAccessBridge";

    private static volatile RootAccess<?, ?, ?, ?, ?, ?> root;

    private SharedSecrets() {}

    /**
     * Implemented once, in the root package, with the type parameters bound to its types.
     *
     * @param <S> the root's {@code CudaStream}
     * @param <B> the root's {@code DeviceBuffer}
     * @param <E> the root's {@code CudaEvent}
     * @param <K> the root's {@code CudaKernel}
     * @param <A> the root's {@code KernelArguments}
     * @param <X> the root's {@code CudaException}
     */
    public interface RootAccess<S, B, E, K, A extends AutoCloseable, X extends RuntimeException> {
        /**
         * The exception for a failed runtime call: a {@code CudaException}, or for a capture
         * violation (900 to 908) a {@code StreamCaptureException} naming the capture that was running.
         * The runtime's last-error slot must already be cleared.
         */
        X callFailed(int code, String function, String context);

        /** The {@code CudaRuntimeNotFoundException} for a failed search for {@code library}. */
        RuntimeException libraryNotFound(String library, List<String> attempts, String howToFix);

        /** Where a stream keeps the capture it takes part in, which a capture begins in. */
        CaptureTracker.Slot captureSlot(S stream);

        /** The lifetime behind a buffer: its allocation's. */
        Lifetime bufferLifetime(B buffer);

        /** The lifetime of an event. */
        Lifetime eventLifetime(E event);

        /**
         * Checked arguments for one use on the calling thread, in a confined arena: closing a
         * shared arena costs a handshake with every thread, tens of microseconds.
         */
        A temporaryArguments(K kernel, Object[] arguments);

        /** What a launch with {@code arguments} needs alive: its kernel's library and its buffers, all open. */
        List<Lifetime> uses(A arguments);

        /**
         * The {@code void*[]} of {@code arguments} for a kernel that runs on device {@code launchDevice},
         * after checking that the device can reach every buffer among them, and that graph memory
         * among them is {@code graphMemory}'s.
         */
        MemorySegment argumentPointers(A arguments, int launchDevice, GraphAllocations graphMemory);

        /**
         * A view of graph memory at {@code address}, which the graph that holds {@code owner}
         * allocates at each launch and owns.
         *
         * @param elementType the root's {@code ElementType}, which this package cannot name
         */
        B graphMemoryBuffer(int device, long address, Object elementType, long length, GraphAllocations owner,
                String graph);

        /** {@return the graph memory {@code buffer} lies in, or {@code null} if it is not graph memory} */
        GraphAllocations graphMemoryOf(B buffer);
    }

    public static void register(RootAccess<?, ?, ?, ?, ?, ?> access) {
        root = Objects.requireNonNull(access);
    }

    /**
     * The root package's access with its types bound by the caller. The graph package binds them
     * once ({@code org.cudagraph4j.graph.RootSecrets}), to the types {@code RootAccessBridge}
     * implements the interface with; that binding is the one unchecked step.
     */
    @SuppressWarnings("unchecked")
    public static <S, B, E, K, A extends AutoCloseable, X extends RuntimeException> RootAccess<S, B, E, K, A, X>
            root() {
        RootAccess<?, ?, ?, ?, ?, ?> access = root;
        if (access == null) {
            // This package cannot name the bridge's class (it sits above); initializing it registers it.
            try {
                Class.forName(BRIDGE, true, SharedSecrets.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            access = Objects.requireNonNull(root, BRIDGE + " did not register");
        }
        return (RootAccess<S, B, E, K, A, X>) access;
    }
}
