package org.cudagraph4j.internal.lifetime;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How many native resources of each kind are alive (created and not yet freed), and their bytes.
 * A resource a graph still holds after its owner's {@code close()} is alive until the graph lets go.
 */
public final class LiveCounters {
    /**
     * The kinds of resource the library owns, and {@link #BORROWED_HOST_MEMORY}: host memory a
     * memcpy node copies to or from, which the caller owns; counted here, but not reported by
     * {@code Cuda.liveResources()}, as the library frees none of it.
     */
    public enum Kind { STREAM, EVENT, DEVICE_BUFFER, PINNED_BUFFER, LIBRARY, GRAPH, GRAPH_EXEC, KERNEL_ARGUMENTS, MEMORY_POOL, HOST_FUNCTION, BORROWED_HOST_MEMORY }

    private static final int KINDS = Kind.values().length;
    /** Counts at [kind], bytes at [KINDS + kind]. */
    private static final AtomicLongArray COUNTS = new AtomicLongArray(2 * KINDS);

    private LiveCounters() {}

    static void created(Kind kind, long byteSize) {
        COUNTS.incrementAndGet(kind.ordinal());
        if (byteSize != 0) { // graphs, executables, streams and events have none: one atomic add less
            COUNTS.addAndGet(KINDS + kind.ordinal(), byteSize);
        }
    }

    static void freed(Kind kind, long byteSize) {
        COUNTS.decrementAndGet(kind.ordinal());
        if (byteSize != 0) {
            COUNTS.addAndGet(KINDS + kind.ordinal(), -byteSize);
        }
    }

    public static long count(Kind kind) {
        return COUNTS.get(kind.ordinal());
    }

    public static long bytes(Kind kind) {
        return COUNTS.get(KINDS + kind.ordinal());
    }
}
