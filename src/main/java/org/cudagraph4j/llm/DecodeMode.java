package org.cudagraph4j.llm;

/**
 * How a decoder launches its decode steps. All three compute the same tokens; they differ in what
 * the host does per token.
 */
public enum DecodeMode {
    /** Every kernel of every step launched from the host, as a framework without graphs does. */
    EAGER,
    /** One CUDA graph per step, replayed with one {@code cudaGraphLaunch} per token. */
    GRAPH_PER_STEP,
    /**
     * A WHILE conditional node runs the step graph until every sequence has ended: one launch per
     * generation, the tokens streamed to the host through pinned memory as they are made.
     */
    DEVICE_LOOP
}
