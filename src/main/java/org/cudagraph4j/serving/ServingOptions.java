package org.cudagraph4j.serving;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * How an {@link InferenceEngine} batches and serves.
 *
 * <p>Batching is work-conserving by default ({@code maxWait} zero): a lane that is free takes
 * whatever is queued, so requests batch only while every lane is busy, and a lone request never
 * waits for company. A positive {@code maxWait} trades a lone request's latency for fuller
 * batches; under saturation the queue fills batches either way. Measured on an H200 on 2026-12-01
 * (16 × {@code Linear(512, 512)} + ReLU, one row, closed loop, {@code ServingLoad --floor}): the
 * defaults cost 11.5 µs of p50 over one thread's bare copy, graph launch and copy back, a 200 µs
 * {@code maxWait} cost 295 µs, and at saturation the two served the same rows per second (1.001×).
 * The default 100 µs idle spin was worth 6.5 µs of that p50 against parking at once.
 *
 * @param ladder the batch sizes with a graph each
 * @param capturePolicy when the graphs are captured
 * @param maxWait how long a lane that has taken a batch's first request waits for more to join it
 *     before it runs the batch; zero (the default) runs whatever is queued at once, so a batch is
 *     what arrived while every lane was busy
 * @param idleSpin how long a lane with nothing to do polls for a request before it parks its
 *     thread: a request arriving within it starts without a thread wake-up, at the cost of that much
 *     CPU time after each batch
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
        int lanes, Duration requestTimeout, Duration closeTimeout, Path graphArchives, Duration idleSpin) {
    /** An idle lane's default spin: longer than a closed-loop client takes to send its next request. */
    private static final Duration DEFAULT_IDLE_SPIN = Duration.ofNanos(100_000);

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
     * @param idleSpin how long an idle lane polls before it parks; not negative
     * @throws NullPointerException if an object other than {@code graphArchives} is null
     * @throws IllegalArgumentException if a number or duration is out of range
     */
    public ServingOptions {
        Objects.requireNonNull(ladder, "ladder");
        Objects.requireNonNull(capturePolicy, "capturePolicy");
        Objects.requireNonNull(maxWait, "maxWait");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        Objects.requireNonNull(closeTimeout, "closeTimeout");
        Objects.requireNonNull(idleSpin, "idleSpin");
        if (maxWait.isNegative() || closeTimeout.isNegative() || idleSpin.isNegative()) {
            throw new IllegalArgumentException("maxWait, closeTimeout and idleSpin must not be negative");
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
     * Options with the default idle spin.
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
    public ServingOptions(BucketLadder ladder, CapturePolicy capturePolicy, Duration maxWait, int queueCapacity,
            int lanes, Duration requestTimeout, Duration closeTimeout, Path graphArchives) {
        this(ladder, capturePolicy, maxWait, queueCapacity, lanes, requestTimeout, closeTimeout, graphArchives,
                DEFAULT_IDLE_SPIN);
    }

    /**
     * Options that keep no graph archives, with the default idle spin.
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
     * The defaults: {@link BucketLadder#defaultLadder()}, eager capture, no batching wait (a lane
     * that frees takes whatever is queued), 4,096 queued pieces, 2 lanes, 30 s per request, 10 s to
     * close, 100 µs of idle spin.
     *
     * @return the default options
     */
    public static ServingOptions defaults() {
        return new ServingOptions(BucketLadder.defaultLadder(), CapturePolicy.EAGER, Duration.ZERO, 4096, 2,
                Duration.ofSeconds(30), Duration.ofSeconds(10));
    }

    /**
     * These options with another ladder.
     *
     * @param ladder the batch sizes
     * @return a copy with {@code ladder}
     */
    public ServingOptions withLadder(BucketLadder ladder) {
        return with(draft -> draft.ladder = ladder);
    }

    /**
     * These options with another capture policy.
     *
     * @param capturePolicy when graphs are captured
     * @return a copy with {@code capturePolicy}
     */
    public ServingOptions withCapturePolicy(CapturePolicy capturePolicy) {
        return with(draft -> draft.capturePolicy = capturePolicy);
    }

    /**
     * These options with another batching wait.
     *
     * @param maxWait how long a batch waits for more requests
     * @return a copy with {@code maxWait}
     */
    public ServingOptions withMaxWait(Duration maxWait) {
        return with(draft -> draft.maxWait = maxWait);
    }

    /**
     * These options with another queue capacity.
     *
     * @param queueCapacity the most request pieces waiting
     * @return a copy with {@code queueCapacity}
     */
    public ServingOptions withQueueCapacity(int queueCapacity) {
        return with(draft -> draft.queueCapacity = queueCapacity);
    }

    /**
     * These options with another number of lanes.
     *
     * @param lanes batches running at once
     * @return a copy with {@code lanes}
     */
    public ServingOptions withLanes(int lanes) {
        return with(draft -> draft.lanes = lanes);
    }

    /**
     * These options with another request timeout.
     *
     * @param requestTimeout a request's deadline from submission
     * @return a copy with {@code requestTimeout}
     */
    public ServingOptions withRequestTimeout(Duration requestTimeout) {
        return with(draft -> draft.requestTimeout = requestTimeout);
    }

    /**
     * These options with another close timeout.
     *
     * @param closeTimeout how long closing serves what is queued
     * @return a copy with {@code closeTimeout}
     */
    public ServingOptions withCloseTimeout(Duration closeTimeout) {
        return with(draft -> draft.closeTimeout = closeTimeout);
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
        return with(draft -> draft.graphArchives = directory);
    }

    /**
     * These options with another idle spin. Zero parks an idle lane at once: no CPU time is spent
     * waiting, and each request that finds every lane parked pays for waking one.
     *
     * @param idleSpin how long an idle lane polls for a request before it parks
     * @return a copy with {@code idleSpin}
     */
    public ServingOptions withIdleSpin(Duration idleSpin) {
        return with(draft -> draft.idleSpin = idleSpin);
    }

    /** A copy with one value changed by {@code change}: the withers' one call of the constructor. */
    private ServingOptions with(Consumer<Draft> change) {
        Draft draft = new Draft(this);
        change.accept(draft);
        return new ServingOptions(draft.ladder, draft.capturePolicy, draft.maxWait, draft.queueCapacity, draft.lanes,
                draft.requestTimeout, draft.closeTimeout, draft.graphArchives, draft.idleSpin);
    }

    /** These options' values, to change one of before the copy is made (and checked). */
    private static final class Draft {
        BucketLadder ladder;
        CapturePolicy capturePolicy;
        Duration maxWait;
        int queueCapacity;
        int lanes;
        Duration requestTimeout;
        Duration closeTimeout;
        Path graphArchives;
        Duration idleSpin;

        Draft(ServingOptions options) {
            ladder = options.ladder;
            capturePolicy = options.capturePolicy;
            maxWait = options.maxWait;
            queueCapacity = options.queueCapacity;
            lanes = options.lanes;
            requestTimeout = options.requestTimeout;
            closeTimeout = options.closeTimeout;
            graphArchives = options.graphArchives;
            idleSpin = options.idleSpin;
        }
    }
}
