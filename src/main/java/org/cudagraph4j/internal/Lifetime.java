package org.cudagraph4j.internal;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The open/closed state and reference count behind every owning handle.
 *
 * <p>The owner holds one reference; {@link #close()} drops it once, however often it is called.
 * Whatever must outlive the owner's close (an executable graph needs its kernels' library and its
 * buffers) takes another with {@link #retain()} and gives it back with {@link #release()}. The
 * native resource is freed when the last reference goes, on the thread that drops it.
 */
public final class Lifetime {
    private final String description;
    private final Runnable free;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger references = new AtomicInteger(1);

    /**
     * @param description names the resource in errors, e.g. {@code "CudaStream 0x7f..."}
     * @param free releases the native resource; runs exactly once
     */
    public Lifetime(String description, Runnable free) {
        this.description = description;
        this.free = free;
    }

    /** @throws IllegalStateException if the owner was closed */
    public void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(description + " is closed");
        }
    }

    public boolean isOpen() {
        return !closed.get();
    }

    /** Keeps the native resource alive past its owner's close, until {@link #release()}. */
    public void retain() {
        ensureOpen();
        int count;
        do {
            count = references.get();
            if (count == 0) {
                throw new IllegalStateException(description + " is closed");
            }
        } while (!references.compareAndSet(count, count + 1));
    }

    /** Gives back one reference; the last one frees the resource. */
    public void release() {
        int count = references.decrementAndGet();
        if (count == 0) {
            free.run();
        } else if (count < 0) {
            throw new IllegalStateException(description + " was released more often than retained");
        }
    }

    /** Drops the owner's reference; later calls do nothing. */
    public void close() {
        if (closed.compareAndSet(false, true)) {
            release();
        }
    }

    @Override
    public String toString() {
        return description;
    }
}
