package org.cudagraph4j.benchmarks.server;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.cudagraph4j.serving.EngineMetrics;

/**
 * The server's Prometheus metrics ({@code GET /metrics}, the text exposition format), named after
 * what a Triton user looks for: requests answered and refused, their duration, and (on the GPU
 * backend) the engine's queue and compute time, batch sizes, graph launches against eager
 * fallbacks, and batches and rows per GPU. The server's own counters are Prometheus client metrics;
 * the engine's are read from {@link EngineMetrics} at each scrape.
 *
 * <p>Thread safety: safe for concurrent use.
 */
final class ServerMetrics {
    /** Seconds: 50 µs to 10 s, the range from one small batch to a request timing out. */
    private static final double[] DURATION_BOUNDS = {50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3,
        20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1, 2, 5, 10};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter success;
    private final Counter failure;
    private final Histogram duration;
    private final String model;

    ServerMetrics(String model, Supplier<Optional<EngineMetrics>> engine, BooleanSupplier ready) {
        this.model = model;
        success = Counter.builder().name("inference_request_success")
                .help("Inference requests answered with 200").labelNames("model", "version").register(registry);
        failure = Counter.builder().name("inference_request_failure")
                .help("Inference requests refused or failed, by HTTP status").labelNames("model", "version", "code")
                .register(registry);
        duration = Histogram.builder().name("inference_request_duration").unit(Unit.SECONDS)
                .help("Inference requests, from their headers' arrival to their answer, by HTTP status")
                .classicOnly().classicUpperBounds(DURATION_BOUNDS).labelNames("model", "version", "code")
                .register(registry);
        registry.register(new EngineCollector(model, engine, ready));
    }

    /** Counts one inference request that ended with HTTP {@code status}, {@code nanos} after it arrived. */
    void request(int status, long nanos) {
        request(model, status, nanos);
    }

    /** Counts one request to model {@code name} (a generate request's, say) as {@link #request(int, long)} does. */
    void request(String name, int status, long nanos) {
        String code = Integer.toString(status);
        (status == 200 ? success.labelValues(name, KServeProtocol.VERSION)
                : failure.labelValues(name, KServeProtocol.VERSION, code)).inc();
        duration.labelValues(name, KServeProtocol.VERSION, code).observe(nanos / 1e9);
    }

    /** The scrape, in the Prometheus text format. */
    byte[] scrape() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
        try {
            PrometheusTextFormatWriter.create().write(out, registry.scrape());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static String contentType() {
        return PrometheusTextFormatWriter.CONTENT_TYPE;
    }

    /** The engine's counters as Prometheus metrics, read at each scrape; only readiness without an engine. */
    private record EngineCollector(String model, Supplier<Optional<EngineMetrics>> engine, BooleanSupplier ready)
            implements MultiCollector {
        @Override
        public MetricSnapshots collect() {
            MetricSnapshots.Builder all = MetricSnapshots.builder();
            all.metricSnapshot(GaugeSnapshot.builder().name("inference_ready")
                    .help("1 while the server takes inference requests, 0 when unhealthy or shutting down")
                    .dataPoint(GaugeDataPointSnapshot.builder().labels(labels()).value(ready.getAsBoolean() ? 1 : 0)
                            .build())
                    .build());
            Optional<EngineMetrics> read = engine.get();
            if (read.isEmpty()) {
                return all.build();
            }
            EngineMetrics m = read.get();
            all.metricSnapshot(counter("inference_engine_requests", "Requests the engine accepted", m.requests()));
            all.metricSnapshot(counter("inference_engine_rejected",
                    "Requests the engine refused because its queue was full", m.rejected()));
            all.metricSnapshot(counter("inference_engine_failed",
                    "Requests the engine failed: a CUDA error, a timeout, a cancellation, closing", m.failed()));
            all.metricSnapshot(counter("inference_queue_duration_seconds",
                    "Time request pieces waited, from submission to their batch's start, summed",
                    m.queueMicros() / 1e6));
            all.metricSnapshot(counter("inference_compute_duration_seconds",
                    "Time batches ran (copies, graph or kernels, sync), summed", m.computeMicros() / 1e6));
            all.metricSnapshot(counter("inference_graph_launches", "Batches run as one CUDA graph launch",
                    m.graphLaunches()));
            all.metricSnapshot(counter("inference_eager_launches",
                    "Batches run kernel by kernel because their bucket had no graph yet", m.eagerLaunches()));
            all.metricSnapshot(counter("inference_padded_rows", "Zero rows added to fill buckets", m.paddedRows()));
            all.metricSnapshot(GaugeSnapshot.builder().name("inference_queue_pieces")
                    .help("Request pieces waiting for a batch now")
                    .dataPoint(GaugeDataPointSnapshot.builder().labels(labels()).value(m.queued()).build()).build());
            all.metricSnapshot(batchSizes(m.batchesPerBucket()));
            all.metricSnapshot(perDevice("inference_batches", "Batches run, per GPU", m.batchesPerDevice()));
            all.metricSnapshot(perDevice("inference_rows", "Request rows served, per GPU", m.rowsPerDevice()));
            return all.build();
        }

        private Labels labels() {
            return Labels.of("model", model, "version", KServeProtocol.VERSION);
        }

        private CounterSnapshot counter(String name, String help, double value) {
            return CounterSnapshot.builder().name(name).help(help)
                    .dataPoint(CounterDataPointSnapshot.builder().labels(labels()).value(value).build()).build();
        }

        private CounterSnapshot perDevice(String name, String help, Map<Integer, Long> counts) {
            CounterSnapshot.Builder snapshot = CounterSnapshot.builder().name(name).help(help);
            counts.forEach((device, count) -> snapshot.dataPoint(CounterDataPointSnapshot.builder()
                    .labels(labels().add("gpu", Integer.toString(device))).value(count).build()));
            return snapshot.build();
        }

        /** The batches per bucket as a histogram of batch sizes: a batch of n rows runs in the bucket ≥ n. */
        private HistogramSnapshot batchSizes(Map<Integer, Long> perBucket) {
            int n = perBucket.size();
            double[] bounds = new double[n + 1];
            long[] counts = new long[n + 1];
            int i = 0;
            double sum = 0;
            for (Map.Entry<Integer, Long> bucket : new TreeMap<>(perBucket).entrySet()) {
                bounds[i] = bucket.getKey();
                counts[i++] = bucket.getValue();
                sum += (double) bucket.getKey() * bucket.getValue();
            }
            bounds[n] = Double.POSITIVE_INFINITY;
            return HistogramSnapshot.builder().name("inference_batch_size")
                    .help("Batches by the bucket (padded batch size) they ran in")
                    .dataPoint(HistogramDataPointSnapshot.builder().labels(labels())
                            .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, counts)).sum(sum).build())
                    .build();
        }
    }
}
