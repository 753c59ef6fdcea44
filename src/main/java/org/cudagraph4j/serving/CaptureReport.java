package org.cudagraph4j.serving;

import java.time.Duration;

/**
 * What one bucket's graph cost a lane.
 *
 * @param lane the lane, from 0
 * @param bucket the batch size
 * @param capture the warm-up pass and the stream capture
 * @param instantiate {@code cudaGraphInstantiate} and the upload
 * @param deviceBytes device memory the executable took, as the device's free memory fell; other
 *     processes on the device move it
 */
public record CaptureReport(int lane, int bucket, Duration capture, Duration instantiate, long deviceBytes) {}
