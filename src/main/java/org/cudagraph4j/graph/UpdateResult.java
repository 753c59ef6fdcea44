package org.cudagraph4j.graph;

/**
 * Why a whole-graph update was refused ({@code cudaGraphExecUpdateResult}). The CUDA name, e.g.
 * {@code cudaGraphExecUpdateErrorTopologyChanged}, is in {@link #cudaName()}.
 */
public enum UpdateResult {
    SUCCESS(0, "cudaGraphExecUpdateSuccess"),
    ERROR(1, "cudaGraphExecUpdateError"),
    TOPOLOGY_CHANGED(2, "cudaGraphExecUpdateErrorTopologyChanged"),
    NODE_TYPE_CHANGED(3, "cudaGraphExecUpdateErrorNodeTypeChanged"),
    FUNCTION_CHANGED(4, "cudaGraphExecUpdateErrorFunctionChanged"),
    PARAMETERS_CHANGED(5, "cudaGraphExecUpdateErrorParametersChanged"),
    NOT_SUPPORTED(6, "cudaGraphExecUpdateErrorNotSupported"),
    UNSUPPORTED_FUNCTION_CHANGE(7, "cudaGraphExecUpdateErrorUnsupportedFunctionChange"),
    ATTRIBUTES_CHANGED(8, "cudaGraphExecUpdateErrorAttributesChanged");

    private final int value;
    private final String cudaName;

    UpdateResult(int value, String cudaName) {
        this.value = value;
        this.cudaName = cudaName;
    }

    public int value() {
        return value;
    }

    public String cudaName() {
        return cudaName;
    }

    public static UpdateResult fromValue(int value) {
        for (UpdateResult result : values()) {
            if (result.value == value) {
                return result;
            }
        }
        return ERROR;
    }
}
