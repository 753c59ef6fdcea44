package org.cudagraph4j.graph;

/** Why instantiation failed ({@code cudaGraphInstantiateResult}). */
public enum InstantiateResult {
    SUCCESS(0, "cudaGraphInstantiateSuccess"),
    ERROR(1, "cudaGraphInstantiateError"),
    INVALID_STRUCTURE(2, "cudaGraphInstantiateInvalidStructure"),
    NODE_OPERATION_NOT_SUPPORTED(3, "cudaGraphInstantiateNodeOperationNotSupported"),
    MULTIPLE_DEVICES_NOT_SUPPORTED(4, "cudaGraphInstantiateMultipleDevicesNotSupported"),
    CONDITIONAL_HANDLE_UNUSED(5, "cudaGraphInstantiateConditionalHandleUnused");

    private final int value;
    private final String cudaName;

    InstantiateResult(int value, String cudaName) {
        this.value = value;
        this.cudaName = cudaName;
    }

    public int value() {
        return value;
    }

    public String cudaName() {
        return cudaName;
    }

    public static InstantiateResult fromValue(int value) {
        for (InstantiateResult result : values()) {
            if (result.value == value) {
                return result;
            }
        }
        return ERROR;
    }
}
