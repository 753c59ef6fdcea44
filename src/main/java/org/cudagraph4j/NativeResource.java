package org.cudagraph4j;

import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * What this package's native resources share: the {@link Lifetime} behind each, watched from
 * construction for a forgotten close, and how each says whether it is open, closes and names
 * itself. Package-private, so that {@code Lifetime} stays out of the public API; javac gives each
 * public subclass public bridges of these methods, which reflection finds there.
 */
abstract sealed class NativeResource implements AutoCloseable permits CudaEvent, CudaLibrary, CudaStream, PinnedBuffer {
    private final Lifetime lifetime;

    /** Takes over {@code lifetime}, just made for the resource, and watches this for a forgotten close. */
    NativeResource(Lifetime lifetime) {
        this.lifetime = lifetime;
        lifetime.watch(this);
    }

    /**
     * {@return whether this is open: false once {@link #close()} has been called, even while a
     * graph still keeps the native resource alive}
     */
    public boolean isOpen() {
        return lifetime.isOpen();
    }

    /**
     * Lets go of the native resource, which is freed now, or when the last graph that uses it lets
     * go of it. Idempotent.
     */
    @Override
    public void close() {
        lifetime.close();
    }

    /** {@return the resource's kind and handle, as errors name it} */
    @Override
    public String toString() {
        return lifetime.toString();
    }

    /** The reference count behind the native resource, which what uses it retains. */
    Lifetime lifetime() {
        return lifetime;
    }
}
