package org.cudagraph4j.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.benchmarks.server.CrossCheck;
import org.cudagraph4j.benchmarks.server.MlpWeights;
import org.cudagraph4j.benchmarks.server.ReplicatedMlp;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.cudagraph4j.serving.BucketLadder;
import org.cudagraph4j.serving.CapturePolicy;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.QueueFullException;
import org.cudagraph4j.serving.ServingOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * An open-loop load generator against {@link InferenceEngine} in this process, serving a
 * {@code layers}-deep {@code Linear(width, width)} + ReLU MLP: requests arrive as a Poisson process
 * at each offered rate, whatever the engine's progress (open loop), and each latency is measured
 * from the request's intended arrival, so a stalled engine cannot hide its queueing (coordinated
 * omission is corrected by construction). For each capture policy and rate: throughput, p50, p99,
 * p99.9 and max latency, rejections and errors.
 *
 * <p>With {@code --devices}, a sweep over GPU counts replaces the sweep over rates. For each
 * count g, one engine runs over the host's first g GPUs, each with its own kernels and its own copy
 * of the same weights ({@link ReplicatedMlp}). Its answers are first checked against the model on
 * the CPU, from every lane in turn. Then two points: {@code --per-gpu-rate} × g, the latency at a
 * fixed load per GPU; and {@code --saturation-rate} × g, far past what the GPUs serve, the
 * throughput at saturation. A table then gives each count's scaling: served(g) × g0 / (g ×
 * served(g0)), g0 the smallest count swept (the target: 0.9 or more, from g0 = 1).
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.ServingLoad \
 *       [--rates 1000,5000,20000] [--seconds 5] [--rows 1] [--policies EAGER,NONE] [--width 512] \
 *       [--layers 16] [--lanes 2] [--clients 1] [--max-in-flight 4096] [--json serving.json]
 *   ... ServingLoad --devices 1,2 [--per-gpu-rate 5000] [--saturation-rate 200000] [the options above but --rates]
 *   ... ServingLoad --floor [--help for its options]
 * </pre>
 * {@code --floor} runs {@link ServingFloor}: the engine beside the floor under it, closed loop.
 * {@code --devices} lists GPU counts, not ordinals. {@code --lanes}, {@code --clients} and
 * {@code --max-in-flight} count per GPU. Each client is an independent Poisson stream of an equal
 * share of the rate, on a thread of its own, so that one thread's submission cost does not cap the
 * load. An arrival while max-in-flight × g requests are outstanding is dropped, not submitted: past
 * saturation the engine then works from a full queue, and the generator spends nothing on requests
 * the engine could only refuse. Every point reports the rate actually submitted beside the offered
 * one: below it with nothing dropped, the generator could not keep up.
 * Without a GPU it prints one line and exits 2, as it does for a count above the host's GPUs.
 */
public final class ServingLoad {
    private static final long WARMUP_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** CrossCheck's default: the largest relative error of an answer against the CPU's taken as right. */
    private static final double TOLERANCE = 1e-4;

    /**
     * What to run.
     *
     * @param devices the GPU counts to sweep, or null for the one-GPU sweep over {@code rates}
     */
    record Options(List<Integer> rates, double seconds, int rows, List<CapturePolicy> policies, int width,
            int layers, int lanes, int clients, int maxInFlight, Path json, List<Integer> devices, int perGpuRate,
            int saturationRate) {}

    /**
     * One measured point.
     *
     * @param load {@code rate} (the one-GPU sweep), {@code per-gpu} or {@code saturation}
     * @param gpus how many GPUs the engine ran on
     * @param submittedPerSecond requests submitted per second of the time the generator took to get
     *     through its arrivals: below the offered rate when it fell behind or dropped arrivals
     * @param completedPerSecond answers per second, until the last answer
     * @param dropped arrivals not submitted because max-in-flight requests per GPU were outstanding
     * @param batchesPerDevice batches each GPU ran during the point, by ordinal
     */
    record Point(String policy, String load, int gpus, int offeredPerSecond, double submittedPerSecond,
            double completedPerSecond, long completed, long rejected, long failed, long dropped, double p50Micros,
            double p99Micros, double p999Micros, double maxMicros, Map<Integer, Long> batchesPerDevice) {
        /** Whether the engine, not the generator, set the pace: arrivals were dropped or refused. */
        boolean saturated() {
            return dropped > 0 || rejected > 0;
        }
    }

    /**
     * One GPU count's result of the sweep.
     *
     * @param servedPerSecond answers per second at the saturation point
     * @param servedPerGpuPerSecond that over the GPU count
     * @param scaling {@code servedPerGpuPerSecond} over the smallest count's
     * @param saturated whether the saturation point was saturated; if not, the offered load set the pace, not the
     *     engine, and {@code servedPerSecond} is no capacity
     * @param perGpuOfferedPerSecond the per-GPU point's offered rate, for all the GPUs
     * @param perGpuSubmittedPerSecond its rate actually submitted
     * @param perGpuP99Micros its p99 latency
     */
    record Scaling(String policy, int gpus, double servedPerSecond, double servedPerGpuPerSecond, double scaling,
            boolean saturated, int perGpuOfferedPerSecond, double perGpuSubmittedPerSecond, double perGpuP99Micros) {}

    private ServingLoad() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--floor")) {
            ServingFloor.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line; {@link #options()} checks it. */
    @Command(name = "ServingLoad", mixinStandardHelpOptions = true, sortOptions = false,
            description = "Open-loop load against InferenceEngine in this process: a sweep over rates on one GPU, or "
                    + "with --devices over GPU counts (lanes, clients, max-in-flight and both rates per GPU).",
            footer = "ServingLoad --floor [--help for its options]: the engine beside its floor, closed loop.")
    static final class Main implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--rates", split = ",", paramLabel = "RATE",
                description = "offered requests/s, one GPU (default: 1000,5000,20000)")
        List<Integer> rates;

        @Option(names = "--seconds", description = "seconds per point (default: ${DEFAULT-VALUE})")
        double seconds = 5;

        @Option(names = "--rows", description = "rows per request (default: ${DEFAULT-VALUE})")
        int rows = 1;

        @Option(names = "--policies", split = ",", paramLabel = "POLICY",
                description = "capture policies: EAGER, LAZY, NONE (default: EAGER,NONE)")
        List<String> policies;

        @Option(names = "--width", description = "the MLP's width (default: ${DEFAULT-VALUE})")
        int width = 512;

        @Option(names = "--layers", description = "the MLP's depth (default: ${DEFAULT-VALUE})")
        int layers = 16;

        @Option(names = "--lanes", description = "lanes per GPU (default: ${DEFAULT-VALUE})")
        int lanes = 2;

        @Option(names = "--clients", description = "submitting threads per GPU (default: ${DEFAULT-VALUE})")
        int clients = 1;

        @Option(names = "--max-in-flight", description = "requests outstanding per GPU at most (default: "
                + "${DEFAULT-VALUE})")
        int maxInFlight = 4096;

        @Option(names = "--json", description = "write the points there")
        Path json;

        @Option(names = "--devices", paramLabel = "COUNTS", description = "GPU counts to sweep, such as 1,2,4")
        String devices;

        @Option(names = "--per-gpu-rate", description = "with --devices: the fixed load per GPU (default: 5000)")
        Integer perGpuRate;

        @Option(names = "--saturation-rate", description = "with --devices: the saturating load per GPU (default: "
                + "200000)")
        Integer saturationRate;

        /**
         * The options, checked; what {@code --devices} asks of the host is checked by {@link #checkAvailable}.
         *
         * @throws IllegalArgumentException saying what is wrong
         */
        Options options() {
            List<Integer> counts = devices == null ? null : gpuCounts(devices);
            if (counts != null && rates != null) {
                throw new IllegalArgumentException("--rates sweeps one GPU; with --devices, the rates are "
                        + "--per-gpu-rate and --saturation-rate, per GPU");
            }
            if (counts == null && (perGpuRate != null || saturationRate != null)) {
                throw new IllegalArgumentException("--per-gpu-rate and --saturation-rate go with --devices");
            }
            List<CapturePolicy> chosen = new ArrayList<>();
            for (String name : policies == null ? List.of("EAGER", "NONE") : policies) {
                try {
                    chosen.add(CapturePolicy.valueOf(name.strip()));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("--policies takes EAGER, LAZY and NONE; got \"" + name + "\"");
                }
            }
            Options options = new Options(rates == null ? List.of(1000, 5000, 20000) : List.copyOf(rates), seconds,
                    rows, List.copyOf(chosen), width, layers, lanes, clients, maxInFlight, json, counts,
                    perGpuRate == null ? 5000 : perGpuRate, saturationRate == null ? 200_000 : saturationRate);
            if (options.rates().stream().anyMatch(r -> r < 1) || !(options.seconds() > 0) || options.rows() < 1
                    || options.width() < 1 || options.layers() < 1 || options.lanes() < 1 || options.clients() < 1
                    || options.maxInFlight() < 1 || options.perGpuRate() < 1 || options.saturationRate() < 1) {
                throw new IllegalArgumentException("rates, seconds, rows, width, layers, lanes, clients, "
                        + "max-in-flight, per-gpu-rate and saturation-rate must be positive");
            }
            return options;
        }

        @Override
        public Integer call() throws Exception {
            Options options;
            try {
                options = options();
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
            return run(options);
        }
    }

    /** Runs the sweep {@code options} ask for; the exit status. */
    private static int run(Options options) throws Exception {
        List<CudaDevice> devices;
        try {
            devices = Cuda.devices();
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("ServingLoad: needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(""));
            return 2;
        }
        if (devices.isEmpty()) {
            System.err.println("ServingLoad: needs a CUDA GPU: "
                    + Cuda.unavailableReason().orElse("no CUDA device is present"));
            return 2;
        }
        if (options.devices() == null) {
            sweepRates(options, devices.getFirst());
            return 0;
        }
        try {
            checkAvailable(options.devices(), devices.size());
        } catch (IllegalArgumentException e) {
            System.err.println("ServingLoad: " + e.getMessage());
            return 2;
        }
        return sweepGpus(options, devices);
    }

    private static ServingOptions serving(Options options, CapturePolicy policy) {
        return ServingOptions.defaults().withCapturePolicy(policy).withLadder(BucketLadder.defaultLadder())
                .withLanes(options.lanes()).withQueueCapacity(100_000);
    }

    /** The one-GPU sweep: each policy at each rate. */
    private static void sweepRates(Options options, CudaDevice device) throws Exception {
        List<Point> points = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(43);
        try (ReplicatedMlp mlp = new ReplicatedMlp(List.of(device),
                MlpWeights.random(options.width(), options.layers(), 42))) {
            for (CapturePolicy policy : options.policies()) {
                ServingOptions serving = serving(options, policy);
                try (InferenceEngine engine = InferenceEngine.start(device, options.width(), options.width(),
                        mlp.lanes(serving.ladder().largest()), serving)) {
                    run(engine, options, 1, options.rates().getFirst(), WARMUP_NANOS, random); // warm-up, not kept
                    for (int rate : options.rates()) {
                        Point point = measure(engine, options, policy, "rate", 1, rate, random);
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

    /** The sweep over GPU counts; the exit status: 0, or 1 when an answer was wrong. */
    private static int sweepGpus(Options options, List<CudaDevice> host) throws Exception {
        List<CudaDevice> used = host.subList(0, Collections.max(options.devices()));
        MlpWeights model = MlpWeights.random(options.width(), options.layers(), 42);
        SplittableRandom random = new SplittableRandom(43);
        float[] probe = rows(1, options.width(), random);
        float[] expected = model.forward(probe);
        List<String> names = used.stream().map(d -> d.properties().name()).toList();
        List<Point> points = new ArrayList<>();
        List<Scaling> scaling = new ArrayList<>();
        try (ReplicatedMlp mlp = new ReplicatedMlp(used, model)) {
            for (CapturePolicy policy : options.policies()) {
                ServingOptions serving = serving(options, policy);
                List<Point> measured = new ArrayList<>();
                for (int gpus : options.devices()) {
                    try (InferenceEngine engine = InferenceEngine.start(used.subList(0, gpus), options.width(),
                            options.width(), mlp.lanes(serving.ladder().largest()), serving)) {
                        String wrong = check(engine, probe, expected, 2 * options.lanes() * gpus);
                        if (wrong != null) {
                            System.err.println("ServingLoad: " + policy + " on " + gpus + " GPU(s): " + wrong);
                            return 1;
                        }
                        int warmup = Math.multiplyExact(options.perGpuRate(), gpus);
                        run(engine, options, gpus, warmup, WARMUP_NANOS, random); // not kept
                        for (String load : List.of("per-gpu", "saturation")) {
                            int rate = Math.multiplyExact(load.equals("per-gpu") ? options.perGpuRate()
                                    : options.saturationRate(), gpus);
                            Point point = measure(engine, options, policy, load, gpus, rate, random);
                            measured.add(point);
                            System.out.printf(Locale.ROOT, "%-6s %d GPU(s) %-10s %9d/s offered  %10.1f/s submitted  "
                                    + "%10.1f/s served  p50 %9.1f  p99 %9.1f  p99.9 %9.1f  max %9.1f µs  rejected %d  "
                                    + "failed %d  dropped %d  batches per GPU %s%n", policy, gpus, load,
                                    point.offeredPerSecond(), point.submittedPerSecond(), point.completedPerSecond(),
                                    point.p50Micros(), point.p99Micros(), point.p999Micros(), point.maxMicros(),
                                    point.rejected(), point.failed(), point.dropped(),
                                    perDevice(point.batchesPerDevice()));
                        }
                    }
                }
                points.addAll(measured);
                List<Scaling> rows = scaling(measured);
                scaling.addAll(rows);
                System.out.print(table(rows, options, names));
            }
        }
        if (options.json() != null) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("device", names.getFirst());
            report.put("devices", names);
            report.put("deviceCount", host.size());
            report.put("gpuCounts", options.devices());
            report.put("width", options.width());
            report.put("layers", options.layers());
            report.put("rowsPerRequest", options.rows());
            report.put("secondsPerPoint", options.seconds());
            report.put("lanesPerGpu", options.lanes());
            report.put("clientsPerGpu", options.clients());
            report.put("maxInFlightPerGpu", options.maxInFlight());
            report.put("perGpuRate", options.perGpuRate());
            report.put("saturationRate", options.saturationRate());
            report.put("points", points);
            report.put("scaling", scaling);
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(options.json().toFile(), report);
        }
        return 0;
    }

    /**
     * Sends {@code probe} {@code count} times, one at a time. A batch goes to the lane idle longest,
     * so one request after another the lanes take turns and each device answers some; every answer
     * must match the CPU's.
     *
     * @return null when every answer matched and every device ran a batch; otherwise what went wrong
     */
    private static String check(InferenceEngine engine, float[] probe, float[] expected, int count)
            throws Exception {
        Map<Integer, Long> before = engine.metrics().batchesPerDevice();
        for (int i = 0; i < count; i++) {
            double error = CrossCheck.relativeError(engine.submit(probe).get(60, TimeUnit.SECONDS), expected);
            if (!(error <= TOLERANCE)) {
                return "answer " + (i + 1) + " of the check differs from the model on the CPU: relative error "
                        + error + " (at most " + TOLERANCE + " expected)";
            }
        }
        Map<Integer, Long> ran = since(before, engine.metrics().batchesPerDevice());
        if (ran.containsValue(0L)) {
            return "a GPU ran none of the check's " + count + " requests: batches per GPU " + perDevice(ran);
        }
        return null;
    }

    /** Each count's scaling against the smallest count's, from one policy's points. */
    static List<Scaling> scaling(List<Point> points) {
        Map<Integer, Point> saturation = new TreeMap<>();
        Map<Integer, Point> perGpu = new TreeMap<>();
        for (Point point : points) {
            (point.load().equals("saturation") ? saturation : perGpu).put(point.gpus(), point);
        }
        if (saturation.isEmpty()) {
            return List.of();
        }
        Point base = saturation.values().iterator().next();
        double basePerGpu = base.completedPerSecond() / base.gpus();
        List<Scaling> rows = new ArrayList<>();
        for (Point point : saturation.values()) {
            double served = point.completedPerSecond();
            Point latency = perGpu.get(point.gpus());
            rows.add(new Scaling(point.policy(), point.gpus(), served, served / point.gpus(),
                    basePerGpu == 0 ? 0 : served / point.gpus() / basePerGpu, point.saturated(),
                    latency == null ? 0 : latency.offeredPerSecond(),
                    latency == null ? 0 : latency.submittedPerSecond(), latency == null ? 0 : latency.p99Micros()));
        }
        return rows;
    }

    /** One policy's scaling as a table. */
    static String table(List<Scaling> rows, Options options, List<String> names) {
        if (rows.isEmpty()) {
            return "";
        }
        StringBuilder text = new StringBuilder(String.format(Locale.ROOT,
                "%s scaling on %s: %d-layer width-%d MLP, %d row(s) per request; per GPU %d lane(s), %d client(s)%n",
                rows.getFirst().policy(), describe(names), options.layers(), options.width(), options.rows(),
                options.lanes(), options.clients()));
        text.append(String.format(Locale.ROOT, "%5s %14s %12s %8s %12s %14s %10s%n", "GPUs", "saturated /s",
                "per GPU /s", "scaling", "load /s", "submitted /s", "p99 µs"));
        for (Scaling row : rows) {
            text.append(String.format(Locale.ROOT, "%5d %14.1f %12.1f %8.3f %12d %14.1f %10.1f%s%n", row.gpus(),
                    row.servedPerSecond(), row.servedPerGpuPerSecond(), row.scaling(), row.perGpuOfferedPerSecond(),
                    row.perGpuSubmittedPerSecond(), row.perGpuP99Micros(),
                    row.saturated() ? "" : "  NOT saturated (nothing dropped): raise --saturation-rate"));
        }
        text.append(String.format(Locale.ROOT, "saturated: served at --saturation-rate per GPU; scaling: per GPU /s "
                + "over the %d-GPU row's (the target: 0.9 or more); load, submitted and p99: the point at "
                + "--per-gpu-rate per GPU%n", rows.getFirst().gpus()));
        return text.toString();
    }

    /** {@code 2 x NVIDIA H200}, or the names in order where they differ. */
    private static String describe(List<String> names) {
        return names.stream().distinct().count() == 1 ? names.size() + " x " + names.getFirst()
                : String.join(", ", names);
    }

    private static String perDevice(Map<Integer, Long> counts) {
        return counts.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" "));
    }

    private static Map<Integer, Long> since(Map<Integer, Long> before, Map<Integer, Long> after) {
        Map<Integer, Long> difference = new TreeMap<>();
        after.forEach((device, count) -> difference.put(device, count - before.getOrDefault(device, 0L)));
        return difference;
    }

    private static float[] rows(int count, int width, SplittableRandom random) {
        float[] rows = new float[count * width];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = (float) (random.nextDouble() * 2 - 1);
        }
        return rows;
    }

    private static Point measure(InferenceEngine engine, Options options, CapturePolicy policy, String load, int gpus,
            int rate, SplittableRandom random) throws InterruptedException {
        Map<Integer, Long> before = engine.metrics().batchesPerDevice();
        Result result = run(engine, options, gpus, rate, (long) (options.seconds() * 1e9), random);
        Histogram h = result.latencies;
        return new Point(policy.name(), load, gpus, rate, result.submittedPerSecond, result.completedPerSecond,
                result.completed, result.rejected, result.failed, result.dropped, h.getValueAtPercentile(50) / 1e3,
                h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3,
                since(before, engine.metrics().batchesPerDevice()));
    }

    private record Result(Histogram latencies, long completed, long rejected, long failed, long dropped,
            double submittedPerSecond, double completedPerSecond) {}

    /**
     * Submits Poisson streams adding up to {@code rate} for {@code nanos}, {@code clients} per GPU each
     * on its own thread, then waits for every answer.
     */
    private static Result run(InferenceEngine engine, Options options, int gpus, int rate, long nanos,
            SplittableRandom random) throws InterruptedException {
        Recorder recorder = new Recorder(TimeUnit.SECONDS.toNanos(60), 3);
        LongAdder completed = new LongAdder();
        LongAdder rejected = new LongAdder();
        LongAdder failed = new LongAdder();
        LongAdder answered = new LongAdder();
        AtomicInteger outstanding = new AtomicInteger();
        LongAccumulator lastAnswer = new LongAccumulator(Math::max, Long.MIN_VALUE);
        float[] rows = rows(options.rows(), options.width(), random);
        int clients = options.clients() * gpus;
        long maxInFlight = (long) options.maxInFlight() * gpus;
        double perClient = (double) rate / clients;
        long[] sent = new long[clients];
        long[] dropped = new long[clients];
        long[] finished = new long[clients];
        List<Thread> threads = new ArrayList<>();
        long start = System.nanoTime();
        for (int c = 0; c < clients; c++) {
            int client = c;
            SplittableRandom arrivals = random.split();
            threads.add(Thread.ofPlatform().name("serving-load-client-" + c).start(() -> {
                double intended = start;
                while (true) {
                    intended = OpenLoop.next(intended, perClient, arrivals);
                    if (intended - start >= nanos) {
                        break;
                    }
                    long arrival = (long) intended;
                    OpenLoop.await(arrival);
                    if (outstanding.get() >= maxInFlight) {
                        dropped[client]++;
                        continue;
                    }
                    outstanding.incrementAndGet();
                    sent[client]++;
                    engine.submit(rows).whenComplete((answer, failure) -> {
                        long now = System.nanoTime();
                        outstanding.decrementAndGet();
                        if (failure == null) {
                            recorder.recordValue(Math.max(0, now - arrival));
                            lastAnswer.accumulate(now);
                            completed.increment();
                        } else if (failure instanceof QueueFullException
                                || failure.getCause() instanceof QueueFullException) {
                            rejected.increment();
                        } else {
                            failed.increment();
                        }
                        answered.increment();
                    });
                }
                finished[client] = System.nanoTime();
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long submitted = Arrays.stream(sent).sum();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (answered.sum() < submitted && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        double seconds = nanos / 1e9;
        double submitting = Math.max(seconds, (Arrays.stream(finished).max().orElse(start) - start) / 1e9);
        double answering = Math.max(seconds, (lastAnswer.get() - start) / 1e9);
        return new Result(recorder.getIntervalHistogram(), completed.sum(), rejected.sum(),
                failed.sum() + submitted - answered.sum(), Arrays.stream(dropped).sum(), submitted / submitting,
                completed.sum() / answering);
    }

    /**
     * Parses the command line into checked options (without {@code --floor} or {@code --help}).
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    static Options parse(String[] args) {
        Main main = new Main();
        try {
            new CommandLine(main).parseArgs(args);
        } catch (ParameterException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        return main.options();
    }

    /**
     * {@code --devices}: GPU counts separated by commas, each at least 1 and listed once.
     *
     * @throws IllegalArgumentException saying what is wrong
     */
    static List<Integer> gpuCounts(String spec) {
        List<Integer> counts = new ArrayList<>();
        for (String item : spec.split(",", -1)) {
            if (!item.strip().matches("\\d{1,4}")) {
                throw new IllegalArgumentException("--devices takes GPU counts separated by commas, such as 1,2; got \""
                        + spec + "\"");
            }
            int count = Integer.parseInt(item.strip());
            if (count < 1) {
                throw new IllegalArgumentException("--devices counts GPUs, each count at least 1; got " + count);
            }
            if (counts.contains(count)) {
                throw new IllegalArgumentException("--devices lists " + count + " twice");
            }
            counts.add(count);
        }
        return List.copyOf(counts);
    }

    /**
     * Refuses a GPU count above the host's.
     *
     * @param counts the counts {@code --devices} asks for
     * @param available the host's GPUs
     * @throws IllegalArgumentException naming the count
     */
    static void checkAvailable(List<Integer> counts, int available) {
        int most = Collections.max(counts);
        if (most > available) {
            throw new IllegalArgumentException("--devices asks for " + most + " GPUs; this host has " + available);
        }
    }
}
