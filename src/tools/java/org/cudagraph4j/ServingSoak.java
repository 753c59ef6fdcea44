package org.cudagraph4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.cudagraph4j.serving.EngineMetrics;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;
import org.cudagraph4j.serving.QueueFullException;
import org.cudagraph4j.serving.ServingOptions;

/**
 * A soak of the serving engine on device 0: an {@link InferenceEngine} with its default options
 * (but a shorter queue) serves an MLP of 8 fused Linear(512, 512) + ReLU layers under an open-loop
 * Poisson load for {@code --minutes}, and every answer is checked against a float64 forward pass
 * on the host. A closed-loop calibration first measures the engine's saturation rate, so that the
 * load's rate, redrawn every few seconds between 50% and 90% of it, scales with the GPU and host
 * it runs on. Requests are of 1 to 300 rows (those above the largest bucket are split), use the
 * three submit forms in turn, and about 2% are cancelled right after submission and 2% given a
 * client deadline of a few hundred µs: those must end with the right answer or their cancellation
 * or timeout.
 *
 * <p>Every 5 s the load pauses until no request is in flight, and a sample records RSS, device
 * memory used, {@link Cuda#liveResources()} and the engine's metrics. PASS needs no wrong answer,
 * no failure other than a cancellation, a timeout or a full queue, RSS and device memory flat after
 * warm-up (judged as {@link Soak} judges them), and live resources back to their starting counts
 * once the engines, model and kernels are closed. Exit status 0 on PASS, 1 on FAIL, 2 for bad
 * arguments or no GPU. Run it with {@code bin/soak --serving}.
 */
public final class ServingSoak {
    private static final String USAGE = "usage: soak --serving --minutes N [--report FILE] [--seed S]";
    /**
     * The defaults but for a queue of 512 pieces, one the client's fixed heap can hold with their
     * rows and answers: when the load outruns the engine, the engine rejects (QueueFullException)
     * instead of the soak running out of heap.
     */
    private static final ServingOptions ENGINE_OPTIONS = ServingOptions.defaults().withQueueCapacity(512);
    private static final int WIDTH = 512;
    private static final int LAYERS = 8;
    private static final long ROW_BYTES = (long) WIDTH * Float.BYTES;
    /** Above the default ladder's largest bucket (256), so that some requests are split. */
    private static final int MAX_ROWS = 300;
    /** Input blocks of {@link #MAX_ROWS} rows whose answers are computed once; a request takes rows of one. */
    private static final int POOL_BLOCKS = 64;
    /**
     * Requests in flight beyond which an arrival is shed rather than sent, so that answers waiting
     * for a checker cannot fill the heap either; above the engine's queue capacity, so that the
     * engine's own rejections come first.
     */
    private static final int MAX_IN_FLIGHT = 1024;
    /**
     * Reused outputs for the native third of the requests, more than can be in flight, allocated
     * once so that RSS stays flat; should they run out, a request gets an arena of its own.
     */
    private static final int OUTPUT_SLOTS = MAX_IN_FLIGHT * 3 / 8;
    /**
     * Few enough to leave the engine's lanes and the load generator their cores; a check of 150
     * rows takes tens of µs, so these check far more requests than the engine answers.
     */
    private static final int CHECKER_THREADS = Math.max(2, Runtime.getRuntime().availableProcessors() / 4);
    /**
     * Each checker thread's copy of a native answer: a loop over an array runs many times faster
     * than one over a segment.
     */
    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[MAX_ROWS * WIDTH]);
    private static final double TOLERANCE = 1e-4;
    private static final long CALIBRATION_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Calibration's first seconds, left out of the rate: the JIT and the lanes' first batches settle. */
    private static final long CALIBRATION_SETTLE_NANOS = TimeUnit.SECONDS.toNanos(2);
    /** Enough requests in flight to keep every lane busy with full buckets. */
    private static final int CALIBRATION_IN_FLIGHT = 64;
    private static final double LOW_LOAD = 0.5;
    private static final double HIGH_LOAD = 0.9;
    private static final long RATE_PERIOD_NANOS = TimeUnit.SECONDS.toNanos(3);
    private static final double CANCEL_SHARE = 0.02;
    private static final double SHORT_TIMEOUT_SHARE = 0.02;
    private static final long MIN_CLIENT_TIMEOUT_MICROS = 100;
    private static final long MAX_CLIENT_TIMEOUT_MICROS = 500;
    /** How close to an arrival the load generator stops parking and spins, as parking overshoots by tens of µs. */
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
    private static final int MAX_PRINTED = 20;
    private static final Form[] FORMS = Form.values();

    /** How a request is submitted: the three forms of {@link InferenceEngine#submit}, used in turn. */
    private enum Form {
        /** {@code submit(float[])} on a copy of the rows. */
        FLOAT_ARRAY,
        /** {@code submit(MemorySegment)} on a heap segment: a slice of the pool's own array. */
        HEAP_SEGMENT,
        /**
         * {@code submit(rows, output)}: native rows, and an output poisoned first: a reused slot of a
         * shared arena, or for a request that is cancelled or given a deadline, a fresh shared arena.
         */
        NATIVE_SEGMENTS
    }

    /** What the client does to a request once it is submitted. */
    private enum Fate {
        WAIT, CANCEL, SHORT_TIMEOUT
    }

    private record Options(double minutes, Path report, long seed) {
        static Options parse(String[] args) {
            Double minutes = null;
            Path report = null;
            long seed = TestData.newSeed();
            for (int i = 0; i < args.length; i++) {
                String value = i + 1 < args.length ? args[i + 1] : null;
                switch (args[i]) {
                    case "--minutes" -> minutes = Soak.number(args[i], value, Double::parseDouble);
                    case "--report" -> report = Path.of(Soak.required(args[i], value));
                    case "--seed" -> seed = Soak.number(args[i], value, Long::parseLong);
                    default -> throw new IllegalArgumentException("unknown argument " + args[i]);
                }
                i++;
            }
            if (minutes == null) {
                throw new IllegalArgumentException("--minutes is required");
            }
            if (!(minutes > 0) || minutes.isInfinite()) {
                throw new IllegalArgumentException("--minutes must be a positive number, got " + minutes);
            }
            return new Options(minutes, report, seed);
        }

        long nanos() {
            return (long) (minutes * TimeUnit.MINUTES.toNanos(1));
        }
    }

    /** One request: rows {@code [firstRow, firstRow + rows)} of a pool block, submitted one way. */
    private record Request(int block, int firstRow, int rows, Form form, Fate fate, long timeoutMicros) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%s request of %d rows (pool block %d, rows %d to %d)%s",
                    form.name().toLowerCase(Locale.ROOT).replace('_', ' '), rows, block, firstRow,
                    firstRow + rows - 1, switch (fate) {
                        case WAIT -> "";
                        case CANCEL -> ", cancelled after submission";
                        case SHORT_TIMEOUT -> ", client deadline " + timeoutMicros + " µs";
                    });
        }
    }

    /** How the requests of one phase ended, as the client saw them. */
    private static final class Tally {
        final LongAdder sent = new LongAdder();
        final LongAdder cancelsAsked = new LongAdder();
        final LongAdder shortTimeoutsGiven = new LongAdder();
        final LongAdder completed = new LongAdder();
        final LongAdder cancelled = new LongAdder();
        final LongAdder timedOut = new LongAdder();
        final LongAdder rejected = new LongAdder();
        final LongAdder wrong = new LongAdder();
        final LongAdder failed = new LongAdder();
        final LongAdder shed = new LongAdder();

        /** Requests that came back with an answer, right or wrong. */
        long answered() {
            return completed.sum() + wrong.sum();
        }

        String[] row(String phase) {
            return new String[] {phase, count(sent), count(cancelsAsked), count(shortTimeoutsGiven), count(completed),
                    count(cancelled), count(timedOut), count(rejected), count(shed), count(wrong), count(failed)};
        }

        private static String count(LongAdder adder) {
            return String.format(Locale.ROOT, "%,d", adder.sum());
        }
    }

    /** One sample, taken while no request is in flight. */
    private record Sample(double seconds, EngineMetrics engine, long sent, long shed, long wrong, long failed,
            long rssBytes, long jvmNativeBytes, long heapBytes, long deviceUsedBytes, LiveResources live) {}

    /**
     * The model's parameters and the request pool: blocks of random inputs and their answers from a
     * float64 forward pass, computed once so that checking an answer costs one pass over it.
     */
    private static final class Workload {
        final float[][] weights = new float[LAYERS][];
        final float[][] biases = new float[LAYERS][];
        final float[][] inputs = new float[POOL_BLOCKS][];
        final double[][] answers;

        Workload(SplittableRandom random) {
            // PyTorch's default Linear initialisation: the activations neither vanish nor grow through the layers.
            double bound = 1 / Math.sqrt(WIDTH);
            for (int l = 0; l < LAYERS; l++) {
                weights[l] = uniform(random, WIDTH * WIDTH, bound);
                biases[l] = uniform(random, WIDTH, bound);
            }
            for (int b = 0; b < POOL_BLOCKS; b++) {
                inputs[b] = new float[MAX_ROWS * WIDTH];
                for (int i = 0; i < inputs[b].length; i++) {
                    // Magnitude 0.5 to 2 with a random sign: never zero, and large enough that every row's
                    // answer differs from every other's by far more than the tolerance.
                    float magnitude = (float) (0.5 + 1.5 * random.nextDouble());
                    inputs[b][i] = random.nextBoolean() ? magnitude : -magnitude;
                }
            }
            double[][] transposed = new double[LAYERS][WIDTH * WIDTH];
            for (int l = 0; l < LAYERS; l++) {
                for (int o = 0; o < WIDTH; o++) {
                    for (int i = 0; i < WIDTH; i++) {
                        transposed[l][i * WIDTH + o] = weights[l][o * WIDTH + i];
                    }
                }
            }
            answers = IntStream.range(0, POOL_BLOCKS).parallel().mapToObj(b -> forward(inputs[b], transposed))
                    .toArray(double[][]::new);
        }

        private static float[] uniform(SplittableRandom random, int n, double bound) {
            float[] values = new float[n];
            for (int i = 0; i < n; i++) {
                values[i] = (float) ((2 * random.nextDouble() - 1) * bound);
            }
            return values;
        }

        /**
         * relu(… relu(x W0ᵀ + b0) …) in float64, row by row, with each weight matrix transposed so
         * that the inner loop runs along contiguous memory.
         */
        private double[] forward(float[] rows, double[][] transposed) {
            double[] out = new double[rows.length];
            double[] current = new double[WIDTH];
            double[] next = new double[WIDTH];
            for (int r = 0; r < rows.length / WIDTH; r++) {
                for (int i = 0; i < WIDTH; i++) {
                    current[i] = rows[r * WIDTH + i];
                }
                for (int l = 0; l < LAYERS; l++) {
                    for (int o = 0; o < WIDTH; o++) {
                        next[o] = biases[l][o];
                    }
                    double[] w = transposed[l];
                    for (int i = 0; i < WIDTH; i++) {
                        double x = current[i];
                        int row = i * WIDTH;
                        for (int o = 0; o < WIDTH; o++) {
                            next[o] += x * w[row + o];
                        }
                    }
                    for (int o = 0; o < WIDTH; o++) {
                        current[o] = Math.max(next[o], 0);
                    }
                }
                System.arraycopy(current, 0, out, r * WIDTH, WIDTH);
            }
            return out;
        }
    }

    private final Options options;
    private final CudaDevice device;
    private final Workload workload;
    /** The pool's inputs again in native memory, for the rows of {@link Form#NATIVE_SEGMENTS} requests. */
    private final MemorySegment[] nativeInputs = new MemorySegment[POOL_BLOCKS];
    /**
     * Free outputs for waited-for {@link Form#NATIVE_SEGMENTS} requests. A slot comes back once its
     * request is answered, when the engine has written all of it. Closing a shared arena per request
     * instead would cost a handshake with every thread each time, which caps the client well below
     * the engine's rate.
     */
    private final ConcurrentLinkedQueue<MemorySegment> outputSlots = new ConcurrentLinkedQueue<>();
    /** Checks answers off the engine's lane threads, which would otherwise wait for each check. */
    private final ExecutorService checkers;
    /** Used by the submitting thread only. */
    private final SplittableRandom random;
    private final Tally calibration = new Tally();
    private final Tally load = new Tally();
    /** Requests submitted whose outcome has not been counted yet. */
    private final AtomicLong inFlight = new AtomicLong();
    private final AtomicInteger reported = new AtomicInteger();
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    private long submitted;
    private double saturation;
    /** Time the load ran, its sampling pauses left out: what the offered rate is taken over. */
    private long loadNanos;
    private EngineMetrics loadMetrics;

    private ServingSoak(Options options, CudaDevice device, Workload workload, SplittableRandom random,
            Arena nativeArena, ExecutorService checkers) {
        this.options = options;
        this.device = device;
        this.workload = workload;
        this.random = random;
        this.checkers = checkers;
        for (int b = 0; b < POOL_BLOCKS; b++) {
            nativeInputs[b] = nativeArena.allocate(MAX_ROWS * ROW_BYTES, Float.BYTES);
            MemorySegment.copy(workload.inputs[b], 0, nativeInputs[b], ValueLayout.JAVA_FLOAT, 0,
                    workload.inputs[b].length);
        }
        for (int i = 0; i < OUTPUT_SLOTS; i++) {
            outputSlots.add(nativeArena.allocate(MAX_ROWS * ROW_BYTES, Float.BYTES));
        }
    }

    public static void main(String[] args) throws InterruptedException {
        Options options = Soak.parseOrExit("soak --serving", USAGE, () -> Options.parse(args));
        CudaDevice device = Soak.deviceOrExit("soak --serving");
        Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        System.out.printf(Locale.ROOT, "soak --serving: %s minutes on %s, seed %d; computing the float64 answers "
                + "of %d input blocks of %d rows%n", Soak.minutes(options.minutes()), device.properties().name(),
                options.seed(), POOL_BLOCKS, MAX_ROWS);
        SplittableRandom random = new SplittableRandom(options.seed());
        Workload workload = new Workload(random.split());
        LiveResources before = Cuda.liveResources();
        ServingSoak soak;
        List<Sample> samples;
        try (ShippedKernels kernels = ShippedKernels.load(device); Arena nativeArena = Arena.ofShared();
                ExecutorService checkers = Executors.newFixedThreadPool(CHECKER_THREADS,
                        Thread.ofPlatform().name("soak-checker-", 0).daemon().factory())) {
            soak = new ServingSoak(options, device, workload, random, nativeArena, checkers);
            samples = soak.run(kernels, started);
        }
        boolean pass = soak.conclude(started, samples, before, Cuda.liveResources());
        System.exit(pass ? 0 : 1);
    }

    /**
     * Uploads the weights once, calibrates on one engine, runs the load on a fresh one (so that its
     * metrics are the load's alone), and closes both engines and the weights.
     */
    private List<Sample> run(ShippedKernels kernels, Instant started) throws InterruptedException {
        List<DeviceBuffer> parameters = new ArrayList<>();
        try {
            List<Linear> layers = new ArrayList<>();
            for (int l = 0; l < LAYERS; l++) {
                DeviceBuffer weight = TestData.upload(device, workload.weights[l]);
                parameters.add(weight);
                DeviceBuffer bias = TestData.upload(device, workload.biases[l]);
                parameters.add(bias);
                layers.add(new Linear(kernels, weight, bias, WIDTH, WIDTH));
            }
            LaneModel.Factory model = laneDevice -> LaneModel.of(
                    new Mlp(kernels, layers, ENGINE_OPTIONS.ladder().largest()), Linear.Mode.FUSED);
            try (InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, model, ENGINE_OPTIONS)) {
                saturation = calibrate(engine);
            }
            System.out.printf(Locale.ROOT, "soak --serving: saturation %.0f requests/s (closed loop, %d in flight); "
                    + "load %.0f to %.0f requests/s%n", saturation, CALIBRATION_IN_FLIGHT, LOW_LOAD * saturation,
                    HIGH_LOAD * saturation);
            try (InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, model, ENGINE_OPTIONS)) {
                List<Sample> samples = load(engine, started);
                loadMetrics = engine.metrics();
                return samples;
            }
        } finally {
            parameters.forEach(DeviceBuffer::close);
        }
    }

    /**
     * Keeps {@link #CALIBRATION_IN_FLIGHT} requests in flight for {@link #CALIBRATION_NANOS}; the
     * answers per second after the settling time are the engine's saturation rate.
     */
    private double calibrate(InferenceEngine engine) throws InterruptedException {
        Semaphore slots = new Semaphore(CALIBRATION_IN_FLIGHT);
        long start = System.nanoTime();
        long end = start + CALIBRATION_NANOS;
        long measuredFrom = 0;
        long answeredBefore = -1;
        long now;
        while ((now = System.nanoTime()) < end) {
            if (answeredBefore < 0 && now - start >= CALIBRATION_SETTLE_NANOS) {
                measuredFrom = now;
                answeredBefore = calibration.answered();
            }
            slots.acquire();
            send(engine, nextRequest(Fate.WAIT, 0), calibration, slots::release);
        }
        double rate = (calibration.answered() - answeredBefore) / ((now - measuredFrom) / 1e9);
        drain();
        return rate;
    }

    /**
     * The open-loop load until the deadline: arrivals at exponential gaps whatever is answered, at
     * a rate redrawn every {@link #RATE_PERIOD_NANOS}; every {@link Soak#SAMPLE_NANOS} it pauses
     * for a sample and restarts its arrival clock after it.
     */
    private List<Sample> load(InferenceEngine engine, Instant started) throws InterruptedException {
        List<Sample> samples = new ArrayList<>();
        long start = System.nanoTime();
        long deadline = start + options.nanos();
        samples.add(sample(engine, start));
        if (!(saturation > 0)) {
            problem("calibration got no answer, so there is no load to run", null);
            return samples;
        }
        long pausedNanos = 0;
        long nextSample = start + Soak.SAMPLE_NANOS;
        long nextRateChange = start;
        double rate = 0;
        long arrival = start;
        boolean warm = false;
        while (true) {
            long now = System.nanoTime();
            if (nextSample <= deadline && now >= nextSample) {
                drain();
                Sample sample = sample(engine, start);
                samples.add(sample);
                if (!warm && sample.seconds() > warmupSeconds()) {
                    warm = true;
                    Soak.NativeMemory.baseline();
                }
                printProgress(sample);
                writeProgress(started, samples);
                arrival = System.nanoTime();
                do { // a drain held up by the engine's deadline skips the samples it overran
                    nextSample += Soak.SAMPLE_NANOS;
                } while (nextSample <= arrival);
                pausedNanos += arrival - now;
                continue;
            }
            if (now >= deadline) {
                break;
            }
            if (now >= nextRateChange) {
                rate = saturation * (LOW_LOAD + (HIGH_LOAD - LOW_LOAD) * random.nextDouble());
                nextRateChange += RATE_PERIOD_NANOS;
            }
            arrival += (long) (-Math.log(1 - random.nextDouble()) / rate * 1e9);
            waitUntil(arrival);
            double fate = random.nextDouble();
            if (inFlight.get() >= MAX_IN_FLIGHT) {
                load.shed.increment();
            } else if (fate < CANCEL_SHARE) {
                send(engine, nextRequest(Fate.CANCEL, 0), load, () -> { });
            } else if (fate < CANCEL_SHARE + SHORT_TIMEOUT_SHARE) {
                long micros = MIN_CLIENT_TIMEOUT_MICROS
                        + random.nextLong(MAX_CLIENT_TIMEOUT_MICROS - MIN_CLIENT_TIMEOUT_MICROS + 1);
                send(engine, nextRequest(Fate.SHORT_TIMEOUT, micros), load, () -> { });
            } else {
                send(engine, nextRequest(Fate.WAIT, 0), load, () -> { });
            }
        }
        drain();
        loadNanos = System.nanoTime() - start - pausedNanos;
        return samples;
    }

    /** Parks until shortly before {@code nanoTime}, then spins to it. */
    private static void waitUntil(long nanoTime) {
        long left;
        while ((left = nanoTime - System.nanoTime()) > 0) {
            if (left > SPIN_NANOS) {
                LockSupport.parkNanos(left - SPIN_NANOS);
            } else {
                Thread.onSpinWait();
            }
        }
    }

    private Request nextRequest(Fate fate, long timeoutMicros) {
        int rows = 1 + random.nextInt(MAX_ROWS);
        return new Request(random.nextInt(POOL_BLOCKS), random.nextInt(MAX_ROWS - rows + 1), rows,
                FORMS[(int) (submitted++ % FORMS.length)], fate, timeoutMicros);
    }

    /**
     * Submits {@code request}, cancels it or gives it its deadline, and has a checker count its
     * outcome and then run {@code done}. A submission that throws counts as a failure.
     */
    private void send(InferenceEngine engine, Request request, Tally tally, Runnable done) {
        tally.sent.increment();
        inFlight.incrementAndGet();
        boolean nativeForm = request.form() == Form.NATIVE_SEGMENTS;
        MemorySegment slot = nativeForm && request.fate() == Fate.WAIT ? outputSlots.poll() : null;
        Arena ownArena = nativeForm && slot == null ? Arena.ofShared() : null;
        CompletableFuture<?> future;
        try {
            MemorySegment output = null;
            if (nativeForm) {
                long bytes = request.rows() * ROW_BYTES;
                output = slot != null ? slot.asSlice(0, bytes) : ownArena.allocate(bytes, Float.BYTES);
                output.fill((byte) Soak.POISON);
            }
            future = submit(engine, request, output);
        } catch (RuntimeException e) {
            future = CompletableFuture.failedFuture(e);
        }
        switch (request.fate()) {
            case WAIT -> { }
            case CANCEL -> {
                tally.cancelsAsked.increment();
                future.cancel(false);
            }
            case SHORT_TIMEOUT -> {
                tally.shortTimeoutsGiven.increment();
                future.orTimeout(request.timeoutMicros(), TimeUnit.MICROSECONDS);
            }
        }
        future.whenCompleteAsync((answer, failure) -> {
            Throwable cause = cause(failure);
            try {
                settle(request, answer, cause, tally);
            } finally {
                // A lane may still be copying the answer of a request cancelled or timed out: closing its
                // arena makes that copy fail, which the engine ignores for a request already finished. A
                // slot whose request failed otherwise is never reused, for the same reason.
                if (ownArena != null) {
                    ownArena.close();
                } else if (slot != null && (cause == null || cause instanceof QueueFullException)) {
                    outputSlots.add(slot);
                }
                inFlight.decrementAndGet();
                done.run();
            }
        }, checkers);
    }

    /** Submits in the request's form; {@code output} is the poisoned room for a native request's answer. */
    private CompletableFuture<?> submit(InferenceEngine engine, Request request, MemorySegment output) {
        long offset = request.firstRow() * ROW_BYTES;
        long bytes = request.rows() * ROW_BYTES;
        float[] block = workload.inputs[request.block()];
        return switch (request.form()) {
            case FLOAT_ARRAY -> engine.submit(Arrays.copyOfRange(block, request.firstRow() * WIDTH,
                    (request.firstRow() + request.rows()) * WIDTH));
            case HEAP_SEGMENT -> engine.submit(MemorySegment.ofArray(block).asSlice(offset, bytes));
            case NATIVE_SEGMENTS -> engine.submit(nativeInputs[request.block()].asSlice(offset, bytes), output);
        };
    }

    /** Counts how a request ended; an answer is checked, and a failure is expected only as its fate allows. */
    private void settle(Request request, Object answer, Throwable cause, Tally tally) {
        try {
            if (cause == null) {
                check(request, answer, tally);
            } else if (cause instanceof QueueFullException) {
                tally.rejected.increment();
            } else if (cause instanceof CancellationException && request.fate() == Fate.CANCEL) {
                tally.cancelled.increment();
            } else if (cause instanceof TimeoutException && request.fate() == Fate.SHORT_TIMEOUT) {
                tally.timedOut.increment();
            } else {
                tally.failed.increment();
                problem(request + " failed", cause);
            }
        } catch (RuntimeException e) { // an answer of the wrong type or size: counted, never lost in the future
            tally.failed.increment();
            problem(request + ": its answer could not be checked", e);
        }
    }

    /** The failure itself where a dependent stage wrapped it; null for none. */
    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    /** Right when the largest difference from the float64 answer is within {@link #TOLERANCE} of its largest value. */
    private void check(Request request, Object answer, Tally tally) {
        int floats = request.rows() * WIDTH;
        long bytes = answer instanceof float[] array ? (long) array.length * Float.BYTES
                : ((MemorySegment) answer).byteSize();
        if (bytes != (long) floats * Float.BYTES) {
            tally.wrong.increment();
            problem(String.format(Locale.ROOT, "%s: wrong answer, %d bytes instead of %d", request, bytes,
                    (long) floats * Float.BYTES), null);
            return;
        }
        float[] values;
        if (answer instanceof float[] array) {
            values = array;
        } else {
            values = SCRATCH.get();
            MemorySegment.copy((MemorySegment) answer, ValueLayout.JAVA_FLOAT, 0, values, 0, floats);
        }
        double[] expected = workload.answers[request.block()];
        int from = request.firstRow() * WIDTH;
        double largestDifference = 0;
        double largestExpected = 0;
        for (int i = 0; i < floats; i++) {
            double value = expected[from + i];
            // Math.max keeps a NaN, the poison, so that an unwritten element counts as wrong.
            double difference = Math.abs(values[i] - value);
            largestDifference = Math.max(largestDifference, difference);
            largestExpected = Math.max(largestExpected, Math.abs(value));
        }
        if (largestDifference <= TOLERANCE * largestExpected) {
            tally.completed.increment();
        } else {
            tally.wrong.increment();
            problem(String.format(Locale.ROOT, "%s: wrong answer, largest difference %.3g, largest expected value "
                    + "%.3g (relative %.3g)", request, largestDifference, largestExpected,
                    largestDifference / largestExpected), null);
        }
    }

    /** Waits until every request submitted has been counted; the engine's own deadline bounds the wait. */
    private void drain() throws InterruptedException {
        while (inFlight.get() > 0) {
            Thread.sleep(1);
        }
    }

    /** A sample, taken with no request in flight, after a full GC and glibc trim as {@link Soak} takes them. */
    private Sample sample(InferenceEngine engine, long start) {
        System.gc();
        Soak.NativeMemory.trim();
        Runtime runtime = Runtime.getRuntime();
        CudaDevice.MemoryInfo memory = device.memoryInfo();
        return new Sample((System.nanoTime() - start) / 1e9, engine.metrics(), load.sent.sum(), load.shed.sum(),
                load.wrong.sum(), load.failed.sum(), Soak.rssBytes(), Soak.NativeMemory.jvmCommittedBytes(),
                runtime.totalMemory() - runtime.freeMemory(), memory.totalBytes() - memory.freeBytes(),
                Cuda.liveResources());
    }

    private static void printProgress(Sample sample) {
        EngineMetrics engine = sample.engine();
        LiveResources live = sample.live();
        System.out.printf(Locale.ROOT, "soak --serving: %4.0f s  %,d sent  %,d shed  engine %,d completed %,d failed  "
                + "%,d batches  p50 %s ms  p99 %s ms  %d wrong  %d unexpected  RSS %s MiB  device used %s MiB  "
                + "live %d buffers, %d streams, %d graphs, %d execs%n", sample.seconds(), sample.sent(), sample.shed(),
                engine.completed(), engine.failed(), engine.batches(), millis(engine.latencyP50Micros()),
                millis(engine.latencyP99Micros()), sample.wrong(), sample.failed(), Soak.mib(sample.rssBytes()),
                Soak.mib(sample.deviceUsedBytes()), live.deviceBuffers(), live.streams(), live.graphs(),
                live.graphExecs());
    }

    /** Prints the samples and the verdict, writes the report if asked; whether the soak passed. */
    private boolean conclude(Instant started, List<Sample> samples, LiveResources before, LiveResources after) {
        boolean live = after.equals(before);
        List<String[]> checks = checks(samples, Soak.criterion("live resources after close",
                live ? "as at the start" : Soak.difference(before, after), "as at the start", live));
        boolean pass = checks.stream().allMatch(c -> c[3].equals("yes"));
        String verdict = pass ? "PASS" : "FAIL";
        System.out.println();
        System.out.print(Soak.table(sampleTable(samples), false));
        System.out.println();
        System.out.print(Soak.table(tallyTable(), false));
        System.out.println();
        String nativeGrowth = Soak.printVerdict("soak --serving", verdict, warmupSeconds(), checks);
        if (options.report() != null) {
            writeReport(started, verdict, checks, samples, loadMetrics, nativeGrowth);
            System.out.println("soak --serving: report written to " + options.report());
        }
        return pass;
    }

    /**
     * The verdict's rows: answers, failures, enough samples after warm-up to judge growth, RSS and
     * device-memory growth over them, then {@code liveCheck}.
     */
    private List<String[]> checks(List<Sample> samples, String[] liveCheck) {
        List<Sample> steady = samples.stream().filter(s -> s.seconds() > warmupSeconds()).toList();
        long wrong = calibration.wrong.sum() + load.wrong.sum();
        long failed = calibration.failed.sum() + load.failed.sum();
        long answered = load.completed.sum();
        List<String[]> checks = new ArrayList<>(List.of(
                Soak.criterion("wrong answers", Long.toString(wrong), "0", wrong == 0),
                Soak.criterion("unexpected failures", Long.toString(failed), "0", failed == 0),
                Soak.criterion("load requests answered right", String.format(Locale.ROOT, "%,d", answered), "> 0",
                        answered > 0),
                Soak.criterion("samples after warm-up", Integer.toString(steady.size()), ">= 3", steady.size() >= 3)));
        if (steady.isEmpty()) {
            checks.add(Soak.criterion("RSS growth", "no sample after warm-up", "< 1%", false));
            checks.add(Soak.criterion("device memory used, growth", "no sample after warm-up", "< 1%", false));
        } else {
            Soak.Growth rss = Soak.growth(steady, Sample::rssBytes);
            Soak.Growth jvmNative = Soak.growth(steady, Sample::jvmNativeBytes);
            Soak.Growth deviceUsed = Soak.growth(steady, Sample::deviceUsedBytes);
            checks.add(Soak.criterion("RSS growth", Soak.growthText(rss) + String.format(Locale.ROOT,
                    "; JVM native memory %+.1f MiB", (jvmNative.to() - jvmNative.from()) / (double) (1 << 20)), "< 1%",
                    rss.percent() < Soak.MAX_GROWTH_PERCENT));
            checks.add(Soak.criterion("device memory used, growth", Soak.growthText(deviceUsed), "< 1%",
                    deviceUsed.percent() < Soak.MAX_GROWTH_PERCENT));
        }
        checks.add(liveCheck);
        return checks;
    }

    /**
     * Rewrites the report with the samples so far, so that a run cut short still leaves its
     * evidence; the final report replaces it.
     */
    private void writeProgress(Instant started, List<Sample> samples) {
        if (options.report() == null || samples.stream().noneMatch(s -> s.seconds() > warmupSeconds())) {
            return;
        }
        String verdict = String.format(Locale.ROOT, "INCOMPLETE, %.0f s of %.0f s (rewritten every sample until "
                + "the end)", samples.getLast().seconds(), options.nanos() / 1e9);
        String[] pending = {"live resources after close", "checked at the end", "as at the start", "pending"};
        writeReport(started, verdict, checks(samples, pending), samples, samples.getLast().engine(),
                "Native Memory Tracking's categories are reported at the end.\n");
    }

    /** The first fifth of the run, and at least 30 s in runs of 2 minutes or more: JIT compilation settles. */
    private double warmupSeconds() {
        return Math.max(0.2 * options.nanos() / 1e9, options.minutes() >= 2 ? 30 : 0);
    }

    private static List<String[]> sampleTable(List<Sample> samples) {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"t (s)", "sent", "shed", "engine completed", "engine failed", "batches", "p50 (ms)",
                "p99 (ms)", "wrong", "unexpected", "RSS (MiB)", "JVM native (MiB)", "heap after GC (MiB)",
                "device used (MiB)", "buffers", "buffer MiB", "pinned", "streams", "events", "libraries", "graphs",
                "execs"});
        for (Sample s : samples) {
            EngineMetrics engine = s.engine();
            LiveResources live = s.live();
            rows.add(new String[] {String.format(Locale.ROOT, "%.0f", s.seconds()), Long.toString(s.sent()),
                    Long.toString(s.shed()), Long.toString(engine.completed()), Long.toString(engine.failed()),
                    Long.toString(engine.batches()), millis(engine.latencyP50Micros()),
                    millis(engine.latencyP99Micros()), Long.toString(s.wrong()), Long.toString(s.failed()),
                    Soak.mib(s.rssBytes()), Soak.mib(s.jvmNativeBytes()),
                    Soak.mib(s.heapBytes()), Soak.mib(s.deviceUsedBytes()), Long.toString(live.deviceBuffers()),
                    Soak.mib(live.deviceBytes()), Long.toString(live.pinnedBuffers()), Long.toString(live.streams()),
                    Long.toString(live.events()), Long.toString(live.libraries()), Long.toString(live.graphs()),
                    Long.toString(live.graphExecs())});
        }
        return rows;
    }

    private List<String[]> tallyTable() {
        return List.of(new String[] {"phase", "sent", "cancel asked", "short deadline given", "answered right",
                "cancelled", "timed out", "rejected (queue full)", "shed (" + MAX_IN_FLIGHT + " in flight)", "wrong",
                "failed"},
                calibration.row("calibration"), load.row("load"));
    }

    private void writeReport(Instant started, String verdict, List<String[]> checks, List<Sample> samples,
            EngineMetrics engine, String nativeGrowth) {
        DeviceProperties properties = device.properties();
        double loadSeconds = (loadNanos > 0 ? loadNanos : (long) (samples.getLast().seconds() * 1e9)) / 1e9;
        StringBuilder md = new StringBuilder();
        md.append("# cudagraph4j serving soak: ").append(verdict).append("\n\n");
        md.append(Soak.table(List.of(new String[] {"run", ""},
                new String[] {"device", String.format(Locale.ROOT, "%s (device 0, compute capability %d.%d, %d SMs, "
                        + "%.0f GiB)", properties.name(), properties.major(), properties.minor(),
                        properties.multiprocessorCount(), properties.totalMemoryBytes() / (double) (1L << 30))},
                new String[] {"CUDA driver / runtime", Soak.version(Cuda.driverVersion()) + " / "
                        + Soak.version(Cuda.runtimeVersion())},
                new String[] {"Java", Runtime.version() + ", heap " + Soak.mib(Runtime.getRuntime().maxMemory())
                        + " MiB"},
                new String[] {"started (UTC)", started.toString()},
                new String[] {"duration", Soak.minutes(options.minutes()) + " min of load, after "
                        + TimeUnit.NANOSECONDS.toSeconds(CALIBRATION_NANOS) + " s of calibration"},
                new String[] {"seed", Long.toString(options.seed())},
                new String[] {"model", LAYERS + " x (Linear(" + WIDTH + ", " + WIDTH + ") + ReLU), fused epilogue; "
                        + "weights and biases uniform in ±1/√" + WIDTH},
                new String[] {"engine", String.format(Locale.ROOT, "ServingOptions.defaults() with a queue of %,d "
                        + "pieces: buckets %s, %d lanes, %d s request timeout, %s capture",
                        ENGINE_OPTIONS.queueCapacity(), ENGINE_OPTIONS.ladder().sizes(), ENGINE_OPTIONS.lanes(),
                        ENGINE_OPTIONS.requestTimeout().toSeconds(),
                        ENGINE_OPTIONS.capturePolicy().name().toLowerCase(Locale.ROOT))},
                new String[] {"saturation (calibration)", String.format(Locale.ROOT, "%.0f requests/s, closed loop "
                        + "of %d in flight, measured after %d s", saturation, CALIBRATION_IN_FLIGHT,
                        TimeUnit.NANOSECONDS.toSeconds(CALIBRATION_SETTLE_NANOS))},
                new String[] {"load", String.format(Locale.ROOT, "open-loop Poisson arrivals at a rate redrawn every "
                        + "%d s, uniformly from %.0f%% to %.0f%% of saturation (%.0f to %.0f requests/s); offered "
                        + "%.0f requests/s on average", TimeUnit.NANOSECONDS.toSeconds(RATE_PERIOD_NANOS),
                        100 * LOW_LOAD, 100 * HIGH_LOAD, LOW_LOAD * saturation, HIGH_LOAD * saturation,
                        loadSeconds > 0 ? load.sent.sum() / loadSeconds : 0)}), true));
        Soak.appendVerdict(md, checks);
        md.append(String.format(Locale.ROOT, "%nGrowth runs from the median of the first three samples after "
                + "warm-up (the first %.0f s) to the median of the last three. Device memory used is the device's "
                + "total minus free, so other processes on the GPU count too. Wrong answers and unexpected failures "
                + "count calibration's requests as well as the load's.%n", warmupSeconds()));
        Soak.appendNativeMemory(md, nativeGrowth);
        md.append("\n## Requests\n\n");
        md.append("As the client saw them. A cancelled request or one given a short deadline may still be "
                + "answered, and is then checked like any other.\n\n");
        md.append(Soak.table(tallyTable(), true));
        md.append("\nThe load's engine, from its metrics (latency from submission to answer):\n\n");
        md.append(Soak.table(List.of(new String[] {"metric", "value"},
                new String[] {"requests accepted", String.format(Locale.ROOT, "%,d", engine.requests())},
                new String[] {"completed / failed (cancellations and timeouts included)",
                        String.format(Locale.ROOT, "%,d / %,d", engine.completed(), engine.failed())},
                new String[] {"latency p50 / p99 / p99.9", String.format(Locale.ROOT, "%s / %s / %s ms",
                        millis(engine.latencyP50Micros()), millis(engine.latencyP99Micros()),
                        millis(engine.latencyP999Micros()))},
                new String[] {"batches (graph / eager)", String.format(Locale.ROOT, "%,d (%,d / %,d)",
                        engine.batches(), engine.graphLaunches(), engine.eagerLaunches())},
                new String[] {"rows served / padding rows", String.format(Locale.ROOT, "%,d / %,d", engine.rows(),
                        engine.paddedRows())}), true));
        md.append("\n## Workload\n\n");
        md.append(String.format(Locale.ROOT, """
                - requests of 1 to %d rows, uniformly; those above the largest bucket (%d) are split into pieces
                - inputs: %d blocks of %d rows of random floats of magnitude 0.5 to 2 with a random sign (never \
                zero), whose float64 answers are computed once on the host; a request takes a random block and a \
                random run of rows within it
                - the three submit forms in turn: `submit(float[])` on a copy of the rows; `submit(MemorySegment)` \
                on a heap segment; `submit(rows, output)` on native rows with an output filled with NaN before \
                submission: a slot of a shared arena, reused once its request is answered, or for a request that \
                is cancelled or given a deadline, a fresh `Arena.ofShared()`, closed once the request has ended \
                (a lane may still be copying into it)
                - %.0f%% of requests cancelled right after submission, %.0f%% given a client deadline \
                (`orTimeout`) of %d to %d µs: each must end with the right answer or its cancellation or timeout
                - every answer is compared with the float64 answer: right when the largest absolute difference is \
                at most %.0e times the largest absolute expected value
                - every 5 s the load pauses until no request is in flight, then a full GC, glibc trim and sample; \
                arrivals restart after the pause, and the offered rate leaves the pauses out
                """, MAX_ROWS, ENGINE_OPTIONS.ladder().largest(), POOL_BLOCKS, MAX_ROWS, 100 * CANCEL_SHARE,
                100 * SHORT_TIMEOUT_SHARE, MIN_CLIENT_TIMEOUT_MICROS, MAX_CLIENT_TIMEOUT_MICROS, TOLERANCE));
        md.append("\n## Samples\n\n");
        md.append("Of the load's engine, every 5 s with no request in flight and after a full GC; p50 and p99 are "
                + "the engine's, since it started. Live resources then are the engine's lanes, the weights and the "
                + "kernel library.\n\n");
        md.append(Soak.table(sampleTable(samples), true));
        Soak.appendProblems(md, problems, MAX_PRINTED);
        Soak.writeReport(options.report(), md);
    }

    private static String millis(long micros) {
        return String.format(Locale.ROOT, "%.2f", micros / 1000.0);
    }

    private void problem(String message, Throwable cause) {
        if (reported.getAndIncrement() < MAX_PRINTED) {
            problems.add(message + (cause == null ? "" : ": " + cause));
            System.err.println("soak --serving: " + message);
            if (cause != null) {
                cause.printStackTrace();
            }
        }
    }
}
