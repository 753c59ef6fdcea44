package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
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
import org.cudagraph4j.benchmarks.OpenLoop;

/**
 * An open-loop HTTP load generator for any Open Inference Protocol server on loopback (the Java
 * server here, or the PyTorch twin): Poisson arrivals at each offered rate, latency from each
 * request's intended arrival (so a stalled server cannot hide its queueing), HdrHistogram. Every
 * run is bounded in time and in requests, and stops by itself.
 *
 * <pre>
 *   HttpLoad --url http://127.0.0.1:8000/v2/models/mlp/infer --width 512 [--rates 500,2000,8000]
 *            [--seconds 5] [--max-requests 200000] [--rows 1|1-64] [--json load.json]
 * </pre>
 */
public final class HttpLoad {
    /** One offered rate's outcome. */
    public record Point(int offeredPerSecond, double completedPerSecond, long ok, long unavailable, long errors,
            double p50Micros, double p99Micros, double p999Micros, double maxMicros) {}

    /** What to send, how fast and for how long. */
    public record Options(URI url, int width, List<Integer> rates, double seconds, long maxRequests, int minRows,
            int maxRows) {}

    private static final ObjectMapper JSON = new ObjectMapper();

    private HttpLoad() {}

    /**
     * Runs every rate in turn.
     *
     * @param options what to send
     * @return one point per rate
     * @throws InterruptedException if interrupted while waiting for answers
     */
    public static List<Point> run(Options options) throws InterruptedException {
        HttpClient client = HttpClient.newBuilder().executor(java.util.concurrent.Executors
                .newVirtualThreadPerTaskExecutor()).connectTimeout(Duration.ofSeconds(5)).build();
        SplittableRandom random = new SplittableRandom(42);
        List<byte[]> bodies = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            bodies.add(body(random.nextInt(options.minRows(), options.maxRows() + 1), options.width(), random));
        }
        List<Point> points = new ArrayList<>();
        for (int rate : options.rates()) {
            points.add(runAt(client, options, rate, bodies, random));
        }
        return points;
    }

    private static Point runAt(HttpClient client, Options options, int rate, List<byte[]> bodies,
            SplittableRandom random) throws InterruptedException {
        Recorder recorder = new Recorder(TimeUnit.SECONDS.toNanos(60), 3);
        LongAdder ok = new LongAdder();
        LongAdder unavailable = new LongAdder();
        LongAdder errors = new LongAdder();
        List<CompletableFuture<?>> inFlight = new ArrayList<>();
        long start = System.nanoTime();
        long nanos = (long) (options.seconds() * 1e9);
        double intended = start;
        for (long sent = 0; sent < options.maxRequests(); sent++) {
            intended = OpenLoop.next(intended, rate, random);
            if (intended - start >= nanos) {
                break;
            }
            long arrival = (long) intended;
            OpenLoop.await(arrival);
            HttpRequest request = HttpRequest.newBuilder(options.url()).timeout(Duration.ofSeconds(30))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(bodies.get((int) (sent % bodies.size())))).build();
            inFlight.add(client.sendAsync(request, HttpResponse.BodyHandlers.discarding()).whenComplete((response,
                    failure) -> {
                if (failure != null) {
                    errors.increment();
                } else if (response.statusCode() == 200) {
                    recorder.recordValue(Math.max(0, System.nanoTime() - arrival));
                    ok.increment();
                } else if (response.statusCode() == 503) {
                    unavailable.increment();
                } else {
                    errors.increment();
                }
            }));
        }
        for (CompletableFuture<?> future : inFlight) {
            try {
                future.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                // counted by the callback
            }
        }
        Histogram h = recorder.getIntervalHistogram();
        return new Point(rate, ok.sum() / options.seconds(), ok.sum(), unavailable.sum(), errors.sum(),
                h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3,
                h.getMaxValue() / 1e3);
    }

    /** A KServe v2 JSON request of {@code rows} random rows. */
    static byte[] body(int rows, int width, SplittableRandom random) {
        StringBuilder json = new StringBuilder("{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[")
                .append(rows).append(',').append(width).append("],\"data\":[");
        for (int i = 0; i < rows * width; i++) {
            json.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.4f", random.nextDouble() * 2 - 1));
        }
        return json.append("]}]}").toString().getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> given = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            given.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        if (!given.containsKey("url") || !given.containsKey("width")) {
            System.err.println("usage: HttpLoad --url URL --width W [--rates r1,r2] [--seconds S] [--max-requests N]"
                    + " [--rows N|A-B] [--json FILE]");
            System.exit(2);
        }
        String[] rows = given.getOrDefault("rows", "1").split("-");
        Options options = new Options(URI.create(given.get("url")), Integer.parseInt(given.get("width")),
                Arrays.stream(given.getOrDefault("rates", "500,2000,8000").split(",")).map(Integer::parseInt).toList(),
                Double.parseDouble(given.getOrDefault("seconds", "5")),
                Long.parseLong(given.getOrDefault("max-requests", "200000")), Integer.parseInt(rows[0]),
                Integer.parseInt(rows[rows.length - 1]));
        List<Point> points = run(options);
        for (Point p : points) {
            System.out.printf(Locale.ROOT, "%8d/s offered  %10.1f/s ok  p50 %9.1f  p99 %9.1f  p99.9 %9.1f  max %9.1f µs"
                    + "  503s %d  errors %d%n", p.offeredPerSecond(), p.completedPerSecond(), p.p50Micros(),
                    p.p99Micros(), p.p999Micros(), p.maxMicros(), p.unavailable(), p.errors());
        }
        if (given.containsKey("json")) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("options", options);
            report.put("points", points);
            JSON.enable(SerializationFeature.INDENT_OUTPUT).writeValue(Path.of(given.get("json")).toFile(), report);
        }
    }
}
