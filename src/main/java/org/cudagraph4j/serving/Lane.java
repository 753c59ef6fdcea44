package org.cudagraph4j.serving;

import java.util.List;

/** One lane: runs a batch at a time, on its own stream and buffers. Used by one worker thread. */
interface Lane extends AutoCloseable {
    /** Prepares the calling thread, the lane's worker, for this lane: makes its device current. */
    void bind();

    /** The ordinal of the device this lane runs on, which the engine counts its batches under. */
    int deviceOrdinal();

    /**
     * Runs {@code rows} packed input rows on {@code bucket} and returns their outputs; blocks until
     * they are on the host.
     */
    float[] run(int bucket, float[] input, int rows);

    /** Whether {@code bucket} runs as one graph launch (otherwise the model's kernels one by one). */
    boolean hasGraph(int bucket);

    /** Captures one more bucket, if any is left; false when every bucket has its graph. */
    boolean captureNext();

    /** The graphs captured so far. */
    List<CaptureReport> reports();

    @Override
    void close();
}
