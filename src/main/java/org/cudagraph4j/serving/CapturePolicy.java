package org.cudagraph4j.serving;

/** When an engine captures the graph of each bucket. */
public enum CapturePolicy {
    /**
     * At start: each lane warms up and captures every bucket, largest first, before the engine
     * accepts a request. Every batch then runs as one graph launch.
     */
    EAGER,
    /**
     * In the background: the engine serves at once, launching the model's kernels one by one
     * (eagerly), while each lane captures its buckets, smallest first, whenever it is idle; a
     * bucket switches to its graph as soon as it has one.
     */
    LAZY,
    /**
     * Never: every batch launches the model's kernels one by one. The baseline that shows what the
     * graphs buy; the batching, lanes and limits are the same.
     */
    NONE
}
