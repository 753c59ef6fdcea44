package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.cudagraph4j.cudart.cudart_h.cudaGraphAddHostNode;
import static org.cudagraph4j.cudart.cudart_h.cudaLaunchHostFunc;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.cudagraph4j.cudart.cudaHostNodeParams;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * Java callbacks that CUDA runs on its own host thread, in stream order ({@code cudaLaunchHostFunc})
 * or as a graph's host node ({@code cudaGraphAddHostNode}).
 *
 * <p>One upcall stub serves every callback, for the life of the process: CUDA passes back a
 * {@code void*} of user data, which here is the id of a {@link Registration}. A registration lives
 * exactly as long as work that can still call it: a callback queued on a stream is released once it
 * has run; one in a graph is held, as a {@link Lifetime}, by the graph and every executable made
 * from it, and released with the last of them. A call whose registration is gone does nothing.
 *
 * <p>An exception must never reach the native frame (an uncaught exception in an upcall ends the
 * JVM): the stub catches everything the callback throws, and keeps it for the stream the work ran
 * on, whose next synchronization raises it ({@link #takeFailure}). CUDA forbids CUDA calls from a
 * host function, which can deadlock; while a callback runs, its thread is marked, and every call
 * this library makes checks the mark first ({@link #refuseInCallback}).
 */
public final class HostFunctions {
    private static final Map<Long, Registration> REGISTERED = new ConcurrentHashMap<>();
    /** The same registrations by lifetime (which compares by identity), for the executables that hold them. */
    private static final Map<Lifetime, Registration> BY_LIFETIME = new ConcurrentHashMap<>();
    private static final Map<Long, Throwable> FAILURES = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_ID = new AtomicLong(1);
    /** Callbacks running now, process-wide: zero almost always, so the per-call check is one volatile read. */
    private static final AtomicInteger RUNNING = new AtomicInteger();
    private static final ThreadLocal<Boolean> IN_CALLBACK = new ThreadLocal<>();
    private static volatile MemorySegment stub;

    private HostFunctions() {}

    /** One callback that CUDA may call; its id travels as the user data. */
    public static final class Registration {
        private final long id;
        private final Runnable callback;
        private final boolean once;
        private final Lifetime lifetime;
        /** The stream (its handle's address) whose synchronization raises a failure; 0 for none yet. */
        private volatile long failuresTo;

        private Registration(long id, Runnable callback, boolean once, String description) {
            this.id = id;
            this.callback = callback;
            this.once = once;
            this.lifetime = new Lifetime(LiveCounters.Kind.HOST_FUNCTION, 0, description, this::unregister);
        }

        private void unregister() {
            REGISTERED.remove(id);
            BY_LIFETIME.remove(lifetime);
        }

        /** {@return the {@code void*} CUDA passes back to the stub for this registration} */
        MemorySegment userData() {
            return MemorySegment.ofAddress(id);
        }

        /** {@return the lifetime a graph holds while it can call this} */
        public Lifetime lifetime() {
            return lifetime;
        }

        /** Sends a failure of the next calls to {@code stream}'s synchronization. */
        public void reportTo(MemorySegment stream) {
            failuresTo = stream.address();
        }
    }

    /**
     * Queues {@code callback} on {@code stream}, for one call: released once it has run, or at once
     * if the launch fails.
     */
    public static void launchOnce(MemorySegment stream, Runnable callback, String description) {
        Registration registration = register(callback, true, description);
        registration.reportTo(stream);
        int status = cudaLaunchHostFunc(stream, stub(), registration.userData());
        if (status != Status.SUCCESS) {
            registration.lifetime.close();
            throw Status.error(status, "cudaLaunchHostFunc", description);
        }
    }

    /**
     * Queues a registration made {@link #forGraph} on a capturing {@code stream}, where it becomes a
     * host node of the graph being captured.
     */
    public static void launchCaptured(MemorySegment stream, Registration registration) {
        registration.reportTo(stream);
        Status.check(cudaLaunchHostFunc(stream, stub(), registration.userData()),
                "cudaLaunchHostFunc", registration.lifetime.toString());
    }

    /**
     * Registers {@code callback} for a graph, which holds its lifetime: it may run any number of
     * times, until the last graph or executable that holds it is closed. The caller takes over the
     * owner's reference.
     */
    public static Registration forGraph(Runnable callback, String description) {
        return register(callback, false, description);
    }

    /** Adds a host node that calls {@code registration}. */
    public static MemorySegment addHostNode(MemorySegment graph, List<MemorySegment> dependencies,
            Registration registration) {
        return Out.pointer("cudaGraphAddHostNode", null, (arena, node) -> {
            MemorySegment params = cudaHostNodeParams.allocate(arena);
            cudaHostNodeParams.fn(params, stub());
            cudaHostNodeParams.userData(params, registration.userData());
            return cudaGraphAddHostNode(node, graph, Graphs.array(arena, dependencies), dependencies.size(), params);
        });
    }

    /** {@return the registration behind {@code lifetime}, or {@code null} if it is not a host function's} */
    public static Registration of(Lifetime lifetime) {
        return BY_LIFETIME.get(lifetime);
    }

    /** {@return how many callbacks are registered now: queued, or held by graphs} */
    public static int registered() {
        return REGISTERED.size();
    }

    /**
     * The first failure of a callback that reported to {@code stream} since the last call, with
     * any later ones suppressed in it; {@code null} if there was none.
     */
    public static Throwable takeFailure(MemorySegment stream) {
        return FAILURES.isEmpty() ? null : FAILURES.remove(stream.address());
    }

    /** Forgets failures kept for {@code stream}, which is being destroyed. */
    public static void forget(MemorySegment stream) {
        if (!FAILURES.isEmpty()) {
            FAILURES.remove(stream.address());
        }
    }

    /**
     * Refuses a CUDA call from inside a host function, which CUDA forbids.
     *
     * @throws IllegalStateException if the calling thread is running a host function
     */
    public static void refuseInCallback(String function) {
        if (inCallback()) {
            throw refusal(function);
        }
    }

    /**
     * {@link #refuseInCallback(String)} for a call on device {@code ordinal}, whose description is
     * built only when refused: it is checked before every call that makes a device current.
     */
    public static void refuseInCallback(int ordinal) {
        if (inCallback()) {
            throw refusal("a CUDA call on device " + ordinal);
        }
    }

    private static boolean inCallback() {
        return RUNNING.get() > 0 && IN_CALLBACK.get() != null;
    }

    private static IllegalStateException refusal(String function) {
        return new IllegalStateException(function + " was called from inside a host function, and CUDA forbids"
                + " CUDA calls there (they can deadlock): do the work after the stream's synchronization, or"
                + " hand it to another thread");
    }

    private static Registration register(Runnable callback, boolean once, String description) {
        long id = NEXT_ID.getAndIncrement();
        Registration registration = new Registration(id, callback, once, description);
        REGISTERED.put(id, registration);
        BY_LIFETIME.put(registration.lifetime, registration);
        return registration;
    }

    @SuppressWarnings("restricted") // the one upcall stub, for the life of the process
    static MemorySegment stub() {
        MemorySegment made = stub;
        if (made == null) {
            synchronized (HostFunctions.class) {
                made = stub;
                if (made == null) {
                    try {
                        made = Linker.nativeLinker().upcallStub(MethodHandles.lookup().findStatic(HostFunctions.class,
                                "call", MethodType.methodType(void.class, MemorySegment.class)),
                                FunctionDescriptor.ofVoid(ADDRESS), Arena.global());
                    } catch (ReflectiveOperationException e) {
                        throw new AssertionError(e);
                    }
                    stub = made;
                }
            }
        }
        return made;
    }

    /** The upcall's target: runs the callback and lets nothing escape. */
    private static void call(MemorySegment userData) {
        try {
            Registration registration = REGISTERED.get(userData.address());
            if (registration == null) {
                return;
            }
            RUNNING.incrementAndGet();
            IN_CALLBACK.set(Boolean.TRUE);
            try {
                registration.callback.run();
            } catch (Throwable failure) {
                FAILURES.merge(registration.failuresTo, failure, (first, later) -> {
                    first.addSuppressed(later);
                    return first;
                });
            } finally {
                IN_CALLBACK.remove();
                RUNNING.decrementAndGet();
                if (registration.once) {
                    registration.lifetime.close();
                }
            }
        } catch (Throwable unreported) {
            // Even an error while keeping a failure (out of memory) must not unwind into CUDA's frame.
        }
    }
}
