package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/** Why instantiation failed ({@code cudaGraphInstantiateResult}). */
public enum InstantiateResult implements CudaEnum {
    /** Instantiation succeeded. */
    SUCCESS,
    /** Failed for an unexpected reason, which the returned error describes; also any unknown value. */
    ERROR,
    /** The graph's structure is invalid, e.g. it has a cycle. */
    INVALID_STRUCTURE,
    /** For device launch: the graph holds an operation that device-launched graphs do not support. */
    NODE_OPERATION_NOT_SUPPORTED,
    /** For device launch: the nodes belong to different contexts. */
    MULTIPLE_DEVICES_NOT_SUPPORTED,
    /** A conditional handle is not associated with any conditional node. */
    CONDITIONAL_HANDLE_UNUSED;

    /**
     * The {@code cudaGraphInstantiateResult} value: the constants stand in the
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
     * @return the enumerator's name, e.g. {@code cudaGraphInstantiateInvalidStructure}
     */
    public String cudaName() {
        return RuntimeNames.enumerator("cudaGraphInstantiate", this);
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
