package org.cudagraph4j.graph;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.cudagraph4j.internal.Graphs;

/**
 * The value a conditional node reads when it runs ({@code cudaGraphConditionalHandle}). Made by
 * {@link CudaGraph#conditionalHandle} or {@link StreamCapture#conditionalHandle} for one graph,
 * and for one conditional node of it. The value is set on the device:
 * by a kernel upstream of the node, or from the node's own body, with
 * {@code cudaGraphSetConditional} (see {@link ConditionalKernels}, and pass {@link #value()} to a
 * kernel of your own as an {@code unsigned long long} argument); and, when the handle
 * {@linkplain #resetsEachLaunch() resets}, to {@link #defaultValue()} at the start of each launch.
 *
 * <p>The factories without arguments follow CUDA: {@code cudaGraphConditionalHandleCreate} with no
 * default value and no flags makes a handle that a launch does not reset, so a kernel sets the
 * value before the node reads it. A handle that resets is asked for by name:
 * {@code conditionalHandle(defaultValue, true)} ({@code cudaGraphCondAssignDefault}).
 *
 * <p>Thread safety: immutable.
 */
public final class ConditionalHandle {
    private final long value;
    private final MemorySegment graph;
    private final int defaultValue;
    private final boolean resetsEachLaunch;
    private final AtomicBoolean claimed = new AtomicBoolean();

    ConditionalHandle(long value, MemorySegment graph, int defaultValue, boolean resetsEachLaunch) {
        this.value = value;
        this.graph = graph;
        this.defaultValue = defaultValue;
        this.resetsEachLaunch = resetsEachLaunch;
    }

    /**
     * The handle itself, to pass to a kernel that sets it: a kernel parameter of type
     * {@code cudaGraphConditionalHandle} ({@code unsigned long long}) takes this {@code long}.
     *
     * @return the runtime's handle value
     */
    public long value() {
        return value;
    }

    /**
     * The value given at creation.
     *
     * @return the value the handle takes at each launch when it {@linkplain #resetsEachLaunch() resets}
     */
    public int defaultValue() {
        return defaultValue;
    }

    /**
     * Whether each launch of the executable starts the value at {@link #defaultValue()}
     * ({@code cudaGraphCondAssignDefault}). Otherwise a launch does not reset it, and nothing but a
     * kernel sets it before the node reads it.
     *
     * @return whether the value is reset at each launch
     */
    public boolean resetsEachLaunch() {
        return resetsEachLaunch;
    }

    /** A new handle of {@code graph} ({@code cudaGraphConditionalHandleCreate}). */
    static ConditionalHandle create(MemorySegment graph, int defaultValue, boolean resetEachLaunch) {
        return new ConditionalHandle(Graphs.createConditionalHandle(graph, defaultValue, resetEachLaunch), graph,
                defaultValue, resetEachLaunch);
    }

    /**
     * Adds the one conditional node this handle drives to {@code graph}, after {@code dependencies}.
     *
     * @throws IllegalArgumentException if the handle already drives a node
     */
    Graphs.ConditionalNode addNode(MemorySegment graph, List<MemorySegment> dependencies, ConditionalType type,
            int size) {
        claim();
        try {
            return Graphs.addConditionalNode(graph, dependencies, value, type.value(), size);
        } catch (RuntimeException e) {
            release();
            throw e;
        }
    }

    boolean belongsTo(MemorySegment graphHandle) {
        return graph.equals(graphHandle);
    }

    /**
     * Reserves this handle for one conditional node: CUDA refuses a second node on the same handle
     * ({@code cudaErrorInvalidValue} from {@code cudaGraphAddNode}, seen with driver 580).
     *
     * @throws IllegalArgumentException if a node already uses it
     */
    void claim() {
        if (!claimed.compareAndSet(false, true)) {
            throw new IllegalArgumentException(this + " already drives a conditional node, and CUDA allows one node "
                    + "per handle: make another handle");
        }
    }

    /** Gives the handle back after the node could not be added. */
    void release() {
        claimed.set(false);
    }

    @Override
    public String toString() {
        return String.format("ConditionalHandle 0x%X (default %d%s)", value, defaultValue,
                resetsEachLaunch ? ", reset each launch" : "");
    }
}
