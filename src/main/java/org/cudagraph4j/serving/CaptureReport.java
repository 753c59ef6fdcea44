package org.cudagraph4j.serving;

import java.time.Duration;

/**
 * What one bucket's graph cost a lane.
 *
 * @param lane the lane, from 0
 * @param bucket the batch size
 * @param capture the warm-up pass and the stream capture; or, for a graph loaded from an archive,
 *     reading and building it
 * @param instantiate {@code cudaGraphInstantiate} and the upload
 * @param deviceBytes device memory the executable took, as the device's free memory fell; other
 *     processes on the device move it
 * @param fromArchive whether the graph was loaded from {@link ServingOptions#graphArchives()} rather
 *     than captured
 */
public record CaptureReport(int lane, int bucket, Duration capture, Duration instantiate, long deviceBytes,
        boolean fromArchive) {
    /**
     * A report of a captured graph.
     *
     * @param lane the lane, from 0
     * @param bucket the batch size
     * @param capture the warm-up pass and the stream capture
     * @param instantiate {@code cudaGraphInstantiate} and the upload
     * @param deviceBytes device memory the executable took
     */
    public CaptureReport(int lane, int bucket, Duration capture, Duration instantiate, long deviceBytes) {
        this(lane, bucket, capture, instantiate, deviceBytes, false);
    }
}
