package org.cudagraph4j.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaRuntimeNotFoundException;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.cudagraph4j.serving.BucketLadder;
import org.cudagraph4j.serving.CapturePolicy;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;
import org.cudagraph4j.serving.QueueFullException;
import org.cudagraph4j.serving.ServingOptions;

/**
 * An open-loop load generator against {@link InferenceEngine} in this process, serving a
 * {@code layers}-deep {@code Linear(width, width)} + ReLU MLP: requests arrive as a Poisson process
 * at each offered rate, whatever the engine's progress (open loop), and each latency is measured
 * from the request's intended arrival, so a stalled engine cannot hide its queueing (coordinated
 * omission is corrected by construction). For each capture policy and rate: throughput, p50, p99,
 * p99.9 and max latency, rejections and errors.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.ServingLoad \
 *       [--rates 1000,5000,20000] [--seconds 5] [--rows 1] [--policies EAGER,NONE] [--width 512] \
 *       [--layers 16] [--lanes 2] [--json serving.json]
 * </pre>
 * Without a GPU it prints one line and exits 2.
 */
public final class ServingLoad {
    private static final long WARMUP_NANOS = TimeUnit.SECONDS.toNanos(1);

    private record Options(List<Integer> rates, double seconds, int rows, List<CapturePolicy> policies, int width,
            int layers, int lanes, Path json) {}

    /** One (policy, rate) point. */
    record Point(String policy, int offeredPerSecond, double completedPerSecond, long completed, long rejected,
            long failed, double p50Micros, double p99Micros, double p999Micros, double maxMicros) {}

    private ServingLoad() {}

    public static void main(String[] args) throws Exception {
        Options options = parse(args);
        CudaDevice device;
        try {
            device = Cuda.device(0);
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("ServingLoad: needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(""));
            System.exit(2);
            return;
        }
        List<Point> points = new ArrayList<>();
        List<DeviceBuffer> weights = new ArrayList<>();
        try (ShippedKernels kernels = ShippedKernels.load(device)) {
            SplittableRandom random = new SplittableRandom(42);
            List<Linear> layers = new ArrayList<>();
            double bound = Math.sqrt(6.0 / options.width());
            for (int l = 0; l < options.layers(); l++) {
                DeviceBuffer w = upload(device, options.width() * options.width(), bound, random, weights);
                DeviceBuffer b = upload(device, options.width(), 0.1, random, weights);
                layers.add(new Linear(kernels, w, b, options.width(), options.width()));
            }
            for (CapturePolicy policy : options.policies()) {
                ServingOptions serving = ServingOptions.defaults().withCapturePolicy(policy)
                        .withLadder(BucketLadder.defaultLadder()).withLanes(options.lanes())
                        .withMaxWait(Duration.ofNanos(100_000)).withQueueCapacity(100_000);
                try (InferenceEngine engine = InferenceEngine.start(device, options.width(), options.width(),
                        d -> LaneModel.of(new Mlp(kernels, layers, serving.ladder().largest()), Linear.Mode.FUSED),
                        serving)) {
                    run(engine, options, options.rates().getFirst(), WARMUP_NANOS, random); // warm-up, not kept
                    for (int rate : options.rates()) {
                        Point point = measure(engine, options, policy, rate, random);
                        points.add(point);
                        System.out.printf(Locale.ROOT, "%-6s %8d/s offered  %10.1f/s served  p50 %9.1f  p99 %9.1f  "
                                + "p99.9 %9.1f  max %9.1f µs  rejected %d  failed %d%n", point.policy(),
                                point.offeredPerSecond(), point.completedPerSecond(), point.p50Micros(),
                                point.p99Micros(), point.p999Micros(), point.maxMicros(), point.rejected(),
                                point.failed());
                    }
                    System.out.println(policy + " engine: " + engine.metrics());
                }
            }
        } finally {
            weights.forEach(DeviceBuffer::close);
        }
        if (options.json() != null) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("device", device.properties().name());
            report.put("width", options.width());
            report.put("layers", options.layers());
            report.put("rowsPerRequest", options.rows());
            report.put("secondsPerPoint", options.seconds());
            report.put("lanes", options.lanes());
            report.put("points", points);
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(options.json().toFile(), report);
        }
    }

    private static Point measure(InferenceEngine engine, Options options, CapturePolicy policy, int rate,
            SplittableRandom random) throws InterruptedException {
        long nanos = (long) (options.seconds() * 1e9);
        Result result = run(engine, options, rate, nanos, random);
        Histogram h = result.latencies;
        return new Point(policy.name(), rate, result.completed / options.seconds(), result.completed, result.rejected,
                result.failed, h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(99) / 1e3,
                h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3);
    }

    private record Result(Histogram latencies, long completed, long rejected, long failed) {}

    /** Submits a Poisson stream at {@code rate} for {@code nanos}, then waits for every answer. */
    private static Result run(InferenceEngine engine, Options options, int rate, long nanos, SplittableRandom random)
            throws InterruptedException {
        Recorder recorder = new Recorder(TimeUnit.SECONDS.toNanos(60), 3);
        LongAdder completed = new LongAdder();
        LongAdder rejected = new LongAdder();
        LongAdder failed = new LongAdder();
        float[] rows = new float[options.rows() * options.width()];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = (float) (random.nextDouble() * 2 - 1);
        }
        List<CompletableFuture<float[]>> inFlight = new ArrayList<>();
        long start = System.nanoTime();
        double intended = start;
        while (intended - start < nanos) {
            intended = OpenLoop.next(intended, rate, random);
            long arrival = (long) intended;
            OpenLoop.await(arrival);
            CompletableFuture<float[]> future = engine.submit(rows);
            inFlight.add(future.whenComplete((answer, failure) -> {
                if (failure == null) {
                    recorder.recordValue(Math.max(0, System.nanoTime() - arrival));
                    completed.increment();
                } else if (failure instanceof QueueFullException
                        || failure.getCause() instanceof QueueFullException) {
                    rejected.increment();
                } else {
                    failed.increment();
                }
            }));
        }
        for (CompletableFuture<float[]> future : inFlight) {
            try {
                future.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                // counted by the callback
            }
        }
        return new Result(recorder.getIntervalHistogram(), completed.sum(), rejected.sum(), failed.sum());
    }

    private static DeviceBuffer upload(CudaDevice device, int length, double bound, SplittableRandom random,
            List<DeviceBuffer> owned) {
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
        }
        DeviceBuffer buffer = device.allocateFloats(length);
        owned.add(buffer);
        buffer.copyFrom(values);
        return buffer;
    }

    private static Options parse(String[] args) {
        Map<String, String> given = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("expected --option value pairs, got " + Arrays.toString(args));
            }
            given.put(args[i].substring(2), args[i + 1]);
        }
        try {
            List<Integer> rates = Arrays.stream(given.getOrDefault("rates", "1000,5000,20000").split(","))
                    .map(Integer::parseInt).toList();
            List<CapturePolicy> policies = Arrays.stream(given.getOrDefault("policies", "EAGER,NONE").split(","))
                    .map(CapturePolicy::valueOf).toList();
            Options options = new Options(rates, Double.parseDouble(given.getOrDefault("seconds", "5")),
                    Integer.parseInt(given.getOrDefault("rows", "1")), policies,
                    Integer.parseInt(given.getOrDefault("width", "512")),
                    Integer.parseInt(given.getOrDefault("layers", "16")),
                    Integer.parseInt(given.getOrDefault("lanes", "2")),
                    given.containsKey("json") ? Path.of(given.get("json")) : null);
            if (rates.stream().anyMatch(r -> r < 1) || options.seconds() <= 0 || options.rows() < 1
                    || options.width() < 1 || options.layers() < 1 || options.lanes() < 1) {
                usage("rates, seconds, rows, width, layers and lanes must be positive");
            }
            return options;
        } catch (NumberFormatException e) {
            usage("a number was expected: " + e.getMessage());
            return null;
        } catch (IllegalArgumentException e) {
            usage(e.getMessage()); // an unknown capture policy
            return null;
        }
    }

    private static void usage(String problem) {
        System.err.println("ServingLoad: " + problem);
        System.err.println("usage: ServingLoad [--rates r1,r2,...] [--seconds S] [--rows N] [--policies EAGER,LAZY,NONE]"
                + " [--width W] [--layers L] [--lanes N] [--json FILE]");
        System.exit(2);
    }
}
