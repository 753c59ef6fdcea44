package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import org.HdrHistogram.Recorder;
import org.cudagraph4j.benchmarks.Cli;
import org.cudagraph4j.benchmarks.OpenLoop;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * An open-loop HTTP load generator for any Open Inference Protocol server on loopback (the Java
 * server here, or the PyTorch twin): Poisson arrivals at each offered rate, latency from each
 * request's intended arrival (so a stalled server cannot hide its queueing), HdrHistogram. Every
 * run is bounded in time and in requests, and stops by itself: each request has a timeout, at most
 * {@code maxInFlight} requests are outstanding (an arrival beyond that is counted as dropped, not
 * sent), and after the first rate the server does not sustain the ladder stops. With
 * {@code recovery}, the lowest rate runs once more at the end: whether the server recovers after
 * saturation, and whether the first point still paid for warm-up.
 *
 * <p>A point is <em>sustained</em> when every request sent was answered 200 and the answers kept
 * pace: completions per second, counted until the last answer, at least 90% of the rate sent.
 *
 * <pre>
 *   HttpLoad --url http://127.0.0.1:8000/v2/models/mlp/infer --width 512 [--rates 500,2000,8000]
 *            [--seconds 5] [--max-requests 200000] [--rows 1|1-64] [--encoding json|binary]
 *            [--timeout-seconds 10] [--max-in-flight 2048] [--warmup-seconds 1]
 *            [--stop-after-saturation true] [--recovery true] [--label NAME] [--json load.json]
 *            [--histograms DIR]
 *   HttpLoad --write-body FILE --width 512 [--rows 1] [--encoding json|binary]
 * </pre>
 * {@code --histograms DIR} writes {@code DIR/LABEL.hlog} (every point's histogram, HdrHistogram's
 * log format, tagged {@code rate-N}) and {@code DIR/LABEL-N.hgrm} (its percentile distribution, µs).
 * {@code --write-body} writes one request body for another client (wrk) and prints its
 * {@code Inference-Header-Content-Length} (an empty line for JSON).
 */
public final class HttpLoad {
    /**
     * One offered rate's outcome. Latencies are of the 200 answers, in µs from the intended arrival.
     *
     * @param offeredPerSecond the target rate
     * @param completedPerSecond 200 answers per second, over the window or until the last answer if later
     * @param sent requests sent
     * @param ok 200 answers
     * @param unavailable 503 answers
     * @param errors other statuses and failed exchanges (timeouts included)
     * @param timeouts exchanges that timed out on the client
     * @param dropped arrivals not sent because {@code maxInFlight} requests were outstanding
     * @param seconds the window, or until the last answer if later
     * @param recovery whether this is the lowest rate run again after the ladder
     * @param sustained whether every request was answered 200 at the pace sent
     */
    public record Point(int offeredPerSecond, double completedPerSecond, long sent, long ok, long unavailable,
            long errors, long timeouts, long dropped, double p50Micros, double p90Micros, double p99Micros,
            double p999Micros, double maxMicros, double meanMicros, double seconds, boolean recovery,
            boolean sustained) {}

    /** What to send, how fast and for how long. */
    public record Options(URI url, int width, List<Integer> rates, double seconds, long maxRequests, int minRows,
            int maxRows, boolean binary, double timeoutSeconds, int maxInFlight, double warmupSeconds,
            boolean stopAfterSaturation, boolean recovery) {
        /** JSON bodies, 10 s timeouts, 2048 in flight, no warm-up, every rate, no recovery point. */
        public Options(URI url, int width, List<Integer> rates, double seconds, long maxRequests, int minRows,
                int maxRows) {
            this(url, width, rates, seconds, maxRequests, minRows, maxRows, false, 10, 2048, 0, false, false);
        }

        /** Checks the options. */
        public Options {
            rates = List.copyOf(rates);
            if (width < 1 || rates.isEmpty() || rates.stream().anyMatch(r -> r < 1) || seconds <= 0 || maxRequests < 1
                    || minRows < 1 || maxRows < minRows || timeoutSeconds <= 0 || maxInFlight < 1
                    || warmupSeconds < 0) {
                throw new IllegalArgumentException("width, rates, seconds, max-requests, rows, timeout and "
                        + "max-in-flight must be positive (rows as N or A-B with A <= B), warm-up not negative");
            }
        }
    }

    /** One point's outcome with its histogram (ns). */
    public record Measured(Point point, Histogram histogram) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    /** A point is sustained when its answers kept at least this share of the pace sent. */
    static final double SUSTAINED_SHARE = 0.9;

    private HttpLoad() {}

    /**
     * Runs every rate in turn (see {@link Options} for warm-up, the stop after saturation and the recovery point).
     *
     * @param options what to send
     * @return one point per rate run
     * @throws InterruptedException if interrupted while waiting for answers
     */
    public static List<Point> run(Options options) throws InterruptedException {
        return measure(options).stream().map(Measured::point).toList();
    }

    /**
     * As {@link #run}, with each point's latency histogram.
     *
     * @param options what to send
     * @return one measurement per rate run
     * @throws InterruptedException if interrupted while waiting for answers
     */
    public static List<Measured> measure(Options options) throws InterruptedException {
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            HttpClient client = HttpClient.newBuilder().executor(executor).version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(5)).build();
            SplittableRandom random = new SplittableRandom(42);
            List<Body> bodies = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                int rows = random.nextInt(options.minRows(), options.maxRows() + 1);
                bodies.add(options.binary() ? binaryBody(rows, options.width(), random)
                        : new Body(body(rows, options.width(), random), null));
            }
            if (options.warmupSeconds() > 0) {
                runAt(client, options, options.rates().getFirst(), options.warmupSeconds(), bodies, random, false);
            }
            List<Measured> points = new ArrayList<>();
            for (int rate : options.rates()) {
                Measured point = runAt(client, options, rate, options.seconds(), bodies, random, false);
                points.add(point);
                if (!point.point().sustained() && options.stopAfterSaturation()) {
                    break;
                }
            }
            if (options.recovery()) { // after saturation, recovery; without it, a check that warm-up was long enough
                points.add(runAt(client, options, options.rates().getFirst(), options.seconds(), bodies, random, true));
            }
            client.shutdownNow();
            return points;
        }
    }

    /** A request body, and its {@code Inference-Header-Content-Length} (null for JSON only). */
    record Body(byte[] bytes, String headerLength) {}

    private static Measured runAt(HttpClient client, Options options, int rate, double seconds, List<Body> bodies,
            SplittableRandom random, boolean recovery) throws InterruptedException {
        Recorder recorder = new Recorder(TimeUnit.SECONDS.toNanos(120), 3);
        LongAdder ok = new LongAdder();
        LongAdder unavailable = new LongAdder();
        LongAdder errors = new LongAdder();
        LongAdder timeouts = new LongAdder();
        AtomicInteger outstanding = new AtomicInteger();
        AtomicLong lastAnswer = new AtomicLong();
        List<CompletableFuture<?>> inFlight = new ArrayList<>();
        long sent = 0;
        long dropped = 0;
        Duration timeout = Duration.ofNanos((long) (options.timeoutSeconds() * 1e9));
        long start = System.nanoTime();
        long nanos = (long) (seconds * 1e9);
        double intended = start;
        for (long arrivals = 0; sent < options.maxRequests(); arrivals++) {
            intended = OpenLoop.next(intended, rate, random);
            if (intended - start >= nanos) {
                break;
            }
            long arrival = (long) intended;
            OpenLoop.await(arrival);
            if (outstanding.get() >= options.maxInFlight()) {
                dropped++;
                continue;
            }
            Body body = bodies.get((int) (arrivals % bodies.size()));
            HttpRequest.Builder request = HttpRequest.newBuilder(options.url()).timeout(timeout)
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body.bytes()));
            if (body.headerLength() != null) {
                request.header("Content-Type", "application/octet-stream")
                        .header(KServeProtocol.HEADER_LENGTH, body.headerLength());
            } else {
                request.header("Content-Type", "application/json");
            }
            outstanding.incrementAndGet();
            sent++;
            inFlight.add(client.sendAsync(request.build(), HttpResponse.BodyHandlers.discarding())
                    .whenComplete((response, failure) -> {
                        long now = System.nanoTime();
                        outstanding.decrementAndGet();
                        lastAnswer.accumulateAndGet(now, Math::max);
                        if (failure != null) {
                            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                                    ? failure.getCause() : failure;
                            if (cause instanceof HttpTimeoutException) {
                                timeouts.increment();
                            }
                            errors.increment();
                        } else if (response.statusCode() == 200) {
                            recorder.recordValue(Math.max(0, now - arrival));
                            ok.increment();
                        } else if (response.statusCode() == 503) {
                            unavailable.increment();
                        } else {
                            errors.increment();
                        }
                    }));
        }
        long waitUntil = System.nanoTime() + timeout.toNanos() + TimeUnit.SECONDS.toNanos(5);
        for (CompletableFuture<?> future : inFlight) {
            try {
                future.get(Math.max(1, waitUntil - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (Exception e) {
                // counted by the callback (or, past the bound, not answered: counted below)
            }
        }
        long unanswered = inFlight.stream().filter(f -> !f.isDone()).count();
        Histogram h = recorder.getIntervalHistogram();
        double elapsed = Math.max(seconds, (lastAnswer.get() - start) / 1e9);
        long okCount = ok.sum();
        double completed = okCount / elapsed;
        boolean sustained = sent > 0 && okCount == sent && dropped == 0 && unanswered == 0
                && completed >= SUSTAINED_SHARE * sent / seconds;
        Point point = new Point(rate, completed, sent, okCount, unavailable.sum(), errors.sum() + unanswered,
                timeouts.sum() + unanswered, dropped, micros(h, 50), micros(h, 90), micros(h, 99), micros(h, 99.9),
                h.getTotalCount() == 0 ? 0 : h.getMaxValue() / 1e3, h.getTotalCount() == 0 ? 0 : h.getMean() / 1e3,
                elapsed, recovery, sustained);
        return new Measured(point, h);
    }

    private static double micros(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? 0 : h.getValueAtPercentile(percentile) / 1e3;
    }

    /** A KServe v2 JSON request of {@code rows} random rows, each value with four decimals. */
    static byte[] body(int rows, int width, SplittableRandom random) {
        ObjectNode request = request(null, rows, width);
        ArrayNode data = ((ObjectNode) request.get("inputs").get(0)).putArray("data");
        for (int i = 0; i < rows * width; i++) {
            data.add(BigDecimal.valueOf(random.nextDouble() * 2 - 1).setScale(4, RoundingMode.HALF_UP));
        }
        return bytes(request);
    }

    /**
     * A KServe v2 JSON request of {@code rows} rows of {@code width} values, with an {@code id}
     * unless it is null; each value as {@link Float#toString} writes it, which reads back as the same float.
     */
    static byte[] jsonRequest(float[] values, int rows, int width, String id) {
        ObjectNode request = request(id, rows, width);
        ArrayNode data = ((ObjectNode) request.get("inputs").get(0)).putArray("data");
        for (float value : values) {
            data.add(value);
        }
        return bytes(request);
    }

    /** A request's JSON up to its one input's shape: {@code {"id":…,"inputs":[{"name":"input","datatype":"FP32","shape":[rows,width]}]}}. */
    private static ObjectNode request(String id, int rows, int width) {
        ObjectNode request = JSON.createObjectNode();
        if (id != null) {
            request.put("id", id);
        }
        ObjectNode input = request.putArray("inputs").addObject().put("name", "input").put("datatype", "FP32");
        input.putArray("shape").add(rows).add(width);
        return request;
    }

    private static byte[] bytes(ObjectNode json) {
        try {
            return JSON.writeValueAsBytes(json);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e); // a tree of numbers and strings always writes
        }
    }

    /** A KServe v2 request of {@code rows} random rows in binary tensor data, asking for binary output. */
    private static Body binaryBody(int rows, int width, SplittableRandom random) {
        float[] values = new float[rows * width];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextDouble() * 2 - 1);
        }
        return binaryRequest(values, rows, width, null);
    }

    /** The binary form of a request: the JSON header then the little-endian floats; binary output asked for. */
    static Body binaryRequest(float[] values, int rows, int width, String id) {
        ObjectNode request = request(id, rows, width);
        ((ObjectNode) request.get("inputs").get(0)).putObject("parameters")
                .put("binary_data_size", values.length * Float.BYTES);
        request.putArray("outputs").addObject().put("name", "output").putObject("parameters")
                .put("binary_data", true);
        byte[] header = bytes(request);
        ByteBuffer bytes = ByteBuffer.allocate(header.length + values.length * Float.BYTES)
                .order(ByteOrder.LITTLE_ENDIAN);
        bytes.put(header).asFloatBuffer().put(values);
        return new Body(bytes.array(), Integer.toString(header.length));
    }

    /** Writes each point's histogram: {@code dir/label.hlog} (all, tagged rate-N) and {@code dir/label-N.hgrm}. */
    static void writeHistograms(Path dir, String label, List<Measured> points) throws IOException {
        Files.createDirectories(dir);
        try (PrintStream log = new PrintStream(Files.newOutputStream(dir.resolve(label + ".hlog")), false,
                StandardCharsets.UTF_8)) {
            HistogramLogWriter writer = new HistogramLogWriter(log);
            writer.outputComment("HttpLoad " + label + ": latency in ns from each request's intended arrival");
            writer.outputLogFormatVersion();
            writer.outputLegend();
            for (Measured m : points) {
                Histogram h = m.histogram().copy();
                h.setTag("rate-" + m.point().offeredPerSecond() + (m.point().recovery() ? "-recovery" : ""));
                writer.outputIntervalHistogram(h);
            }
        }
        for (Measured m : points) {
            String name = label + "-" + m.point().offeredPerSecond() + (m.point().recovery() ? "-recovery" : "")
                    + ".hgrm";
            try (PrintStream out = new PrintStream(Files.newOutputStream(dir.resolve(name)), false,
                    StandardCharsets.UTF_8)) {
                m.histogram().outputPercentileDistribution(out, 5, 1000.0);
            }
        }
    }

    public static void main(String[] args) {
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line: a load against {@code --url}, or with {@code --write-body} one body for another client. */
    @Command(name = "HttpLoad", mixinStandardHelpOptions = true, sortOptions = false,
            description = "Open-loop Poisson load against a KServe v2 server, or (--write-body) one request body.")
    static final class Main implements Callable<Integer> {
        @Option(names = "--url", description = "the inference endpoint, e.g. http://127.0.0.1:18000/v2/models/mlp/infer")
        URI url;

        @Option(names = "--width", required = true, description = "floats per input row")
        int width;

        @Option(names = "--rates", split = ",", description = "offered requests/s (default: 500, 2000, 8000)")
        List<Integer> rates = List.of(500, 2000, 8000);

        @Option(names = "--seconds", description = "seconds per rate (default: ${DEFAULT-VALUE})")
        double seconds = 5;

        @Option(names = "--max-requests", description = "requests per rate at most (default: ${DEFAULT-VALUE})")
        long maxRequests = 200_000;

        @Option(names = "--rows", description = "rows per request: N, or A-B for uniform A to B (default: "
                + "${DEFAULT-VALUE})")
        String rows = "1";

        @Option(names = "--encoding", description = "json or binary (default: ${DEFAULT-VALUE})")
        String encoding = "json";

        @Option(names = "--timeout-seconds", description = "a request's timeout (default: ${DEFAULT-VALUE})")
        double timeoutSeconds = 10;

        @Option(names = "--max-in-flight", description = "requests outstanding at most (default: ${DEFAULT-VALUE})")
        int maxInFlight = 2048;

        @Option(names = "--warmup-seconds", description = "warm-up at the first rate (default: ${DEFAULT-VALUE})")
        double warmupSeconds = 0;

        @Option(names = "--stop-after-saturation", arity = "1", description = "stop the ladder at the first rate "
                + "not sustained: true or false (default: ${DEFAULT-VALUE})")
        boolean stopAfterSaturation;

        @Option(names = "--recovery", arity = "1", description = "run the lowest rate again at the end: true or false "
                + "(default: ${DEFAULT-VALUE})")
        boolean recovery;

        @Option(names = "--label", description = "names the points (default: ${DEFAULT-VALUE})")
        String label = "load";

        @Option(names = "--json", description = "write the points there")
        Path json;

        @Option(names = "--histograms", description = "write each point's histogram into that folder")
        Path histograms;

        @Option(names = "--write-body", description = "write one request body there, print its "
                + "Inference-Header-Content-Length, and exit")
        Path writeBody;

        @Override
        public Integer call() throws Exception {
            if (!encoding.equals("json") && !encoding.equals("binary")) {
                System.err.println("HttpLoad: --encoding is json or binary, not " + encoding);
                return 2;
            }
            String[] range = rows.split("-");
            int minRows;
            int maxRows;
            try {
                minRows = Integer.parseInt(range[0].strip());
                maxRows = Integer.parseInt(range[range.length - 1].strip());
            } catch (NumberFormatException e) {
                System.err.println("HttpLoad: --rows is N or A-B, not " + rows);
                return 2;
            }
            if (writeBody != null) {
                HttpLoad.writeBody(writeBody, width, minRows, encoding);
                return 0;
            }
            if (url == null) {
                System.err.println("HttpLoad: --url is needed, or --write-body (--help lists the options)");
                return 2;
            }
            Options options;
            try {
                options = new Options(url, width, rates, seconds, maxRequests, minRows, maxRows,
                        encoding.equals("binary"), timeoutSeconds, maxInFlight, warmupSeconds, stopAfterSaturation,
                        recovery);
            } catch (IllegalArgumentException e) {
                System.err.println("HttpLoad: " + e.getMessage());
                return 2;
            }
            Instant started = Instant.now();
            List<Measured> measured = measure(options);
            List<Point> points = measured.stream().map(Measured::point).toList();
            for (Point p : points) {
                System.out.printf(Locale.ROOT, "%s %8d/s offered%s  %10.1f/s ok  p50 %9.1f  p99 %9.1f  p99.9 %9.1f  "
                        + "max %9.1f µs  503s %d  errors %d (timeouts %d)  dropped %d  %s%n", label,
                        p.offeredPerSecond(), p.recovery() ? " (recovery)" : "", p.completedPerSecond(), p.p50Micros(),
                        p.p99Micros(), p.p999Micros(), p.maxMicros(), p.unavailable(), p.errors(), p.timeouts(),
                        p.dropped(), p.sustained() ? "sustained" : "NOT sustained");
            }
            if (histograms != null) {
                writeHistograms(histograms, label, measured);
            }
            if (json != null) {
                Map<String, Object> report = new LinkedHashMap<>();
                report.put("label", label);
                report.put("started", started.toString());
                report.put("options", options);
                report.put("points", points);
                JSON.enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), report);
            }
            return 0;
        }
    }

    /**
     * Writes one request body of {@code rows} random rows (for another client, such as wrk) and prints its
     * {@code Inference-Header-Content-Length}, or an empty line for JSON.
     */
    static void writeBody(Path file, int width, int rows, String encoding) throws IOException {
        SplittableRandom random = new SplittableRandom(42);
        Body body = switch (encoding) {
            case "json" -> new Body(body(rows, width, random), null);
            case "binary" -> binaryBody(rows, width, random);
            default -> throw new IllegalArgumentException("--encoding is json or binary, not " + encoding);
        };
        Files.write(file, body.bytes());
        System.out.println(body.headerLength() == null ? "" : body.headerLength());
    }
}
