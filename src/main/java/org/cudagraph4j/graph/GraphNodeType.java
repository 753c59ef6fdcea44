package org.cudagraph4j.graph;

/** The kind of a graph node ({@code cudaGraphNodeType}). */
public enum GraphNodeType {
    KERNEL(0x00),
    MEMCPY(0x01),
    MEMSET(0x02),
    HOST(0x03),
    /** A child graph. */
    GRAPH(0x04),
    EMPTY(0x05),
    WAIT_EVENT(0x06),
    EVENT_RECORD(0x07),
    EXT_SEMAPHORE_SIGNAL(0x08),
    EXT_SEMAPHORE_WAIT(0x09),
    MEM_ALLOC(0x0a),
    MEM_FREE(0x0b),
    CONDITIONAL(0x0d);

    private final int value;

    GraphNodeType(int value) {
        this.value = value;
    }

    public int value() {
        return value;
    }

    public static GraphNodeType fromValue(int value) {
        for (GraphNodeType type : values()) {
            if (type.value == value) {
                return type;
            }
        }
        throw new IllegalArgumentException("unknown cudaGraphNodeType " + value);
    }
}
