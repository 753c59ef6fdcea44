package org.cudagraph4j.internal.lifetime;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.HexFormat;

/**
 * The reference count behind one native resource. Its owner (a stream, a buffer's allocation, a
 * library…) holds the first reference and drops it on {@code close()}; whatever must keep the
 * resource alive beyond that (a graph needs its kernels' library and its buffers) takes another
 * with {@link #retain()} and gives it back with {@link #release()}. The native resource is freed
 * when the last reference goes, on the thread that drops it.
 *
 * <p>Every lifetime is counted in {@link LiveCounters} from creation until the native resource is
 * freed. An owner that calls {@link #watch} also gets a safety net: if it becomes unreachable
 * without {@code close()}, a {@link Cleaner} drops its reference and logs one warning naming the
 * resource (with the allocation site when {@value #TRACK_PROPERTY} is {@code true}).
 */
public final class Lifetime {
    /**
     * Set to {@code true} (at startup: it is read once) to record where each watched resource was
     * created, for leak warnings.
     */
    public static final String TRACK_PROPERTY = "org.cudagraph4j.trackAllocations";

    /** {@value #TRACK_PROPERTY}, read once: every watched resource would pay for a property lookup. */
    private static final boolean TRACK = Boolean.getBoolean(TRACK_PROPERTY);
    private static final Cleaner CLEANER = Cleaner.create();
    private static final HexFormat HEX = HexFormat.of().withUpperCase();
    private static final System.Logger LOG = System.getLogger("org.cudagraph4j");
    private static final VarHandle CLOSED;
    private static final VarHandle REFERENCES;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            CLOSED = lookup.findVarHandle(Lifetime.class, "closed", boolean.class);
            REFERENCES = lookup.findVarHandle(Lifetime.class, "references", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final LiveCounters.Kind kind;
    private final long byteSize;
    /** What {@link #toString()} says; for a {@linkplain #named named} lifetime, made on first use. */
    private String description;
    private final String type;
    private final long address;
    private final Runnable free;
    /**
     * Whether the owner has closed, and how many references are held (the owner's among them): volatile
     * fields behind {@link #CLOSED} and {@link #REFERENCES}, so that a lifetime is one object, not
     * three; a capture makes and frees one per graph.
     */
    private volatile boolean closed;
    private volatile int references = 1;
    private volatile Cleaner.Cleanable cleanable;

    /**
     * A lifetime for a resource that was just created.
     *
     * @param kind what is counted in {@link LiveCounters}
     * @param byteSize the bytes it holds, or 0
     * @param description names the resource in errors, e.g. {@code "CudaStream 0x7f..."}
     * @param free releases the native resource; runs exactly once
     */
    public Lifetime(LiveCounters.Kind kind, long byteSize, String description, Runnable free) {
        this(kind, byteSize, description, null, 0, free);
    }

    /**
     * A lifetime for a resource that was just created, named as {@link #named} names it, but only
     * when first described: a capture made and closed in a few microseconds never is.
     *
     * @param type names the resource's kind, e.g. {@code "CudaGraph"}
     * @param handle the resource's handle
     */
    public Lifetime(LiveCounters.Kind kind, long byteSize, String type, MemorySegment handle, Runnable free) {
        this(kind, byteSize, null, type, handle.address(), free);
    }

    private Lifetime(LiveCounters.Kind kind, long byteSize, String description, String type, long address,
            Runnable free) {
        this.kind = kind;
        this.byteSize = byteSize;
        this.description = description;
        this.type = type;
        this.address = address;
        this.free = free;
        LiveCounters.created(kind, byteSize);
    }

    /**
     * {@return {@code type} and the handle's address in 16 hex digits, e.g. {@code "CudaGraph
     * 0x00007F12345678A0"}: how a resource names itself} Built without {@code String.format}, which
     * every capture paid for its graph's name.
     */
    public static String named(String type, MemorySegment handle) {
        return named(type, handle.address());
    }

    private static String named(String type, long address) {
        return type + " 0x" + HEX.toHexDigits(address);
    }

    /**
     * Closes this lifetime if {@code owner} becomes unreachable while still open, and says so in
     * the log. Call once, from the owner's constructor; the action holds no reference to the owner.
     */
    public void watch(Object owner) {
        Throwable site = TRACK ? new Throwable("allocated here") : null;
        cleanable = CLEANER.register(owner, new Forgotten(this, site));
    }

    /** @throws IllegalStateException if the owner was closed */
    public void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    public boolean isOpen() {
        return !closed;
    }

    /**
     * Keeps the native resource alive past its owner's close, until {@link #release()}. Works while
     * any reference is held, so a graph can pass a closed buffer it still holds on to an
     * executable; a caller that hands in a resource checks {@link #ensureOpen()} first.
     *
     * @throws IllegalStateException if the resource was already freed
     */
    public void retain() {
        int count;
        do {
            count = references;
            if (count == 0) {
                throw new IllegalStateException(this + " is closed");
            }
        } while (!REFERENCES.compareAndSet(this, count, count + 1));
    }

    /** Gives back one reference; the last one frees the resource. */
    public void release() {
        int count = (int) REFERENCES.getAndAdd(this, -1) - 1;
        if (count == 0) {
            try {
                free.run();
            } finally {
                LiveCounters.freed(kind, byteSize);
            }
        } else if (count < 0) {
            throw new IllegalStateException(this + " was released more often than retained");
        }
    }

    /** Drops the owner's reference; later calls do nothing. */
    public void close() {
        if (CLOSED.compareAndSet(this, false, true)) {
            Cleaner.Cleanable registered = cleanable;
            if (registered != null) {
                registered.clean();
            }
            release();
        }
    }

    @Override
    public String toString() {
        String text = description;
        if (text == null) {
            text = named(type, address); // a race makes the same text twice
            description = text;
        }
        return text;
    }

    /** The cleaner's action: runs once, when the owner is unreachable or closed. */
    private record Forgotten(Lifetime lifetime, Throwable site) implements Runnable {
        @Override
        public void run() {
            if (!CLOSED.compareAndSet(lifetime, false, true)) {
                return; // closed explicitly: close() deregistered us
            }
            String message = lifetime + " was never closed; the cleaner frees it. Close it explicitly"
                    + (site == null ? " (run with -D" + TRACK_PROPERTY + "=true to see where it was created)" : "");
            LOG.log(System.Logger.Level.WARNING, message, site);
            try {
                lifetime.release();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "freeing " + lifetime + " failed", e);
            }
        }
    }
}
