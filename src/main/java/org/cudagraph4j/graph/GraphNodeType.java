package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/** The kind of a graph node ({@code cudaGraphNodeType}). */
public enum GraphNodeType implements CudaEnum {
    /** Launches a kernel on the GPU. */
    KERNEL(0x00),
    /** Copies memory. */
    MEMCPY(0x01),
    /** Sets memory to a value. */
    MEMSET(0x02),
    /** Runs a host function on the CPU. */
    HOST(0x03),
    /** Runs an embedded child graph. */
    GRAPH(0x04),
    /** Does nothing; a join point for dependencies. */
    EMPTY(0x05),
    /** Waits for an event. */
    WAIT_EVENT(0x06),
    /** Records an event. */
    EVENT_RECORD(0x07),
    /** Signals external semaphores. */
    EXT_SEMAPHORE_SIGNAL(0x08),
    /** Waits on external semaphores. */
    EXT_SEMAPHORE_WAIT(0x09),
    /** Allocates memory. */
    MEM_ALLOC(0x0a),
    /** Frees memory that a graph allocated. */
    MEM_FREE(0x0b),
    /** Runs its body graphs selectively, or in a loop, depending on a conditional variable's value. */
    CONDITIONAL(0x0d);

    private final int value;

    GraphNodeType(int value) {
        this.value = value;
    }

    /**
     * The {@code cudaGraphNodeType} value.
     *
     * @return the raw value
     */
    @Override
    public int value() {
        return value;
    }

    /**
     * The node type with the given {@code cudaGraphNodeType} value.
     *
     * @param value a raw {@code cudaGraphNodeType}
     * @return the matching constant
     * @throws IllegalArgumentException if {@code value} is not a node type this library knows
     */
    public static GraphNodeType fromValue(int value) {
        return CudaEnum.find(GraphNodeType.class, value)
                .orElseThrow(() -> new IllegalArgumentException("unknown cudaGraphNodeType " + value));
    }
}
