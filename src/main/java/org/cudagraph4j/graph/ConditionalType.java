package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/**
 * The kind of a conditional node ({@code cudaGraphConditionalNodeType}): what its value decides.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/cuda-graphs.html#conditional-graph-nodes">Conditional graph nodes</a>
 */
public enum ConditionalType implements CudaEnum {
    /** Runs its body once if the value is non-zero; with two bodies, the second if it is zero. */
    IF(0),
    /** Runs its body again and again while the value is non-zero, checked before each run. */
    WHILE(1),
    /** Runs body {@code n} once, where {@code n} is the value; none when {@code n} is past the last body. */
    SWITCH(2);

    private final int value;

    ConditionalType(int value) {
        this.value = value;
    }

    @Override
    public int value() {
        return value;
    }

    /**
     * The constant for a {@code cudaGraphConditionalNodeType} value.
     *
     * @param value the runtime's value
     * @return the constant
     * @throws IllegalArgumentException if the value is unknown
     */
    public static ConditionalType fromValue(int value) {
        return CudaEnum.find(ConditionalType.class, value)
                .orElseThrow(() -> new IllegalArgumentException("unknown cudaGraphConditionalNodeType " + value));
    }
}
