package org.cudagraph4j.serving;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How an {@link InferenceEngine} batches and serves.
 *
 * @param ladder the batch sizes with a graph each
 * @param capturePolicy when the graphs are captured
 * @param maxWait how long the first request of a batch waits for more to join it; zero sends each
 *     batch as soon as the lanes can take it
 * @param queueCapacity the most request pieces (a request above the largest bucket counts one per
 *     piece) waiting at once; a submission beyond it fails at once with {@link QueueFullException}
 * @param lanes how many batches run at once, each with its own stream, buffers and graphs, so that
 *     one batch's copies overlap another's kernels
 * @param requestTimeout how long a request may take from submission before its future fails with
 *     a {@link java.util.concurrent.TimeoutException}
 * @param closeTimeout how long {@link InferenceEngine#close()} serves what is queued before it fails
 *     the rest
 * @param graphArchives a folder where each bucket's graph is kept as a
 *     {@link org.cudagraph4j.graph.GraphArchive}, so that a later start loads it instead of capturing
 *     it; null for none. Used for lane models that {@linkplain LaneModel#archiving() support it}
 */
public record ServingOptions(BucketLadder ladder, CapturePolicy capturePolicy, Duration maxWait, int queueCapacity,
        int lanes, Duration requestTimeout, Duration closeTimeout, Path graphArchives) {

    /**
     * Checks the options.
     *
     * @param ladder the batch sizes with a graph each
     * @param capturePolicy when the graphs are captured
     * @param maxWait how long a batch waits for more requests; not negative
     * @param queueCapacity the most request pieces waiting; at least 1
     * @param lanes batches running at once; at least 1
     * @param requestTimeout a request's deadline from submission; positive
     * @param closeTimeout how long closing serves what is queued; not negative
     * @param graphArchives where bucket graphs are kept between starts, or null
     * @throws NullPointerException if an object other than {@code graphArchives} is null
     * @throws IllegalArgumentException if a number or duration is out of range
     */
    public ServingOptions {
        Objects.requireNonNull(ladder, "ladder");
        Objects.requireNonNull(capturePolicy, "capturePolicy");
        Objects.requireNonNull(maxWait, "maxWait");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        Objects.requireNonNull(closeTimeout, "closeTimeout");
        if (maxWait.isNegative() || closeTimeout.isNegative()) {
            throw new IllegalArgumentException("maxWait and closeTimeout must not be negative");
        }
        if (requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("requestTimeout must be positive, got " + requestTimeout);
        }
        if (queueCapacity < 1 || lanes < 1) {
            throw new IllegalArgumentException("queueCapacity and lanes must be at least 1, got " + queueCapacity
                    + " and " + lanes);
        }
    }

    /**
     * Options that keep no graph archives.
     *
     * @param ladder the batch sizes with a graph each
     * @param capturePolicy when the graphs are captured
     * @param maxWait how long a batch waits for more requests; not negative
     * @param queueCapacity the most request pieces waiting; at least 1
     * @param lanes batches running at once; at least 1
     * @param requestTimeout a request's deadline from submission; positive
     * @param closeTimeout how long closing serves what is queued; not negative
     * @throws NullPointerException if an object is null
     * @throws IllegalArgumentException if a number or duration is out of range
     */
    public ServingOptions(BucketLadder ladder, CapturePolicy capturePolicy, Duration maxWait, int queueCapacity,
            int lanes, Duration requestTimeout, Duration closeTimeout) {
        this(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout, null);
    }

    /**
     * The defaults: {@link BucketLadder#defaultLadder()}, eager capture, 200 µs of batching wait,
     * 4,096 queued pieces, 2 lanes, 30 s per request, 10 s to close.
     *
     * @return the default options
     */
    public static ServingOptions defaults() {
        return new ServingOptions(BucketLadder.defaultLadder(), CapturePolicy.EAGER, Duration.ofNanos(200_000), 4096, 2,
                Duration.ofSeconds(30), Duration.ofSeconds(10));
    }

    /**
     * These options with another ladder.
     *
     * @param ladder the batch sizes
     * @return a copy with {@code ladder}
     */
    public ServingOptions withLadder(BucketLadder ladder) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options with another capture policy.
     *
     * @param capturePolicy when graphs are captured
     * @return a copy with {@code capturePolicy}
     */
    public ServingOptions withCapturePolicy(CapturePolicy capturePolicy) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options with another batching wait.
     *
     * @param maxWait how long a batch waits for more requests
     * @return a copy with {@code maxWait}
     */
    public ServingOptions withMaxWait(Duration maxWait) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options with another queue capacity.
     *
     * @param queueCapacity the most request pieces waiting
     * @return a copy with {@code queueCapacity}
     */
    public ServingOptions withQueueCapacity(int queueCapacity) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options with another number of lanes.
     *
     * @param lanes batches running at once
     * @return a copy with {@code lanes}
     */
    public ServingOptions withLanes(int lanes) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options with another request timeout.
     *
     * @param requestTimeout a request's deadline from submission
     * @return a copy with {@code requestTimeout}
     */
    public ServingOptions withRequestTimeout(Duration requestTimeout) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options with another close timeout.
     *
     * @param closeTimeout how long closing serves what is queued
     * @return a copy with {@code closeTimeout}
     */
    public ServingOptions withCloseTimeout(Duration closeTimeout) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                graphArchives);
    }

    /**
     * These options keeping each bucket's graph in {@code directory}: a lane captures a bucket once
     * and saves its graph there; a later start with the same model loads it instead (no warm-up, no
     * capture), and captures again (replacing the file) when the archive no longer fits: another
     * GPU, other kernels, other buffer sizes. Lanes whose model does not
     * {@linkplain LaneModel#archiving() support archives} capture as usual.
     *
     * @param directory the folder, created if missing; null to keep none
     * @return a copy with {@code directory}
     */
    public ServingOptions withGraphArchives(Path directory) {
        return new ServingOptions(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout,
                directory);
    }
}
