package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * What a graph and an executable graph share: the native handle, the {@link Lifetime} behind it,
 * and how each hands the handle out, says whether it is open and names itself. Package-private, so
 * that {@code Lifetime} stays out of the public API; javac gives each public subclass public
 * bridges of these methods, which reflection finds there. Each closes in its own way.
 */
abstract sealed class GraphResource implements AutoCloseable permits CudaGraph, GraphExec {
    private final MemorySegment handle;
    private final Lifetime lifetime;

    GraphResource(MemorySegment handle, Lifetime lifetime) {
        this.handle = handle;
        this.lifetime = lifetime;
    }

    /**
     * The native handle ({@code cudaGraph_t} or {@code cudaGraphExec_t}), for interop; valid until
     * closed.
     *
     * @return the native handle
     * @throws IllegalStateException if this is closed
     */
    public MemorySegment handle() {
        lifetime.ensureOpen();
        return handle;
    }

    /**
     * Whether this is still open.
     *
     * @return {@code false} once {@link #close()} was called
     */
    public boolean isOpen() {
        return lifetime.isOpen();
    }

    /** Destroys the native object and lets go of what it held. Idempotent. */
    @Override
    public abstract void close();

    @Override
    public String toString() {
        return lifetime.toString();
    }

    Lifetime lifetime() {
        return lifetime;
    }
}
