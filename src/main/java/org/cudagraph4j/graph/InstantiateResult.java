package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/** Why instantiation failed ({@code cudaGraphInstantiateResult}). */
public enum InstantiateResult implements CudaEnum {
    /** Instantiation succeeded. */
    SUCCESS(0, "cudaGraphInstantiateSuccess"),
    /** Failed for an unexpected reason, which the returned error describes; also any unknown value. */
    ERROR(1, "cudaGraphInstantiateError"),
    /** The graph's structure is invalid, e.g. it has a cycle. */
    INVALID_STRUCTURE(2, "cudaGraphInstantiateInvalidStructure"),
    /** For device launch: the graph holds an operation that device-launched graphs do not support. */
    NODE_OPERATION_NOT_SUPPORTED(3, "cudaGraphInstantiateNodeOperationNotSupported"),
    /** For device launch: the nodes belong to different contexts. */
    MULTIPLE_DEVICES_NOT_SUPPORTED(4, "cudaGraphInstantiateMultipleDevicesNotSupported"),
    /** A conditional handle is not associated with any conditional node. */
    CONDITIONAL_HANDLE_UNUSED(5, "cudaGraphInstantiateConditionalHandleUnused");

    private final int value;
    private final String cudaName;

    InstantiateResult(int value, String cudaName) {
        this.value = value;
        this.cudaName = cudaName;
    }

    /**
     * The {@code cudaGraphInstantiateResult} value.
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
     * @return the enumerator's name, e.g. {@code cudaGraphInstantiateInvalidStructure}
     */
    public String cudaName() {
        return cudaName;
    }

    /**
     * The result with the given {@code cudaGraphInstantiateResult} value.
     *
     * @param value a raw {@code cudaGraphInstantiateResult}
     * @return the matching constant, or {@link #ERROR} for a value this library does not know
     */
    public static InstantiateResult fromValue(int value) {
        return CudaEnum.find(InstantiateResult.class, value).orElse(ERROR);
    }
}
