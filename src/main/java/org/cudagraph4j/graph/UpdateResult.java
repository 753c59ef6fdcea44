package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/**
 * Why a whole-graph update was refused ({@code cudaGraphExecUpdateResult}). The CUDA name, e.g.
 * {@code cudaGraphExecUpdateErrorTopologyChanged}, is in {@link #cudaName()}.
 */
public enum UpdateResult implements CudaEnum {
    /** The update succeeded. */
    SUCCESS,
    /** Failed for an unexpected reason, which the returned error describes; also any unknown value. */
    ERROR,
    /** The topology changed. */
    TOPOLOGY_CHANGED,
    /** A node's type changed. */
    NODE_TYPE_CHANGED,
    /** A kernel node's function changed (reported by CUDA drivers before 11.2). */
    FUNCTION_CHANGED,
    /** A node's parameters changed in a way that update does not support. */
    PARAMETERS_CHANGED,
    /** Something about a node is not supported by update. */
    NOT_SUPPORTED,
    /** A kernel node's function changed in an unsupported way. */
    UNSUPPORTED_FUNCTION_CHANGE,
    /** A node's attributes changed in a way that update does not support. */
    ATTRIBUTES_CHANGED;

    /**
     * The {@code cudaGraphExecUpdateResult} value: the constants stand in the
     * runtime's order, so it is {@link #ordinal()}.
     *
     * @return the raw value
     */
    @Override
    public int value() {
        return ordinal();
    }

    /**
     * The runtime's name for this result.
     *
     * @return the enumerator's name, e.g. {@code cudaGraphExecUpdateErrorTopologyChanged}
     */
    public String cudaName() {
        String prefix = ordinal() <= ERROR.ordinal() ? "cudaGraphExecUpdate" : "cudaGraphExecUpdateError";
        return RuntimeNames.enumerator(prefix, this);
    }

    /**
     * The result with the given {@code cudaGraphExecUpdateResult} value.
     *
     * @param value a raw {@code cudaGraphExecUpdateResult}
     * @return the matching constant, or {@link #ERROR} for a value this library does not know
     */
    public static UpdateResult fromValue(int value) {
        return CudaEnum.find(UpdateResult.class, value).orElse(ERROR);
    }
}
