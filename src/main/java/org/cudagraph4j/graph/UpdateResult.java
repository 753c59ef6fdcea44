package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/**
 * Why a whole-graph update was refused ({@code cudaGraphExecUpdateResult}). The CUDA name, e.g.
 * {@code cudaGraphExecUpdateErrorTopologyChanged}, is in {@link #cudaName()}.
 */
public enum UpdateResult implements CudaEnum {
    /** The update succeeded. */
    SUCCESS(0, "cudaGraphExecUpdateSuccess"),
    /** Failed for an unexpected reason, which the returned error describes; also any unknown value. */
    ERROR(1, "cudaGraphExecUpdateError"),
    /** The topology changed. */
    TOPOLOGY_CHANGED(2, "cudaGraphExecUpdateErrorTopologyChanged"),
    /** A node's type changed. */
    NODE_TYPE_CHANGED(3, "cudaGraphExecUpdateErrorNodeTypeChanged"),
    /** A kernel node's function changed (reported by CUDA drivers before 11.2). */
    FUNCTION_CHANGED(4, "cudaGraphExecUpdateErrorFunctionChanged"),
    /** A node's parameters changed in a way that update does not support. */
    PARAMETERS_CHANGED(5, "cudaGraphExecUpdateErrorParametersChanged"),
    /** Something about a node is not supported by update. */
    NOT_SUPPORTED(6, "cudaGraphExecUpdateErrorNotSupported"),
    /** A kernel node's function changed in an unsupported way. */
    UNSUPPORTED_FUNCTION_CHANGE(7, "cudaGraphExecUpdateErrorUnsupportedFunctionChange"),
    /** A node's attributes changed in a way that update does not support. */
    ATTRIBUTES_CHANGED(8, "cudaGraphExecUpdateErrorAttributesChanged");

    private final int value;
    private final String cudaName;

    UpdateResult(int value, String cudaName) {
        this.value = value;
        this.cudaName = cudaName;
    }

    /**
     * The {@code cudaGraphExecUpdateResult} value.
     *
     * @return the raw value
     */
    @Override
    public int value() {
        return value;
    }

    /**
     * The runtime's name for this result.
     *
     * @return the enumerator's name, e.g. {@code cudaGraphExecUpdateErrorTopologyChanged}
     */
    public String cudaName() {
        return cudaName;
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
