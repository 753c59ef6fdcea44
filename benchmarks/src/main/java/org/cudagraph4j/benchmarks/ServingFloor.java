package org.cudagraph4j.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.benchmarks.server.CrossCheck;
import org.cudagraph4j.benchmarks.server.MlpWeights;
import org.cudagraph4j.benchmarks.server.ReplicatedMlp;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;
import org.cudagraph4j.serving.ServingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The serving engine beside the floor under it, in one process on one GPU with one model: a
 * {@code layers}-deep {@code Linear(width, width)} + ReLU MLP of fixed random weights.
 *
 * <p>Latency, closed loop, one client, one row per request, every answer checked against the model
 * on the CPU:
 * <ul>
 *   <li>{@code floor}: one thread copies the row into pinned memory, queues the host-to-device
 *       copy, the bucket-1 graph and the device-to-host copy, waits with
 *       {@code cudaStreamSynchronize} and copies the answer out: no queue, no other thread;
 *   <li>{@code floor-query}: the same, waiting by polling {@code cudaStreamQuery};
 *   <li>{@code engine}: {@code InferenceEngine.submit(row).join()} with the default options;
 *   <li>{@code engine-no-spin}: the same with {@code withIdleSpin(Duration.ZERO)}: every request
 *       wakes a parked lane;
 *   <li>{@code engine-wait-200us}: the same with {@code withMaxWait(200 µs)}, the batching wait that
 *       was the default before batching became work-conserving.
 * </ul>
 * The paths take turns, {@code --rounds} times, so that drift in the machine falls on all alike.
 *
 * <p>Throughput at saturation, rows per second: {@code gpu-bound} replays the largest bucket's
 * graph back to back on one thread with its copies (what the GPU allows without overlap), and each
 * engine policy serves {@code --clients} threads that keep {@code --window} requests of 1 to 64
 * rows each in flight.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.ServingLoad --floor \
 *       [--requests 20000] [--rounds 5] [--seconds 5] [--clients 16] [--window 16] [--json floor.json]
 * </pre>
 * Without a GPU it prints one line and exits 2; a wrong answer exits 1.
 */
@Command(name = "ServingLoad --floor", mixinStandardHelpOptions = true, sortOptions = false,
        description = "The serving engine beside the floor: closed-loop one-row latency and saturation throughput.")
public final class ServingFloor implements Callable<Integer> {
    private static final double TOLERANCE = 1e-4;
    private static final int MAX_REQUEST_ROWS = 64;

    @Option(names = "--width", description = "floats per row (default: ${DEFAULT-VALUE})")
    int width = 512;

    @Option(names = "--layers", description = "Linear + ReLU layers (default: ${DEFAULT-VALUE})")
    int layers = 16;

    @Option(names = "--requests", description = "closed-loop requests per path and round (default: ${DEFAULT-VALUE})")
    int requests = 20_000;

    @Option(names = "--rounds", description = "turns each latency path takes (default: ${DEFAULT-VALUE})")
    int rounds = 5;

    @Option(names = "--seconds", description = "seconds per throughput point (default: ${DEFAULT-VALUE})")
    double seconds = 5;

    @Option(names = "--clients", description = "threads of the throughput points (default: ${DEFAULT-VALUE})")
    int clients = 16;

    @Option(names = "--window", description = "requests each client keeps in flight (default: ${DEFAULT-VALUE})")
    int window = 16;

    @Option(names = "--json", description = "write the results there")
    Path json;

    /** One latency path's result. */
    record Latency(String path, long requests, double p50Micros, double p90Micros, double p99Micros,
            double p999Micros, double maxMicros, double meanMicros) {}

    /** One throughput point's result. */
    record Throughput(String path, double rowsPerSecond, double requestsPerSecond, long wrong, long failed) {}

    /** A closed-loop path: serves {@code row} and returns its answer. */
    @FunctionalInterface
    private interface OneRow {
        float[] serve(float[] row);
    }

    /** Fixed random request rows and the model's answers to them on the CPU. */
    private record Pool(List<float[]> inputs, List<float[]> answers) {}

    public static void main(String[] args) {
        System.exit(Cli.execute(new ServingFloor(), args));
    }

    @Override
    public Integer call() throws Exception {
        if (width < 1 || layers < 1 || requests < 1 || rounds < 1 || !(seconds > 0) || clients < 1 || window < 1) {
            System.err.println("ServingLoad --floor: every number must be positive");
            return 2;
        }
        CudaDevice device;
        try {
            List<CudaDevice> devices = Cuda.devices();
            if (devices.isEmpty()) {
                System.err.println("ServingLoad --floor: needs a CUDA GPU: "
                        + Cuda.unavailableReason().orElse("no CUDA device is present"));
                return 2;
            }
            device = devices.getFirst();
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("ServingLoad --floor: needs a CUDA GPU: "
                    + e.getMessage().lines().findFirst().orElse(""));
            return 2;
        }
        MlpWeights model = MlpWeights.random(width, layers, 42);
        Pool pool = pool(model, new SplittableRandom(43));
        List<Latency> latencies;
        List<Throughput> throughputs = new ArrayList<>();
        ServingOptions defaults = ServingOptions.defaults();
        Map<String, ServingOptions> policies = new LinkedHashMap<>();
        policies.put("engine", defaults);
        policies.put("engine-no-spin", defaults.withIdleSpin(Duration.ZERO));
        policies.put("engine-wait-200us", defaults.withMaxWait(Duration.ofNanos(200_000)));
        int largest = defaults.ladder().largest();
        try (ReplicatedMlp mlp = new ReplicatedMlp(List.of(device), model);
                Floor floor = new Floor(device, mlp.lanes(largest).create(device), width, largest)) {
            Map<String, OneRow> paths = new LinkedHashMap<>();
            paths.put("floor", row -> floor.serve(row, false));
            paths.put("floor-query", row -> floor.serve(row, true));
            List<InferenceEngine> engines = new ArrayList<>();
            try {
                for (Map.Entry<String, ServingOptions> policy : policies.entrySet()) {
                    InferenceEngine engine = InferenceEngine.start(device, width, width, mlp.lanes(largest),
                            policy.getValue());
                    engines.add(engine);
                    paths.put(policy.getKey(), row -> engine.submit(row).join());
                }
                latencies = latency(paths, pool);
                throughputs.add(floor.saturate(pool, seconds));
                for (int i = 0; i < engines.size(); i++) {
                    throughputs.add(saturate(List.copyOf(policies.keySet()).get(i), engines.get(i), pool));
                }
            } finally {
                engines.forEach(InferenceEngine::close);
            }
        }
        String name = device.properties().name();
        System.out.print(report(name, latencies, throughputs));
        if (json != null) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("device", name);
            out.put("width", width);
            out.put("layers", layers);
            out.put("requestsPerPathAndRound", requests);
            out.put("rounds", rounds);
            out.put("throughputSecondsPerPoint", seconds);
            out.put("throughputClients", clients);
            out.put("throughputWindow", window);
            out.put("latency", latencies);
            out.put("throughput", throughputs);
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), out);
        }
        boolean wrong = throughputs.stream().anyMatch(t -> t.wrong() > 0 || t.failed() > 0);
        return wrong ? 1 : 0;
    }

    private Pool pool(MlpWeights model, SplittableRandom random) {
        List<float[]> inputs = new ArrayList<>();
        List<float[]> answers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            float[] rows = new float[MAX_REQUEST_ROWS * width];
            for (int j = 0; j < rows.length; j++) {
                rows[j] = (float) (random.nextDouble() * 2 - 1);
            }
            inputs.add(rows);
            answers.add(model.forward(rows));
        }
        return new Pool(List.copyOf(inputs), List.copyOf(answers));
    }

    /** Each path's closed-loop latency, the paths taking turns; an answer off the model's stops the run. */
    private List<Latency> latency(Map<String, OneRow> paths, Pool pool) {
        Map<String, Histogram> histograms = new LinkedHashMap<>();
        paths.keySet().forEach(path -> histograms.put(path, new Histogram(TimeUnit.SECONDS.toNanos(10), 3)));
        int rowsInPool = pool.inputs().size() * MAX_REQUEST_ROWS;
        float[][] rows = new float[rowsInPool][];
        float[][] answers = new float[rowsInPool][];
        for (int r = 0; r < rowsInPool; r++) {
            int set = r / MAX_REQUEST_ROWS;
            int at = r % MAX_REQUEST_ROWS * width;
            rows[r] = Arrays.copyOfRange(pool.inputs().get(set), at, at + width);
            answers[r] = Arrays.copyOfRange(pool.answers().get(set), at, at + width);
        }
        for (int round = 0; round <= rounds; round++) { // round 0 warms every path up and is not kept
            for (Map.Entry<String, OneRow> path : paths.entrySet()) {
                Histogram histogram = histograms.get(path.getKey());
                int count = round == 0 ? Math.max(2_000, requests / 5) : requests;
                for (int i = 0; i < count; i++) {
                    int r = i % rowsInPool;
                    long start = System.nanoTime();
                    float[] answer = path.getValue().serve(rows[r]);
                    long took = System.nanoTime() - start;
                    if (round > 0) {
                        histogram.recordValue(took);
                    }
                    if (i % 97 == 0) { // the check costs µs: a sample of the answers, every path alike
                        check(path.getKey(), answer, answers[r]);
                    }
                }
            }
        }
        List<Latency> results = new ArrayList<>();
        histograms.forEach((path, h) -> results.add(new Latency(path, h.getTotalCount(),
                h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(90) / 1e3, h.getValueAtPercentile(99) / 1e3,
                h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3, h.getMean() / 1e3)));
        return results;
    }

    private static void check(String path, float[] answer, float[] expected) {
        double error = CrossCheck.relativeError(answer, expected);
        if (!(error <= TOLERANCE)) {
            throw new IllegalStateException(path + ": an answer differs from the model on the CPU: relative error "
                    + error);
        }
    }

    /** {@code clients} threads, each with {@code window} requests of 1 to 64 rows in flight, every answer checked. */
    private Throughput saturate(String path, InferenceEngine engine, Pool pool) throws InterruptedException {
        LongAdder rows = new LongAdder();
        LongAdder served = new LongAdder();
        LongAdder wrong = new LongAdder();
        LongAdder failed = new LongAdder();
        AtomicReference<String> firstWrong = new AtomicReference<>();
        AtomicLong measuring = new AtomicLong(); // 0 while warming up, then the start of the measured window
        long warmup = TimeUnit.SECONDS.toNanos(1);
        long end = System.nanoTime() + warmup + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            SplittableRandom random = new SplittableRandom(100 + c);
            threads.add(Thread.ofPlatform().name("saturate-" + c).start(() -> {
                Semaphore inFlight = new Semaphore(window);
                while (System.nanoTime() < end) {
                    inFlight.acquireUninterruptibly();
                    int set = random.nextInt(pool.inputs().size());
                    int count = random.nextInt(1, MAX_REQUEST_ROWS + 1);
                    float[] input = pool.inputs().get(set);
                    float[] expected = pool.answers().get(set);
                    CompletableFuture<float[]> answer = engine.submit(
                            MemorySegment.ofArray(input).asSlice(0, (long) Float.BYTES * count * width));
                    answer.whenComplete((out, failure) -> {
                        inFlight.release();
                        if (failure != null) {
                            failed.increment();
                            return;
                        }
                        if (!matches(out, expected, count * width)) {
                            wrong.increment();
                            firstWrong.compareAndSet(null, path + ": a " + count + "-row answer differs from the "
                                    + "model on the CPU");
                        }
                        if (measuring.get() != 0) {
                            rows.add(count);
                            served.increment();
                        }
                    });
                }
                inFlight.acquireUninterruptibly(window); // every answer is in
            }));
        }
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(warmup));
        long start = System.nanoTime();
        measuring.set(start);
        for (Thread thread : threads) {
            thread.join();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        if (firstWrong.get() != null) {
            System.err.println("ServingLoad --floor: " + firstWrong.get());
        }
        return new Throughput(path, rows.sum() / elapsed, served.sum() / elapsed, wrong.sum(), failed.sum());
    }

    private static boolean matches(float[] answer, float[] expected, int floats) {
        double worst = 0;
        double scale = 0;
        for (int i = 0; i < floats; i++) {
            worst = Math.max(worst, Math.abs(answer[i] - expected[i]));
            scale = Math.max(scale, Math.abs(expected[i]));
        }
        return answer.length == floats && worst <= TOLERANCE * Math.max(scale, 1e-30);
    }

    private String report(String device, List<Latency> latencies, List<Throughput> throughputs) {
        StringBuilder text = new StringBuilder(String.format(Locale.ROOT,
                "%s, %d x (Linear(%d, %d) + ReLU): closed loop, one client, one row per request, %d requests per "
                        + "path in %d rounds%n", device, layers, width, width, (long) requests * rounds, rounds));
        Latency floor = latencies.getFirst();
        text.append(String.format(Locale.ROOT, "%-20s %9s %9s %9s %9s %9s %12s %12s%n", "path", "p50 µs", "p90 µs",
                "p99 µs", "p99.9 µs", "mean µs", "p50 - floor", "p99 / floor"));
        for (Latency l : latencies) {
            text.append(String.format(Locale.ROOT, "%-20s %9.1f %9.1f %9.1f %9.1f %9.1f %+12.1f %12.2f%n", l.path(),
                    l.p50Micros(), l.p90Micros(), l.p99Micros(), l.p999Micros(), l.meanMicros(),
                    l.p50Micros() - floor.p50Micros(), l.p99Micros() / floor.p99Micros()));
        }
        text.append(String.format(Locale.ROOT, "saturation: %d clients x %d requests in flight, 1-%d rows each, "
                + "%.1f s per point%n", clients, window, MAX_REQUEST_ROWS, seconds));
        Throughput bound = throughputs.getFirst();
        text.append(String.format(Locale.ROOT, "%-20s %14s %14s %10s %7s %7s%n", "path", "rows/s", "requests/s",
                "of bound", "wrong", "failed"));
        for (Throughput t : throughputs) {
            text.append(String.format(Locale.ROOT, "%-20s %14.0f %14.0f %10.3f %7d %7d%n", t.path(),
                    t.rowsPerSecond(), t.requestsPerSecond(), t.rowsPerSecond() / bound.rowsPerSecond(), t.wrong(),
                    t.failed()));
        }
        return text.toString();
    }

    /** The floor: one stream, pinned staging and a graph for one row and for the largest bucket. */
    private static final class Floor implements AutoCloseable {
        private final int width;
        private final int largest;
        private final LaneModel model;
        private final CudaStream stream;
        private final PinnedBuffer stagedIn;
        private final PinnedBuffer stagedOut;
        private final DeviceBuffer in;
        private final DeviceBuffer out;
        private final GraphExec one;
        private final GraphExec full;

        Floor(CudaDevice device, LaneModel model, int width, int largest) {
            this.width = width;
            this.largest = largest;
            this.model = model;
            this.stream = device.createStream();
            this.stagedIn = Cuda.allocatePinned((long) Float.BYTES * largest * width);
            this.stagedOut = Cuda.allocatePinned((long) Float.BYTES * largest * width);
            this.in = device.allocateFloats((long) largest * width);
            this.out = device.allocateFloats((long) largest * width);
            this.one = capture(1);
            this.full = capture(largest);
        }

        private GraphExec capture(int rows) {
            DeviceBuffer i = in.slice(0, (long) rows * width);
            DeviceBuffer o = out.slice(0, (long) rows * width);
            i.memsetAsync(0, stream);
            model.forward(stream, rows, i, o); // warm-up: modules load outside the capture
            stream.synchronize();
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.RELAXED)) {
                model.forward(stream, rows, i, o);
                graph = capture.end();
            }
            try (graph) {
                return graph.instantiate();
            }
        }

        float[] serve(float[] row, boolean query) {
            MemorySegment staged = stagedIn.segment();
            MemorySegment.copy(row, 0, staged, ValueLayout.JAVA_FLOAT, 0, width);
            long bytes = (long) Float.BYTES * width;
            in.slice(0, width).copyFromAsync(staged.asSlice(0, bytes), stream);
            one.launch(stream);
            out.slice(0, width).copyToAsync(stagedOut.segment().asSlice(0, bytes), stream);
            if (query) {
                while (!stream.isIdle()) {
                    Thread.onSpinWait();
                }
            } else {
                stream.synchronize();
            }
            return stagedOut.segment().asSlice(0, bytes).toArray(ValueLayout.JAVA_FLOAT);
        }

        /** The largest bucket back to back with its copies, from the pool's rows; its answers checked. */
        Throughput saturate(Pool pool, double seconds) {
            long bytes = (long) Float.BYTES * largest * width;
            long rowsRun = 0;
            long batches = 0;
            long wrong = 0;
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            while (System.nanoTime() < end) {
                int set = (int) (batches % pool.inputs().size());
                for (int r = 0; r < largest; r += MAX_REQUEST_ROWS) { // the pool's rows, four times over
                    MemorySegment.copy(pool.inputs().get(set), 0, stagedIn.segment(), ValueLayout.JAVA_FLOAT,
                            (long) Float.BYTES * r * width, Math.min(MAX_REQUEST_ROWS, largest - r) * width);
                }
                in.copyFromAsync(stagedIn.segment().asSlice(0, bytes), stream);
                full.launch(stream);
                out.copyToAsync(stagedOut.segment().asSlice(0, bytes), stream);
                stream.synchronize();
                float[] answer = stagedOut.segment().asSlice(0, (long) Float.BYTES * MAX_REQUEST_ROWS * width)
                        .toArray(ValueLayout.JAVA_FLOAT);
                if (!matches(answer, pool.answers().get(set), MAX_REQUEST_ROWS * width)) {
                    wrong++;
                }
                rowsRun += largest;
                batches++;
            }
            double elapsed = (System.nanoTime() - start) / 1e9;
            return new Throughput("gpu-bound", rowsRun / elapsed, batches / elapsed, wrong, 0);
        }

        @Override
        public void close() {
            one.close();
            full.close();
            in.close();
            out.close();
            stagedIn.close();
            stagedOut.close();
            stream.close();
            model.close();
        }
    }
}
