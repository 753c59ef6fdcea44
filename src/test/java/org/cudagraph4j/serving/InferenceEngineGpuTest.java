package org.cudagraph4j.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.LogCapture;
import org.cudagraph4j.LongRunning;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The engine on the GPU: a two-layer MLP served to many threads, each answer checked against float64. */
@GpuTest
class InferenceEngineGpuTest {
    private static final int WIDTH = 64;
    private static final BucketLadder LADDER = BucketLadder.of(1, 2, 4, 8, 16, 32, 64);
    private static final int POOL_ROWS = 4096;
    private static CudaDevice device;
    private static ShippedKernels kernels;
    private static float[][] weights;
    private static float[][] biases;
    private static List<DeviceBuffer> buffers;
    private static float[] pool;
    private static double[] poolAnswers;

    @BeforeAll
    static void load() {
        device = TestData.device();
        kernels = ShippedKernels.load(device);
        long seed = TestData.newSeed();
        weights = new float[2][];
        biases = new float[2][];
        buffers = new ArrayList<>();
        for (int l = 0; l < 2; l++) {
            weights[l] = TestData.randomFloats(WIDTH * WIDTH, seed + 2 * l);
            for (int i = 0; i < weights[l].length; i++) {
                weights[l][i] /= 8; // keeps activations near 1 through the layers
            }
            biases[l] = TestData.randomFloats(WIDTH, seed + 2 * l + 1);
            buffers.add(TestData.upload(device, weights[l]));
            buffers.add(TestData.upload(device, biases[l]));
        }
        pool = TestData.randomFloats(POOL_ROWS * WIDTH, seed + 100);
        poolAnswers = reference(pool);
    }

    @AfterAll
    static void close() {
        buffers.forEach(DeviceBuffer::close);
        kernels.close();
    }

    private static LaneModel laneModel(CudaDevice laneDevice) {
        return laneModel(kernels, buffers);
    }

    /** The two-layer MLP on {@code on}, its weights and biases {@code w} as {@link #load()} lays them out. */
    private static LaneModel laneModel(ShippedKernels on, List<DeviceBuffer> w) {
        List<Linear> layers = List.of(new Linear(on, w.get(0), w.get(1), WIDTH, WIDTH),
                new Linear(on, w.get(2), w.get(3), WIDTH, WIDTH));
        return LaneModel.of(new Mlp(on, layers, LADDER.largest()), Linear.Mode.FUSED);
    }

    /** relu(relu(x W0ᵀ + b0) W1ᵀ + b1) in double, row by row. */
    private static double[] reference(float[] rows) {
        double[] current = new double[rows.length];
        for (int i = 0; i < rows.length; i++) {
            current[i] = rows[i];
        }
        for (int l = 0; l < 2; l++) {
            double[] next = new double[current.length];
            for (int r = 0; r < rows.length / WIDTH; r++) {
                for (int o = 0; o < WIDTH; o++) {
                    double sum = biases[l][o];
                    for (int i = 0; i < WIDTH; i++) {
                        sum += current[r * WIDTH + i] * weights[l][o * WIDTH + i];
                    }
                    next[r * WIDTH + o] = Math.max(sum, 0);
                }
            }
            current = next;
        }
        return current;
    }

    /**
     * 64 threads submit 1,000 requests each (20 under a sanitizer, which slows the GPU a hundredfold, and
     * 2 under racecheck, which slows the shared-memory kernels a thousandfold),
     * of 1 to 300 rows (above the ladder's largest bucket, a request is split), at most 16 in flight
     * per thread. Rows are drawn from a pool whose float64 answers are computed once, so that every
     * row of every answer is checked against its own reference: no cross-talk within a batch.
     */
    @ParameterizedTest
    @EnumSource(CapturePolicy.class)
    @LongRunning // 64,000 requests a policy: about 4 s each on an H200
    void manyThreadsGetTheirOwnRowsRightAcrossTheSwitchToGraphs(CapturePolicy policy) throws Exception {
        int threadCount = 64;
        int requestsPerThread = TestData.underRacecheck() ? 2 : TestData.underSanitizer() ? 20 : 1000;
        ServingOptions options = ServingOptions.defaults().withLadder(LADDER).withCapturePolicy(policy).withLanes(2)
                // Correctness only (deadlines have CPU tests): under racecheck, requests took longer
                // than the default 30 s deadline on the H200.
                .withRequestTimeout(Duration.ofMinutes(10));
        try (InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, InferenceEngineGpuTest::laneModel,
                options)) {
            if (policy == CapturePolicy.EAGER) {
                assertEquals(2 * LADDER.sizes().size(), engine.captureReports().size());
            }
            loadFromThreads(engine, threadCount, requestsPerThread, 300);
            EngineMetrics metrics = engine.metrics();
            assertEquals((long) threadCount * requestsPerThread, metrics.completed());
            assertEquals(Map.of(device.ordinal(), metrics.batches()), metrics.batchesPerDevice());
            assertEquals(Map.of(device.ordinal(), metrics.rows()), metrics.rowsPerDevice());
            if (policy == CapturePolicy.EAGER) {
                assertEquals(metrics.batches(), metrics.graphLaunches(), metrics.toString());
            }
        }
    }

    /**
     * {@code threads} virtual threads submit {@code requestsPerThread} requests each, of 1 to
     * {@code maxRows} rows drawn from the pool, every other one in the server's byte form, at most 16
     * in flight per thread; every row of every answer must match its reference.
     */
    private static void loadFromThreads(InferenceEngine engine, int threads, int requestsPerThread, int maxRows)
            throws InterruptedException {
        List<Thread> started = new ArrayList<>();
        List<String> wrong = Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < threads; t++) {
            int thread = t;
            started.add(Thread.ofVirtual().start(() -> {
                SplittableRandom random = new SplittableRandom(thread);
                ArrayDeque<Request> inFlight = new ArrayDeque<>();
                for (int r = 0; r < requestsPerThread; r++) {
                    int[] rows = random.ints(random.nextInt(1, maxRows + 1), 0, POOL_ROWS).toArray();
                    inFlight.add(new Request(r, rows, r % 2 == 0 ? engine.submit(poolRows(rows))
                            : intoBytes(engine, poolRows(rows))));
                    if (inFlight.size() == 16 || r == requestsPerThread - 1) {
                        while (!inFlight.isEmpty()) {
                            check(inFlight.poll(), thread, wrong);
                        }
                    }
                }
            }));
        }
        for (Thread thread : started) {
            thread.join();
        }
        assertTrue(wrong.isEmpty(), () -> wrong.size() + " wrong, first: " + wrong.getFirst());
    }

    private record Request(int index, int[] poolRows, CompletableFuture<float[]> answer) {}

    /**
     * The server's way: rows at an offset of a byte array (a request body), the answer written
     * into a NaN-poisoned byte array (a response body) at an offset, read back as floats.
     */
    private static CompletableFuture<float[]> intoBytes(InferenceEngine engine, float[] rows) {
        MemorySegment body = MemorySegment.ofArray(new byte[3 + rows.length * Float.BYTES]).asSlice(3);
        MemorySegment.copy(rows, 0, body, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, rows.length);
        MemorySegment response = MemorySegment.ofArray(new byte[5 + rows.length * Float.BYTES]).asSlice(5);
        for (long at = 0; at < response.byteSize(); at += Float.BYTES) {
            response.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, Float.NaN);
        }
        return engine.submit(body, response).thenApply(answer -> answer.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED));
    }

    /**
     * An engine over every GPU of the host (two at least), each lane's model on its own
     * device's kernels and weights: every device runs batches, and every row of every answer is
     * right, whichever device computed it.
     */
    @Test
    void anEngineOverEveryGpuRunsBatchesOnEachAndAnswersRight() throws Exception {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        Map<CudaDevice, ShippedKernels> kernelsOn = new HashMap<>();
        Map<CudaDevice, List<DeviceBuffer>> weightsOn = new HashMap<>();
        try {
            for (CudaDevice gpu : devices) {
                kernelsOn.put(gpu, ShippedKernels.load(gpu)); // per device: it sets per-device kernel attributes
                List<DeviceBuffer> uploaded = new ArrayList<>();
                weightsOn.put(gpu, uploaded);
                for (int l = 0; l < 2; l++) {
                    uploaded.add(TestData.upload(gpu, weights[l]));
                    uploaded.add(TestData.upload(gpu, biases[l]));
                }
            }
            LaneModel.Factory models = gpu -> laneModel(kernelsOn.get(gpu), weightsOn.get(gpu));
            ServingOptions options = ServingOptions.defaults().withLadder(LADDER).withLanes(2)
                    .withMaxWait(Duration.ofNanos(100_000)).withRequestTimeout(Duration.ofMinutes(10));
            try (InferenceEngine engine = InferenceEngine.start(devices, WIDTH, WIDTH, models, options)) {
                loadFromThreads(engine, 16, TestData.underSanitizer() ? 20 : 500, 100);
                EngineMetrics metrics = engine.metrics();
                assertEquals(devices.stream().map(CudaDevice::ordinal).toList(),
                        List.copyOf(metrics.batchesPerDevice().keySet()));
                assertTrue(metrics.batchesPerDevice().values().stream().allMatch(n -> n > 0),
                        "every device ran batches: " + metrics.batchesPerDevice());
                assertEquals(metrics.rows(), metrics.rowsPerDevice().values().stream().mapToLong(n -> n).sum());
            }
        } finally {
            weightsOn.values().forEach(uploaded -> uploaded.forEach(DeviceBuffer::close));
            kernelsOn.values().forEach(ShippedKernels::close);
        }
    }

    private static float[] poolRows(int[] rows) {
        float[] input = new float[rows.length * WIDTH];
        for (int r = 0; r < rows.length; r++) {
            System.arraycopy(pool, rows[r] * WIDTH, input, r * WIDTH, WIDTH);
        }
        return input;
    }

    private static void check(Request request, int thread, List<String> wrong) {
        float[] answer;
        try {
            answer = request.answer().get(11, TimeUnit.MINUTES);
        } catch (Exception e) {
            wrong.add("thread " + thread + " request " + request.index() + ": " + e);
            return;
        }
        for (int r = 0; r < request.poolRows().length; r++) {
            double error = 0;
            double norm = 0;
            for (int i = 0; i < WIDTH; i++) {
                double expected = poolAnswers[request.poolRows()[r] * WIDTH + i];
                error += (answer[r * WIDTH + i] - expected) * (answer[r * WIDTH + i] - expected);
                norm += expected * expected;
            }
            if (!(Math.sqrt(error / Math.max(norm, 1e-30)) < 1e-5)) {
                wrong.add("thread " + thread + " request " + request.index() + " row " + r + ": relative error "
                        + Math.sqrt(error / Math.max(norm, 1e-30)));
                return;
            }
        }
    }

    @Test
    void aSecondStartLoadsEveryBucketFromItsArchiveAndAnswersTheSame(@TempDir Path dir) throws Exception {
        ServingOptions options = ServingOptions.defaults().withLadder(LADDER).withLanes(2).withGraphArchives(dir);
        float[] input = TestData.randomFloats(37 * WIDTH, TestData.newSeed());
        float[] first;
        try (InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, InferenceEngineGpuTest::laneModel,
                options)) {
            // With no archive yet, every bucket is captured by some lane; another lane may then load
            // the archive that one saved, which is what archives are for.
            for (int bucket : LADDER.sizes()) {
                assertTrue(engine.captureReports().stream().anyMatch(r -> r.bucket() == bucket && !r.fromArchive()),
                        "bucket " + bucket + " was captured: " + engine.captureReports());
            }
            first = engine.submit(input).get(1, TimeUnit.MINUTES);
        }
        for (int bucket : LADDER.sizes()) {
            assertTrue(Files.isRegularFile(dir.resolve("bucket-" + bucket + ".cg4j")), "bucket " + bucket);
        }
        try (InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, InferenceEngineGpuTest::laneModel,
                options)) {
            List<CaptureReport> reports = engine.captureReports();
            assertEquals(2 * LADDER.sizes().size(), reports.size());
            assertTrue(reports.stream().allMatch(CaptureReport::fromArchive), reports.toString());
            float[] second = engine.submit(input).get(1, TimeUnit.MINUTES);
            assertArrayEquals(first, second, "the loaded graphs compute what the captured ones did");
            double[] expected = reference(input);
            for (int i = 0; i < expected.length; i++) {
                assertEquals(expected[i], second[i], 1e-4 * (1 + Math.abs(expected[i])), "element " + i);
            }
        }
    }

    @Test
    void anArchiveThatNoLongerFitsIsCapturedAgain(@TempDir Path dir) throws Exception {
        Files.write(dir.resolve("bucket-4.cg4j"), new byte[] {'n', 'o', 't', ' ', 'o', 'n', 'e'});
        ServingOptions options = ServingOptions.defaults().withLadder(LADDER).withLanes(1).withGraphArchives(dir);
        try (LogCapture log = LogCapture.of(InferenceEngine.class.getName());
                InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, InferenceEngineGpuTest::laneModel,
                        options)) {
            assertTrue(engine.captureReports().stream().noneMatch(CaptureReport::fromArchive));
            LogCapture.Warning warning = log.onlyWarning();
            assertEquals(System.Logger.Level.WARNING, warning.level());
            String refused = "lane 0, bucket 4: " + dir.resolve("bucket-4.cg4j") + " cannot be used (";
            assertTrue(warning.message().startsWith(refused)
                    && warning.message().endsWith("); capturing the bucket again"), warning.message());
            float[] rows = TestData.randomFloats(3 * WIDTH, TestData.newSeed());
            float[] answer = engine.submit(rows).get(1, TimeUnit.MINUTES);
            double[] expected = reference(rows);
            for (int i = 0; i < expected.length; i++) {
                assertEquals(expected[i], answer[i], 1e-4 * (1 + Math.abs(expected[i])), "element " + i);
            }
        }
        assertTrue(GraphArchive.read(dir.resolve("bucket-4.cg4j")).nodeCount() > 0, "replaced by a real archive");
    }
}
