package org.cudagraph4j.serving;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * One lane: runs a batch at a time, on its own stream and buffers, from pinned staging that the
 * engine fills and reads in place. Used by one worker thread.
 */
interface Lane extends AutoCloseable {
    /** Prepares the calling thread, the lane's worker, for this lane: makes its device current. */
    void bind();

    /** The ordinal of the device this lane runs on, which the engine counts its batches under. */
    int deviceOrdinal();

    /**
     * The input staging: the largest bucket's rows of input floats, in native byte order. The
     * engine writes a batch's rows at its start before {@link #run}.
     */
    MemorySegment input();

    /** The output staging: the largest bucket's rows of output floats, valid after {@link #run} returns. */
    MemorySegment output();

    /**
     * Runs the first {@code rows} rows of {@link #input()} on {@code bucket} and leaves their
     * outputs at the start of {@link #output()}; blocks until they are on the host.
     */
    void run(int bucket, int rows);

    /** Whether {@code bucket} runs as one graph launch (otherwise the model's kernels one by one). */
    boolean hasGraph(int bucket);

    /** Captures one more bucket, if any is left; false when every bucket has its graph. */
    boolean captureNext();

    /** The graphs captured so far. */
    List<CaptureReport> reports();

    @Override
    void close();
}
