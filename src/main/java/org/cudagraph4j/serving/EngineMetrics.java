package org.cudagraph4j.serving;

import java.util.Map;

/**
 * A snapshot of an engine's counters since it started.
 *
 * @param requests requests accepted
 * @param rejected submissions refused because the queue was full
 * @param completed requests answered
 * @param failed requests failed (a CUDA error, a timeout, the engine closing), cancellations included
 * @param batches batches run
 * @param graphLaunches batches that ran as one graph launch
 * @param eagerLaunches batches that ran the model's kernels one by one (their bucket had no graph yet)
 * @param rows request rows served
 * @param paddedRows zero rows added to fill buckets: the padding waste
 * @param queued request pieces waiting now
 * @param batchesPerBucket batches run per bucket size
 * @param latencyP50Micros median time from submission to answer, in µs (0 before the first answer)
 * @param latencyP99Micros 99th percentile of that time, in µs
 * @param latencyP999Micros 99.9th percentile of that time, in µs
 * @param batchesPerDevice batches run per device, by ordinal, in ascending order: every device the
 *     engine serves on, at 0 while it has run none, so that a device left idle shows
 * @param rowsPerDevice request rows served per device, by ordinal, likewise
 * @param queueMicros time that served request pieces waited, from submission to the start of their
 *     batch, summed over pieces, in µs (Triton's {@code nv_inference_queue_duration_us})
 * @param computeMicros time that batches ran (copies in, graph or kernels, copies out, sync), summed
 *     over batches, in µs
 */
public record EngineMetrics(long requests, long rejected, long completed, long failed, long batches,
        long graphLaunches, long eagerLaunches, long rows, long paddedRows, int queued,
        Map<Integer, Long> batchesPerBucket, long latencyP50Micros, long latencyP99Micros, long latencyP999Micros,
        Map<Integer, Long> batchesPerDevice, Map<Integer, Long> rowsPerDevice, long queueMicros,
        long computeMicros) {}
