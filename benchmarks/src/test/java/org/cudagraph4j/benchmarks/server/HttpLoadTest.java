package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The load generator against the server on the CPU backend: short, bounded runs. */
class HttpLoadTest {
    private static URI url(InferenceServer server) {
        return URI.create("http://127.0.0.1:" + server.port() + "/v2/models/mlp/infer");
    }

    @Test
    void aBoundedOpenLoopRunAnswersEveryRequestAndReportsPercentiles() throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MlpWeights.random(8, 2, 3)), 0,
                ServerLimits.defaults().withMaxBodyBytes(1 << 20))) {
            HttpLoad.Options options = new HttpLoad.Options(url(server), 8, List.of(200, 400), 0.5, 150, 1, 4);
            List<HttpLoad.Point> points = HttpLoad.run(options);
            assertEquals(2, points.size());
            for (HttpLoad.Point point : points) {
                assertEquals(0, point.errors(), point.toString());
                assertEquals(0, point.unavailable(), point.toString());
                assertTrue(point.ok() > 0 && point.ok() <= 150, "bounded in requests: " + point);
                assertEquals(point.sent(), point.ok(), point.toString());
                assertTrue(point.p50Micros() > 0 && point.p99Micros() >= point.p50Micros(), point.toString());
                assertFalse(point.recovery());
            }
        }
    }

    @Test
    void binaryBodiesAreServedToo(@TempDir Path dir) throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MlpWeights.random(8, 2, 3)), 0,
                ServerLimits.defaults().withMaxBodyBytes(1 << 20))) {
            HttpLoad.Options options = new HttpLoad.Options(url(server), 8, List.of(100), 0.5, 1000, 1, 64, true, 5,
                    64, 0.2, false, false);
            List<HttpLoad.Measured> measured = HttpLoad.measure(options);
            HttpLoad.Point point = measured.getFirst().point();
            // Answers, not pace: whether a point keeps up is the saturation test's business, and a
            // busy build machine (JIT warm-up within the 0.2 s warm-up) can slow this one.
            assertEquals(0, point.errors(), point.toString());
            assertTrue(point.ok() > 10, point.toString());
            assertEquals(point.sent(), point.ok(), point.toString());
            HttpLoad.writeHistograms(dir, "java-mix", measured);
            assertTrue(Files.readString(dir.resolve("java-mix-100.hgrm")).contains("#[Mean"));
            HistogramLogReader reader = new HistogramLogReader(dir.resolve("java-mix.hlog").toFile());
            EncodableHistogram histogram = reader.nextIntervalHistogram();
            assertEquals("rate-100", histogram.getTag());
        }
    }

    /** Serves one request at a time, 10 ms each, with room for 3 waiting; refuses more, as a full engine does. */
    private static InferenceBackend saturating() {
        return new TestBackend(8) {
            private final ExecutorService one = Executors.newSingleThreadExecutor();
            private final Semaphore room = new Semaphore(4);

            @Override
            public CompletableFuture<float[]> infer(float[] rows) {
                if (!room.tryAcquire()) {
                    return CompletableFuture.failedFuture(new RejectedExecutionException("the queue is full"));
                }
                return CompletableFuture.supplyAsync(() -> {
                    try {
                        Thread.sleep(10);
                        return rows.clone();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    } finally {
                        room.release();
                    }
                }, one);
            }

            @Override
            public void close() {
                one.shutdownNow();
            }
        };
    }

    @Test
    void theLadderStopsPastSaturationAndTheLowestRateRunsAgainToShowRecovery() throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", saturating(), 0, ServerLimits.defaults().withMaxBodyBytes(1 << 20))) {
            HttpLoad.Options options = new HttpLoad.Options(url(server), 8, List.of(20, 400, 800), 1, 10_000, 1, 1,
                    false, 5, 2048, 0, true, true);
            List<HttpLoad.Point> points = HttpLoad.run(options);
            List<Integer> rates = new ArrayList<>(points.stream().map(HttpLoad.Point::offeredPerSecond).toList());
            assertEquals(List.of(20, 400, 20), rates, points.toString());
            assertTrue(points.get(0).sustained(), points.get(0).toString());
            HttpLoad.Point saturated = points.get(1);
            assertFalse(saturated.sustained(), saturated.toString());
            assertTrue(saturated.unavailable() > 0, "past saturation, 503s: " + saturated);
            assertEquals(0, saturated.errors(), saturated.toString());
            HttpLoad.Point recovery = points.get(2);
            assertTrue(recovery.recovery());
            assertTrue(recovery.sustained(), "it recovers when the load drops: " + recovery);
        }
    }

    @Test
    void aRunNeverHasMoreThanMaxInFlightOutstandingAndCountsTheRestAsNotSent() throws Exception {
        InferenceBackend slow = new TestBackend(8, rows -> CompletableFuture.supplyAsync(rows::clone,
                CompletableFuture.delayedExecutor(300, java.util.concurrent.TimeUnit.MILLISECONDS)));
        try (InferenceServer server = new InferenceServer("mlp", slow, 0, ServerLimits.defaults().withMaxBodyBytes(1 << 20))) {
            HttpLoad.Options options = new HttpLoad.Options(url(server), 8, List.of(200), 0.5, 10_000, 1, 1, false,
                    5, 8, 0, false, false);
            HttpLoad.Point point = HttpLoad.run(options).getFirst();
            assertTrue(point.dropped() > 0, point.toString());
            assertTrue(point.sent() <= 8 * 3, "8 at a time for 0.5 s of 300 ms answers: " + point);
            assertEquals(point.sent(), point.ok(), point.toString());
            assertFalse(point.sustained());
        }
    }
}
