package org.cudagraph4j.serving;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.cudagraph4j.InjectedErrors;
import org.cudagraph4j.LogCapture;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The engine's batching, limits and failures, on lanes without a GPU ({@link FakeLane}). */
@Timeout(60)
class InferenceEngineTest {
    private static final BucketLadder LADDER = BucketLadder.of(1, 2, 4, 8, 16, 32, 64);

    private static ServingOptions options() {
        return ServingOptions.defaults().withLadder(LADDER).withCapturePolicy(CapturePolicy.EAGER)
                .withMaxWait(Duration.ofNanos(100_000)).withLanes(3).withQueueCapacity(100_000);
    }

    private static List<FakeLane> lanes(int count) {
        List<FakeLane> lanes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            FakeLane lane = new FakeLane(LADDER.sizes());
            while (lane.captureNext()) {
                // eager: every bucket has its graph
            }
            lanes.add(lane);
        }
        return lanes;
    }

    /** Rows no other request has: every value encodes the request and the row. */
    private static float[] rows(int request, int count) {
        float[] rows = new float[count * FakeLane.IN];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = request * 1000f + i * 0.25f;
        }
        return rows;
    }

    private static Throwable failureOf(CompletableFuture<?> future) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> future.get(20, TimeUnit.SECONDS));
        return e.getCause();
    }

    @Test
    void manyThreadsOfRandomSizesEachGetExactlyTheirOwnRows() throws Exception {
        List<FakeLane> lanes = lanes(3);
        lanes.forEach(lane -> lane.delayNanos = 20_000);
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes, options())) {
            int threads = 64;
            int perThread = 100;
            List<Thread> workers = new ArrayList<>();
            List<Throwable> problems = java.util.Collections.synchronizedList(new ArrayList<>());
            java.util.concurrent.atomic.AtomicLong rows = new java.util.concurrent.atomic.AtomicLong();
            java.util.concurrent.atomic.AtomicLong pieces = new java.util.concurrent.atomic.AtomicLong();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Runnable work = () -> {
                    SplittableRandom random = new SplittableRandom(thread);
                    List<CompletableFuture<float[]>> futures = new ArrayList<>();
                    List<float[]> inputs = new ArrayList<>();
                    for (int r = 0; r < perThread; r++) {
                        float[] input = rows(thread * perThread + r, random.nextInt(1, 301));
                        rows.addAndGet(input.length / FakeLane.IN);
                        pieces.addAndGet(LADDER.pieces(input.length / FakeLane.IN).size());
                        inputs.add(input);
                        futures.add(engine.submit(input));
                    }
                    for (int r = 0; r < perThread; r++) {
                        try {
                            assertArrayEquals(FakeLane.expected(inputs.get(r)), futures.get(r).get(30, TimeUnit.SECONDS),
                                    "thread " + thread + " request " + r);
                        } catch (Throwable e) {
                            problems.add(e);
                        }
                    }
                };
                workers.add(thread % 2 == 0 ? Thread.ofPlatform().start(work) : Thread.ofVirtual().start(work));
            }
            for (Thread worker : workers) {
                worker.join();
            }
            assertTrue(problems.isEmpty(), problems.size() + " wrong answers, first: " + problems);
            EngineMetrics metrics = engine.metrics();
            assertEquals(threads * perThread, metrics.requests());
            assertEquals(threads * perThread, metrics.completed());
            assertEquals(rows.get(), metrics.rows());
            assertEquals(metrics.batches(), metrics.graphLaunches());
            assertEquals(rows.get(), lanes.stream().mapToLong(l -> l.rowsRun.get()).sum(), "every row ran once");
            assertTrue(metrics.batches() < pieces.get(), "pieces were batched together: " + metrics);
            assertEquals(0, metrics.queued());
            assertTrue(metrics.latencyP50Micros() > 0 && metrics.latencyP99Micros() >= metrics.latencyP50Micros());
            assertTrue(metrics.queueMicros() > 0, "every piece waited for its batch: " + metrics);
        }
    }

    @Test
    void metricsCountEachDevicesBatchesAndRowsAndShowAnIdleDevice() throws Exception {
        // Requests go one at a time until the lane on device 3 has taken one and holds it at its
        // gate: devices 0 (two lanes) and 1 then serve the rest, and device 3 shows at 0 until it
        // lets that batch go.
        List<FakeLane> lanes = new ArrayList<>();
        for (int device : new int[] {3, 0, 1, 0}) {
            FakeLane lane = new FakeLane(LADDER.sizes(), device);
            while (lane.captureNext()) {
                // eager: every bucket has its graph
            }
            lane.delayNanos = 20_000;
            lanes.add(lane);
        }
        CountDownLatch gate = new CountDownLatch(1);
        lanes.get(0).gate = gate;
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes,
                options().withMaxWait(Duration.ZERO))) {
            List<float[]> before = new ArrayList<>();
            List<CompletableFuture<float[]>> held = new ArrayList<>();
            while (!lanes.get(0).entered.await(1, TimeUnit.MILLISECONDS)) {
                before.add(rows(-before.size() - 1, 5));
                held.add(engine.submit(before.getLast()));
                assertTrue(before.size() < 10_000, "the lane on device 3 never took a request");
            }
            int heldRows = lanes.get(0).enteredRows;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (held.stream().filter(future -> !future.isDone()).count() * 5 > heldRows
                    && System.nanoTime() < deadline) {
                Thread.sleep(1); // the other lanes finish what they took
            }
            assertEquals(heldRows, held.stream().filter(future -> !future.isDone()).count() * 5,
                    "only the batch at device 3's gate is still waiting");
            List<float[]> inputs = new ArrayList<>();
            List<CompletableFuture<float[]>> futures = new ArrayList<>();
            for (int i = 1; i <= 200; i++) {
                inputs.add(rows(i, 1 + i % 70));
                futures.add(engine.submit(inputs.getLast()));
            }
            for (int i = 0; i < futures.size(); i++) {
                assertArrayEquals(FakeLane.expected(inputs.get(i)), futures.get(i).get(20, TimeUnit.SECONDS));
            }
            EngineMetrics metrics = engine.metrics();
            assertEquals(List.of(0, 1, 3), List.copyOf(metrics.batchesPerDevice().keySet()), metrics.toString());
            assertEquals(List.of(0, 1, 3), List.copyOf(metrics.rowsPerDevice().keySet()), metrics.toString());
            for (int device : List.of(0, 1)) {
                List<FakeLane> on = lanes.stream().filter(lane -> lane.deviceOrdinal() == device).toList();
                long batches = on.stream().mapToLong(lane -> lane.buckets.size()).sum();
                long rows = on.stream().mapToLong(lane -> lane.rowsRun.get()).sum();
                assertTrue(batches > 0, "device " + device + " served: " + metrics);
                assertEquals(batches, metrics.batchesPerDevice().get(device), "device " + device);
                assertEquals(rows, metrics.rowsPerDevice().get(device), "device " + device);
            }
            assertEquals(0L, metrics.batchesPerDevice().get(3));
            assertEquals(0L, metrics.rowsPerDevice().get(3));
            assertEquals(metrics.batches(), metrics.batchesPerDevice().values().stream().mapToLong(n -> n).sum());
            assertEquals(metrics.rows(), metrics.rowsPerDevice().values().stream().mapToLong(n -> n).sum());

            gate.countDown();
            for (int i = 0; i < held.size(); i++) {
                assertArrayEquals(FakeLane.expected(before.get(i)), held.get(i).get(20, TimeUnit.SECONDS));
            }
            metrics = engine.metrics();
            assertEquals(1L, metrics.batchesPerDevice().get(3), metrics.toString());
            assertEquals((long) heldRows, metrics.rowsPerDevice().get(3), metrics.toString());
        }
    }

    @Test
    void aFullQueueRefusesAtOnceAndTheQueuedRequestsStillComplete() throws Exception {
        List<FakeLane> lanes = lanes(1);
        CountDownLatch gate = new CountDownLatch(1);
        lanes.get(0).gate = gate;
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes,
                options().withLanes(1).withQueueCapacity(4).withMaxWait(Duration.ZERO))) {
            List<CompletableFuture<float[]>> accepted = new ArrayList<>();
            List<float[]> inputs = new ArrayList<>();
            CompletableFuture<float[]> refused = null;
            for (int i = 0; i < 50 && refused == null; i++) {
                float[] input = rows(i, 64); // one piece each, a whole batch each
                CompletableFuture<float[]> future = engine.submit(input);
                if (future.isCompletedExceptionally()) {
                    refused = future;
                } else {
                    accepted.add(future);
                    inputs.add(input);
                }
            }
            assertTrue(refused != null, "the queue never filled");
            Throwable cause = failureOf(refused);
            assertInstanceOf(QueueFullException.class, cause);
            assertTrue(cause.getMessage().contains("capacity 4"), cause.getMessage());
            assertEquals(1, engine.metrics().rejected());
            gate.countDown();
            for (int i = 0; i < accepted.size(); i++) {
                assertArrayEquals(FakeLane.expected(inputs.get(i)), accepted.get(i).get(20, TimeUnit.SECONDS));
            }
        }
    }

    /** One lane that holds each batch until {@code gate} opens, and a deadline of 200 ms a request. */
    private static InferenceEngine gatedEngine(CountDownLatch gate) {
        List<FakeLane> lanes = lanes(1);
        lanes.get(0).gate = gate;
        return new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes,
                options().withLanes(1).withRequestTimeout(Duration.ofMillis(200)));
    }

    @Test
    void aClientThatHasItsAnswerOrItsFailureFindsItInTheMetrics() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        try (InferenceEngine engine = gatedEngine(gate)) {
            // Stages registered by the client run when its future completes, on the completing thread.
            CompletableFuture<Long> failedSeen = engine.submit(rows(1, 2)).handle((answer, failure) ->
                    engine.metrics().failed());
            assertEquals(1, failedSeen.get(20, TimeUnit.SECONDS), "timed out at the gate and counted first");
            CompletableFuture<float[]> cancelled = engine.submit(rows(2, 2));
            CompletableFuture<Long> cancelSeen = cancelled.handle((answer, failure) -> engine.metrics().failed());
            assertTrue(cancelled.cancel(false));
            assertEquals(2, cancelSeen.get(20, TimeUnit.SECONDS));
            gate.countDown();
            CompletableFuture<Long> completedSeen = engine.submit(rows(3, 2)).thenApply(answer ->
                    engine.metrics().completed());
            assertEquals(1, completedSeen.get(20, TimeUnit.SECONDS), "answered and counted first");
        }
    }

    @Test
    void aTimedOutOrCancelledRequestLeavesItsBatchmatesRight() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        try (InferenceEngine engine = gatedEngine(gate)) {
            CompletableFuture<float[]> blocking = engine.submit(rows(1, 64));
            Thread.sleep(50); // the first batch is now held at the gate
            CompletableFuture<float[]> cancelled = engine.submit(rows(2, 3));
            float[] keptInput = rows(3, 5);
            CompletableFuture<float[]> kept = engine.submit(keptInput);
            assertTrue(cancelled.cancel(false));
            Throwable timeout = failureOf(blocking);
            assertInstanceOf(TimeoutException.class, timeout);
            assertInstanceOf(TimeoutException.class, failureOf(kept), "queued behind the gate past its deadline too");
            gate.countDown();
            float[] laterInput = rows(4, 7);
            assertArrayEquals(FakeLane.expected(laterInput), engine.submit(laterInput).get(20, TimeUnit.SECONDS));
            assertThrows(CancellationException.class, cancelled::join);
            assertTrue(engine.metrics().failed() >= 3, engine.metrics().toString());
        }
    }

    @Test
    void aCudaErrorFailsExactlyItsBatchAndAStickyOneMakesTheEngineUnhealthy() throws Exception {
        List<FakeLane> lanes = lanes(1);
        FakeLane lane = lanes.get(0);
        CudaException recoverable = InjectedErrors.cudaException("cudaGraphLaunch", 1, "cudaErrorInvalidValue", "invalid argument",
                "injected");
        CudaException sticky = InjectedErrors.cudaException("cudaStreamSynchronize", 700, "cudaErrorIllegalAddress",
                "an illegal memory access was encountered", "injected");
        lane.failure = input -> input[0] == 5000f ? recoverable : input[0] == 6000f ? sticky : null;
        try (LogCapture log = LogCapture.of(InferenceEngine.class.getName());
                InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes,
                        options().withLanes(1).withMaxWait(Duration.ZERO))) {
            assertSame(recoverable, failureOf(engine.submit(rows(5, 2))));
            float[] after = rows(7, 4);
            assertArrayEquals(FakeLane.expected(after), engine.submit(after).get(20, TimeUnit.SECONDS));
            assertTrue(engine.isHealthy());

            assertSame(sticky, failureOf(engine.submit(rows(6, 2))));
            assertFalse(engine.isHealthy());
            assertSame(sticky, engine.failure().orElseThrow());
            Throwable refused = failureOf(engine.submit(rows(8, 1)));
            assertInstanceOf(EngineUnhealthyException.class, refused);
            assertSame(sticky, refused.getCause());
            // One error, logged as the engine turned unhealthy: none for the recoverable error or the refusal.
            LogCapture.Warning unhealthy = log.onlyWarning();
            assertEquals(System.Logger.Level.ERROR, unhealthy.level());
            assertEquals("inference engine unhealthy; every later request fails. Restart the process",
                    unhealthy.message());
            assertSame(sticky, unhealthy.thrown());
        }
    }

    @Test
    void closeServesWhatIsQueuedThenRefusesAndFreesTheLanes() throws Exception {
        List<FakeLane> lanes = lanes(2);
        lanes.forEach(lane -> lane.delayNanos = 1_000_000);
        InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes, options().withLanes(2));
        List<CompletableFuture<float[]>> futures = new ArrayList<>();
        List<float[]> inputs = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            inputs.add(rows(i, 1 + i % 40));
            futures.add(engine.submit(inputs.get(i)));
        }
        engine.close();
        for (int i = 0; i < futures.size(); i++) {
            assertArrayEquals(FakeLane.expected(inputs.get(i)), futures.get(i).getNow(null), "request " + i);
        }
        Throwable closed = failureOf(engine.submit(rows(1, 1)));
        assertInstanceOf(IllegalStateException.class, closed);
        assertEquals("the inference engine is closed", closed.getMessage());
        assertTrue(lanes.stream().allMatch(lane -> lane.closed));
        engine.close(); // idempotent
    }

    @Test
    void closeFailsWhatItCannotServeWithinItsTimeout() throws Exception {
        List<FakeLane> lanes = lanes(1);
        lanes.get(0).delayNanos = TimeUnit.MILLISECONDS.toNanos(300);
        InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes,
                options().withLanes(1).withMaxWait(Duration.ZERO).withCloseTimeout(Duration.ofMillis(100)));
        List<CompletableFuture<float[]>> futures = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            futures.add(engine.submit(rows(i, 64)));
        }
        engine.close();
        long served = futures.stream().filter(f -> f.isDone() && !f.isCompletedExceptionally()).count();
        long refused = futures.stream().filter(f -> {
            try {
                f.join();
                return false;
            } catch (CompletionException e) {
                return e.getCause() instanceof IllegalStateException
                        && e.getCause().getMessage().equals("the inference engine closed before serving it");
            }
        }).count();
        assertTrue(served >= 1 && served < 5, served + " served");
        assertEquals(5, served + refused);
    }

    @Test
    void closingFromAFuturesCallbackIsRefusedInsteadOfDeadlocking() throws Exception {
        List<FakeLane> lanes = lanes(1);
        CountDownLatch gate = new CountDownLatch(1);
        lanes.get(0).gate = gate; // the answer comes after the callback is chained: on the lane's thread
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes, options().withLanes(1))) {
            CompletableFuture<float[]> answer = engine.submit(rows(1, 1));
            CompletableFuture<Throwable> refusal = answer.handle((rows, failure) -> {
                try {
                    engine.close();
                    return null;
                } catch (IllegalStateException e) {
                    return e;
                }
            });
            gate.countDown();
            Throwable e = refusal.get(20, TimeUnit.SECONDS);
            assertInstanceOf(IllegalStateException.class, e);
            assertTrue(e.getMessage().contains("would wait for itself"), e.getMessage());
            float[] input = rows(2, 2);
            assertArrayEquals(FakeLane.expected(input), engine.submit(input).get(20, TimeUnit.SECONDS));
        }
    }

    @Test
    void aLaneThatThrowsAnErrorFailsItsBatchAndKeepsServing() throws Exception {
        List<FakeLane> lanes = lanes(1);
        lanes.get(0).failure = input -> {
            if (input[0] == 5000f) {
                throw new AssertionError("a lane bug");
            }
            return null;
        };
        try (LogCapture log = LogCapture.of(InferenceEngine.class.getName());
                InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes,
                        options().withLanes(1).withMaxWait(Duration.ZERO))) {
            Throwable failure = failureOf(engine.submit(rows(5, 1)));
            assertInstanceOf(AssertionError.class, failure);
            assertWarnedOnceAndServesOn(log, "a batch failed", failure, engine, rows(6, 3));
        }
    }

    @Test
    void anErrorOutsideTheLanesRunFailsItsBatchAndTheLaneKeepsServing() throws Exception {
        FakeLane lane = lanes(1).getFirst();
        try (LogCapture log = LogCapture.of(InferenceEngine.class.getName());
                InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, List.of(lane),
                        options().withLanes(1).withMaxWait(Duration.ZERO))) {
            OutOfMemoryError staging = new OutOfMemoryError("staging");
            lane.stagingError = staging;
            assertSame(staging, failureOf(engine.submit(rows(1, 2))));
            assertWarnedOnceAndServesOn(log, "lane 0 failed serving a batch", staging, engine, rows(2, 3));
        }
    }

    /** The engine logged one warning, {@code message} with {@code failure}, and answers {@code input} right. */
    private static void assertWarnedOnceAndServesOn(LogCapture log, String message, Throwable failure,
            InferenceEngine engine, float[] input) throws Exception {
        LogCapture.Warning warning = log.onlyWarning();
        assertEquals(System.Logger.Level.WARNING, warning.level());
        assertEquals(message, warning.message());
        assertSame(failure, warning.thrown());
        assertArrayEquals(FakeLane.expected(input), engine.submit(input).get(20, TimeUnit.SECONDS));
    }

    @Test
    void lazyCaptureServesAtOnceAndSwitchesToGraphs() throws Exception {
        FakeLane lane = new FakeLane(LADDER.sizes());
        lane.delayNanos = 200_000;
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, List.of(lane),
                options().withLanes(1).withCapturePolicy(CapturePolicy.LAZY))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int request = 0;
            while (!LADDER.sizes().stream().allMatch(lane::hasGraph) && System.nanoTime() < deadline) {
                float[] input = rows(request++, 1 + request % 64);
                assertArrayEquals(FakeLane.expected(input), engine.submit(input).get(20, TimeUnit.SECONDS));
            }
            assertTrue(LADDER.sizes().stream().allMatch(lane::hasGraph), "every bucket was captured while serving");
            float[] input = rows(request, 9);
            assertArrayEquals(FakeLane.expected(input), engine.submit(input).get(20, TimeUnit.SECONDS));
            assertTrue(engine.metrics().graphLaunches() >= 1, engine.metrics().toString());
        }
    }

    @Test
    void flightRecorderSeesEveryBatchAndEveryQueueWait() throws Exception {
        java.nio.file.Path file = java.nio.file.Files.createTempFile("serving", ".jfr");
        try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
            recording.enable("org.cudagraph4j.serving.Batch");
            recording.enable("org.cudagraph4j.serving.QueueWait");
            recording.start();
            long batches;
            try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes(2), options())) {
                List<CompletableFuture<float[]>> futures = new ArrayList<>();
                for (int i = 0; i < 50; i++) {
                    futures.add(engine.submit(rows(i, 1 + i)));
                }
                for (CompletableFuture<float[]> future : futures) {
                    future.get(20, TimeUnit.SECONDS);
                }
                batches = engine.metrics().batches();
            }
            recording.stop();
            recording.dump(file);
            List<jdk.jfr.consumer.RecordedEvent> events = jdk.jfr.consumer.RecordingFile.readAllEvents(file);
            long batchEvents = events.stream().filter(e -> e.getEventType().getName()
                    .equals("org.cudagraph4j.serving.Batch")).count();
            long waits = events.stream().filter(e -> e.getEventType().getName()
                    .equals("org.cudagraph4j.serving.QueueWait")).count();
            assertEquals(batches, batchEvents);
            assertEquals(50, waits, "one piece per request here");
            assertTrue(events.stream().allMatch(e -> e.getEventType().getCategoryNames()
                    .equals(List.of("cudagraph4j", "Serving"))));
        } finally {
            java.nio.file.Files.deleteIfExists(file);
        }
    }

    @Test
    void eachLaneIsBoundOnItsOwnWorkerThreadAndAnEngineNeedsADevice() throws Exception {
        List<FakeLane> lanes = lanes(3);
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes, options())) {
            float[] input = rows(1, 2);
            assertArrayEquals(FakeLane.expected(input), engine.submit(input).get(20, TimeUnit.SECONDS));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (lanes.stream().anyMatch(lane -> lane.binds.get() == 0) && System.nanoTime() < deadline) {
                Thread.sleep(1); // a worker binds as its thread starts
            }
            assertTrue(lanes.stream().allMatch(lane -> lane.binds.get() == 1), "bound once, by its worker");
        }
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> InferenceEngine.start(List.of(), 4, 4, device -> null, options()));
        assertTrue(none.getMessage().startsWith("an engine needs at least one device"), none.getMessage());
    }

    @Test
    void aRequestThatFindsALaneIdleRunsAloneAndWhatQueuesMeanwhileIsTheNextBatch() throws Exception {
        FakeLane lane = lanes(1).getFirst();
        CountDownLatch gate = new CountDownLatch(1);
        lane.gate = gate;
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, List.of(lane),
                options().withLanes(1).withMaxWait(Duration.ZERO))) {
            float[] alone = rows(1, 1);
            CompletableFuture<float[]> first = engine.submit(alone);
            assertTrue(lane.entered.await(10, TimeUnit.SECONDS), "the lone request started without waiting");
            assertEquals(1, lane.enteredRows);
            List<float[]> inputs = List.of(rows(2, 3), rows(3, 2), rows(4, 4));
            List<CompletableFuture<float[]>> queued = inputs.stream().map(engine::submit).toList();
            gate.countDown();
            assertArrayEquals(FakeLane.expected(alone), first.get(20, TimeUnit.SECONDS));
            for (int i = 0; i < inputs.size(); i++) {
                assertArrayEquals(FakeLane.expected(inputs.get(i)), queued.get(i).get(20, TimeUnit.SECONDS));
            }
            assertEquals(List.of(1, 16), lane.buckets, "9 rows queued behind the first: one batch on bucket 16");
            assertEquals(2, engine.metrics().batches());
        }
    }

    @Test
    void maxWaitHoldsABatchOpenForMoreUntilTheLargestBucketIsFull() throws Exception {
        FakeLane lane = lanes(1).getFirst();
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, List.of(lane),
                options().withLanes(1).withMaxWait(Duration.ofSeconds(2)))) {
            float[] full = rows(1, 64);
            assertArrayEquals(FakeLane.expected(full), engine.submit(full).get(1, TimeUnit.SECONDS),
                    "a full batch does not wait");
            float[] early = rows(2, 1);
            float[] late = rows(3, 1);
            CompletableFuture<float[]> first = engine.submit(early);
            Thread.sleep(100);
            assertFalse(first.isDone(), "the batch waits for more");
            CompletableFuture<float[]> second = engine.submit(late);
            assertArrayEquals(FakeLane.expected(early), first.get(20, TimeUnit.SECONDS));
            assertArrayEquals(FakeLane.expected(late), second.get(20, TimeUnit.SECONDS));
            assertEquals(List.of(64, 2), lane.buckets, "the two one-row requests ran together");
        }
    }

    @Test
    void requestsAreWholeRowsFromArraysOrNativeMemory() throws Exception {
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, lanes(1), options().withLanes(1));
                Arena arena = Arena.ofConfined()) {
            IllegalArgumentException partial = assertThrows(IllegalArgumentException.class,
                    () -> engine.submit(new float[4]));
            assertEquals("a request is a whole number of rows of 3 floats, got 4 floats", partial.getMessage());
            assertThrows(IllegalArgumentException.class, () -> engine.submit(new float[0]));
            IllegalArgumentException bytes = assertThrows(IllegalArgumentException.class,
                    () -> engine.submit(arena.allocate(16)));
            assertEquals("a request is a whole number of rows of 12 bytes, got 16 bytes", bytes.getMessage());
            float[] input = rows(9, 150); // above the largest bucket: three pieces, joined in order
            MemorySegment confined = arena.allocateFrom(ValueLayout.JAVA_FLOAT, input);
            CompletableFuture<float[]> answer = engine.submit(confined);
            confined.setAtIndex(ValueLayout.JAVA_FLOAT, 0, -1f); // a confined segment is copied at submission
            assertArrayEquals(FakeLane.expected(input), answer.get(20, TimeUnit.SECONDS));
        }
    }

    @Test
    void rowsAndAnswersCanStayInMemoryAnyThreadReadsAndAClosedArenaFailsOnlyItsRequest() throws Exception {
        FakeLane lane = lanes(1).getFirst();
        CountDownLatch gate = new CountDownLatch(1);
        lane.gate = gate;
        try (InferenceEngine engine = new InferenceEngine(FakeLane.IN, FakeLane.OUT, List.of(lane),
                options().withLanes(1).withMaxWait(Duration.ZERO))) {
            CompletableFuture<float[]> blocker = engine.submit(rows(1, 1));
            assertTrue(lane.entered.await(10, TimeUnit.SECONDS));

            float[] input = rows(2, 70);
            byte[] body = new byte[8 + input.length * Float.BYTES]; // rows at an offset of a heap byte array
            MemorySegment rows = MemorySegment.ofArray(body).asSlice(8);
            MemorySegment.copy(input, 0, rows, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, input.length);
            byte[] response = new byte[4 + 70 * FakeLane.OUT * Float.BYTES];
            MemorySegment output = MemorySegment.ofArray(response).asSlice(4);
            CompletableFuture<MemorySegment> written = engine.submit(rows, output);

            Arena shared = Arena.ofShared();
            float[] doomed = rows(3, 2);
            CompletableFuture<float[]> lost = engine.submit(shared.allocateFrom(ValueLayout.JAVA_FLOAT, doomed));
            float[] keptInput = rows(4, 2);
            CompletableFuture<float[]> kept = engine.submit(keptInput);
            shared.close(); // before its batch runs

            MemorySegment confinedOut = Arena.ofConfined().allocate(2L * FakeLane.OUT * Float.BYTES);
            IllegalArgumentException confined = assertThrows(IllegalArgumentException.class,
                    () -> engine.submit(MemorySegment.ofArray(rows(5, 2)), confinedOut));
            assertTrue(confined.getMessage().contains("confined"), confined.getMessage());
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> engine.submit(MemorySegment.ofArray(rows(5, 2)), MemorySegment.ofArray(new float[5])));
            assertEquals("the output of 2 rows is a writable segment of 16 bytes, got one of 20", size.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> engine.submit(MemorySegment.ofArray(rows(5, 2)), MemorySegment.ofArray(new float[4])
                            .asReadOnly()));

            gate.countDown();
            blocker.get(20, TimeUnit.SECONDS);
            assertSame(output, written.get(20, TimeUnit.SECONDS));
            assertArrayEquals(FakeLane.expected(input), output.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED));
            Throwable closed = failureOf(lost);
            assertInstanceOf(IllegalStateException.class, closed);
            assertTrue(closed.getMessage().startsWith("the request's rows could not be read"), closed.getMessage());
            assertArrayEquals(FakeLane.expected(keptInput), kept.get(20, TimeUnit.SECONDS));
        }
    }
}
