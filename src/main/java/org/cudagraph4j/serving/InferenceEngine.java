package org.cudagraph4j.serving;

import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaException;

/**
 * Serves a model to many request threads through bucketed CUDA graphs: requests of any number of
 * rows are gathered into batches, each batch runs on the smallest bucket that holds it (one
 * pinned host-to-device copy, one graph launch, one device-to-host copy), and each request's
 * future completes with exactly its own output rows.
 *
 * <pre>{@code
 * try (InferenceEngine engine = InferenceEngine.start(device, 512, 512,
 *         d -> LaneModel.of(new Mlp(kernels, layers, 256), Linear.Mode.FUSED), ServingOptions.defaults())) {
 *     float[] answer = engine.submit(rows).join();
 * }
 * }</pre>
 *
 * <p>One dispatcher thread gathers queued requests into a batch until it holds the largest bucket
 * or the first request has waited {@link ServingOptions#maxWait()}, then hands it to an idle lane;
 * each lane (its own stream, buffers, graphs and model copy) runs batches on its own platform
 * thread, so no thread blocks per request and the lanes' copies and kernels overlap. A request of
 * more rows than the largest bucket is split into pieces, served in separate batches and joined
 * in order. The queue is bounded ({@link QueueFullException}); every request has a deadline
 * ({@link java.util.concurrent.TimeoutException}); cancelling a future drops its rows without
 * touching anyone else's. A CUDA error fails exactly the requests of the batch it hit; an error
 * that poisons the context makes the engine unhealthy ({@link #isHealthy()}) and fails every later
 * request at once with {@link EngineUnhealthyException}.
 *
 * <p>Futures complete on the engine's lane threads: a callback chained without an executor runs
 * there and holds up that lane, so give slow callbacks an executor ({@code thenApplyAsync}).
 *
 * <p>Thread safety: {@link #submit} may be called from any number of platform or virtual threads;
 * {@link #close()} from any thread but the engine's own (a future's callback, say).
 */
public final class InferenceEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(InferenceEngine.class.getName());
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final AtomicInteger ENGINES = new AtomicInteger();

    private final int inputWidth;
    private final int outputWidth;
    private final ServingOptions options;
    private final BucketLadder ladder;
    private final List<Lane> lanes;
    private final LinkedBlockingQueue<Piece> queue = new LinkedBlockingQueue<>();
    private final Semaphore capacity;
    private final BlockingQueue<Worker> idle;
    private final List<Worker> workers = new ArrayList<>();
    private final Thread dispatcher;
    /** Submissions hold it shared; close takes it exclusively, so nothing is queued after closing. */
    private final ReentrantReadWriteLock admission = new ReentrantReadWriteLock();
    private volatile boolean closing;
    /** Set once close has waited its timeout: what is still queued fails instead of running. */
    private volatile boolean abandoning;
    private volatile CudaException poison;
    private boolean closed;

    private final LongAdder requests = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder completed = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder batches = new LongAdder();
    private final LongAdder graphLaunches = new LongAdder();
    private final LongAdder eagerLaunches = new LongAdder();
    private final LongAdder rowsServed = new LongAdder();
    private final LongAdder paddedRows = new LongAdder();
    private final LongAdder queueNanos = new LongAdder();
    private final LongAdder computeNanos = new LongAdder();
    private final Map<Integer, AtomicLong> perBucket = new TreeMap<>();
    private final LatencyHistogram latency = new LatencyHistogram();

    /** One request: its rows, its output, and how many of its pieces are still to be served. */
    private static final class Request {
        final float[] input;
        final float[] output;
        final AtomicInteger piecesLeft;
        final CompletableFuture<float[]> future = new CompletableFuture<>();
        final long submittedNanos = System.nanoTime();

        Request(float[] input, int outputFloats, int pieces) {
            this.input = input;
            this.output = new float[outputFloats];
            this.piecesLeft = new AtomicInteger(pieces);
        }
    }

    /** Rows {@code [firstRow, firstRow + rows)} of a request: what a batch carries. */
    private record Piece(Request request, int firstRow, int rows, ServingEvents.QueueWait queueWait) {
        Piece(Request request, int firstRow, int rows) {
            this(request, firstRow, rows, new ServingEvents.QueueWait());
            queueWait.rows = rows;
            queueWait.begin();
        }
    }

    InferenceEngine(int inputWidth, int outputWidth, List<? extends Lane> lanes, ServingOptions options) {
        this.inputWidth = inputWidth;
        this.outputWidth = outputWidth;
        this.options = options;
        this.ladder = options.ladder();
        this.lanes = List.copyOf(lanes);
        this.capacity = new Semaphore(options.queueCapacity());
        this.idle = new ArrayBlockingQueue<>(lanes.size());
        for (int size : ladder.sizes()) {
            perBucket.put(size, new AtomicLong());
        }
        int engine = ENGINES.incrementAndGet();
        for (int i = 0; i < this.lanes.size(); i++) {
            Worker worker = new Worker(i, this.lanes.get(i));
            workers.add(worker);
            idle.add(worker);
            worker.thread = Thread.ofPlatform().name("inference-" + engine + "-lane-" + i).daemon().start(worker);
        }
        dispatcher = Thread.ofPlatform().name("inference-" + engine + "-dispatcher").daemon().start(this::dispatch);
        LOG.log(Level.INFO, "inference engine {0} serving: {1} lane(s) on device(s) {2}, buckets {3}, {4} capture",
                engine, this.lanes.size(), this.lanes.stream().map(Lane::deviceOrdinal).distinct().sorted().toList(),
                ladder.sizes(), options.capturePolicy());
    }

    /**
     * Starts an engine on {@code device}, as {@link #start(List, int, int, LaneModel.Factory,
     * ServingOptions)} does with that one device.
     *
     * @param device the device to serve on
     * @param inputWidth floats per input row, at least 1
     * @param outputWidth floats per output row, at least 1
     * @param models makes one model copy per lane; the engine closes them
     * @param options batching, capture and limits
     * @return the running engine, which the caller closes
     * @throws IllegalArgumentException if a width is below 1
     * @throws NullPointerException if an argument is null
     * @throws org.cudagraph4j.CudaException if allocating or capturing fails; what was made is closed
     */
    public static InferenceEngine start(CudaDevice device, int inputWidth, int outputWidth, LaneModel.Factory models,
            ServingOptions options) {
        return start(List.of(Objects.requireNonNull(device, "device")), inputWidth, outputWidth, models, options);
    }

    /**
     * Starts an engine on several devices: {@link ServingOptions#lanes()} lanes on each (made in
     * turn across the devices, each with a model copy from {@code models} on its device) and, with
     * {@link CapturePolicy#EAGER}, every bucket of every lane captured before returning. A batch
     * goes to whichever lane is idle first, so busier devices take less.
     *
     * @param devices the devices to serve on, at least one, no device twice
     * @param inputWidth floats per input row, at least 1
     * @param outputWidth floats per output row, at least 1
     * @param models makes one model copy per lane; the engine closes them
     * @param options batching, capture and limits
     * @return the running engine, which the caller closes
     * @throws IllegalArgumentException if a width is below 1, or {@code devices} is empty or repeats a device
     * @throws NullPointerException if an argument is null
     * @throws org.cudagraph4j.CudaException if allocating or capturing fails; what was made is closed
     */
    public static InferenceEngine start(List<CudaDevice> devices, int inputWidth, int outputWidth,
            LaneModel.Factory models, ServingOptions options) {
        Objects.requireNonNull(models, "models");
        Objects.requireNonNull(options, "options");
        if (devices.isEmpty() || devices.stream().distinct().count() != devices.size()) {
            throw new IllegalArgumentException("an engine needs at least one device, each once, got " + devices);
        }
        if (inputWidth < 1 || outputWidth < 1) {
            throw new IllegalArgumentException("row widths must be at least 1, got " + inputWidth + " and "
                    + outputWidth);
        }
        List<Lane> lanes = new ArrayList<>();
        try {
            for (int i = 0; i < options.lanes() * devices.size(); i++) {
                CudaDevice device = devices.get(i % devices.size());
                device.makeCurrent();
                LaneModel model = Objects.requireNonNull(models.create(device), "the model factory returned null");
                try {
                    lanes.add(new CudaLane(i, device, model, inputWidth, outputWidth, options.ladder(),
                            options.capturePolicy(), options.graphArchives()));
                } catch (RuntimeException e) {
                    model.close();
                    throw e;
                }
            }
            return new InferenceEngine(inputWidth, outputWidth, lanes, options);
        } catch (RuntimeException e) {
            lanes.forEach(Lane::close);
            throw e;
        }
    }

    /**
     * Queues a request.
     *
     * @param rows {@code n * inputWidth} floats, row after row, {@code n >= 1}; the engine copies them
     * @return the future of the {@code n * outputWidth} output floats. It fails with
     *     {@link QueueFullException} at once if the queue is full, {@link EngineUnhealthyException} if the engine is
     *     unhealthy, {@link IllegalStateException} if it is closed, a {@link java.util.concurrent.TimeoutException}
     *     past {@link ServingOptions#requestTimeout()}, or the {@link CudaException} of its batch
     * @throws IllegalArgumentException if {@code rows} is empty or not a whole number of rows
     * @throws NullPointerException if {@code rows} is null
     */
    public CompletableFuture<float[]> submit(float[] rows) {
        Objects.requireNonNull(rows, "rows");
        if (rows.length == 0 || rows.length % inputWidth != 0) {
            throw new IllegalArgumentException("a request is a whole number of rows of " + inputWidth
                    + " floats, got " + rows.length + " floats");
        }
        return enqueue(rows.clone());
    }

    /**
     * Queues a request whose rows are in native or heap memory, as {@link #submit(float[])} does.
     *
     * @param rows {@code n * inputWidth} floats, row after row; read before this returns
     * @return the future of the {@code n * outputWidth} output floats, as for {@link #submit(float[])}
     * @throws IllegalArgumentException if {@code rows} is empty or not a whole number of rows
     * @throws NullPointerException if {@code rows} is null
     */
    public CompletableFuture<float[]> submit(MemorySegment rows) {
        Objects.requireNonNull(rows, "rows");
        long rowBytes = (long) Float.BYTES * inputWidth;
        if (rows.byteSize() == 0 || rows.byteSize() % rowBytes != 0) {
            throw new IllegalArgumentException("a request is a whole number of rows of " + rowBytes + " bytes, got "
                    + rows.byteSize() + " bytes");
        }
        return enqueue(rows.toArray(ValueLayout.JAVA_FLOAT));
    }

    private CompletableFuture<float[]> enqueue(float[] input) {
        int rowCount = input.length / inputWidth;
        List<Integer> pieces = ladder.pieces(rowCount);
        admission.readLock().lock();
        try {
            CudaException poisoned = poison;
            if (poisoned != null) {
                return CompletableFuture.failedFuture(new EngineUnhealthyException(poisoned));
            }
            if (closing) {
                return CompletableFuture.failedFuture(new IllegalStateException("the inference engine is closed"));
            }
            if (!capacity.tryAcquire(pieces.size())) {
                rejected.increment();
                return CompletableFuture.failedFuture(new QueueFullException(pieces.size(), options.queueCapacity()));
            }
            Request request = new Request(input, rowCount * outputWidth, pieces.size());
            request.future.orTimeout(options.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
            request.future.whenComplete((result, failure) -> finished(request, failure));
            int first = 0;
            for (int size : pieces) {
                queue.add(new Piece(request, first, size));
                first += size;
            }
            requests.increment();
            return request.future;
        } finally {
            admission.readLock().unlock();
        }
    }

    private void finished(Request request, Throwable failure) {
        if (failure == null) {
            completed.increment();
            latency.record(TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - request.submittedNanos));
        } else {
            failed.increment();
        }
    }

    /** The dispatcher: gathers batches and hands each to an idle lane, until closing has drained the queue. */
    private void dispatch() {
        Piece carried = null;
        try {
            while (true) {
                Piece first = carried != null ? carried : take(POLL_NANOS);
                carried = null;
                if (first == null) {
                    if (closing && queue.isEmpty()) {
                        return;
                    }
                    continue;
                }
                if (!servable(first)) {
                    continue;
                }
                List<Piece> batch = new ArrayList<>(List.of(first));
                int rows = first.rows();
                long deadline = System.nanoTime() + options.maxWait().toNanos();
                while (rows < ladder.largest()) {
                    long wait = deadline - System.nanoTime();
                    Piece next = take(wait > 0 && !closing ? wait : 0);
                    if (next == null) {
                        break;
                    }
                    if (!servable(next)) {
                        continue;
                    }
                    if (rows + next.rows() > ladder.largest()) {
                        carried = next;
                        break;
                    }
                    batch.add(next);
                    rows += next.rows();
                }
                idle.take().assigned.add(batch);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (carried != null) {
                fail(List.of(carried), new IllegalStateException("the inference engine closed before serving it"));
            }
        }
    }

    /** The next queued piece, waiting up to {@code nanos}; its queue slot is free from here on. */
    private Piece take(long nanos) throws InterruptedException {
        Piece piece = nanos > 0 ? queue.poll(nanos, TimeUnit.NANOSECONDS) : queue.poll();
        if (piece != null) {
            capacity.release();
            piece.queueWait().commit();
        }
        return piece;
    }

    /**
     * Whether a piece taken from the queue should run. A piece of a request that has already
     * finished (timed out, cancelled, failed) is dropped; on an unhealthy or abandoning engine, the
     * request fails instead.
     */
    private boolean servable(Piece piece) {
        if (piece.request().future.isDone()) {
            return false;
        }
        CudaException poisoned = poison;
        if (poisoned != null) {
            piece.request().future.completeExceptionally(new EngineUnhealthyException(poisoned));
            return false;
        }
        if (abandoning) {
            piece.request().future.completeExceptionally(
                    new IllegalStateException("the inference engine closed before serving it"));
            return false;
        }
        return true;
    }

    /** A lane's thread: runs the batches the dispatcher assigns and, when idle under lazy capture, captures. */
    private final class Worker implements Runnable {
        private final int index;
        private final Lane lane;
        private final BlockingQueue<List<Piece>> assigned = new ArrayBlockingQueue<>(1);
        /** This lane's share of the counters, summed per device by {@link InferenceEngine#metrics()}. */
        private final LongAdder batchesRun = new LongAdder();
        private final LongAdder rowsRun = new LongAdder();
        private volatile boolean stopping;
        private Thread thread;

        Worker(int index, Lane lane) {
            this.index = index;
            this.lane = lane;
        }

        @Override
        public void run() {
            lane.bind();
            boolean capturing = options.capturePolicy() == CapturePolicy.LAZY;
            while (true) {
                List<Piece> batch;
                try {
                    batch = capturing ? assigned.poll() : assigned.poll(POLL_NANOS, TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    return;
                }
                if (batch == null) {
                    if (stopping) {
                        return;
                    }
                    if (capturing) {
                        capturing = captureOne();
                    }
                    continue;
                }
                execute(batch);
                idle.add(this);
            }
        }

        private boolean captureOne() {
            try {
                return lane.captureNext();
            } catch (CudaException e) {
                if (e.isSticky()) {
                    poison(e);
                } else {
                    LOG.log(Level.WARNING, "lazy capture failed; the lane keeps serving eagerly", e);
                }
                return false;
            }
        }

        private void execute(List<Piece> batch) {
            int rows = batch.stream().mapToInt(Piece::rows).sum();
            int bucket = ladder.bucketFor(rows);
            float[] input = new float[rows * inputWidth];
            int at = 0;
            for (Piece piece : batch) {
                System.arraycopy(piece.request().input, piece.firstRow() * inputWidth, input, at * inputWidth,
                        piece.rows() * inputWidth);
                at += piece.rows();
            }
            boolean graph = lane.hasGraph(bucket);
            ServingEvents.Batch event = new ServingEvents.Batch();
            event.lane = index;
            event.bucket = bucket;
            event.rows = rows;
            event.graph = graph;
            event.begin();
            long started = System.nanoTime();
            float[] output;
            try {
                output = lane.run(bucket, input, rows);
                computeNanos.add(System.nanoTime() - started);
                event.succeeded = true;
                event.commit();
            } catch (CudaException e) {
                event.commit();
                if (e.isSticky()) {
                    poison(e); // first: whoever sees this failure must find the engine unhealthy
                }
                fail(batch, e);
                return;
            } catch (RuntimeException | Error e) {
                event.commit();
                // The lane stays in service: one bad batch must not stop the engine.
                LOG.log(Level.WARNING, "a batch failed", e);
                fail(batch, e);
                return;
            }
            if (output.length != rows * outputWidth) {
                fail(batch, new IllegalStateException("the lane returned " + output.length + " floats for " + rows
                        + " rows of " + outputWidth));
                return;
            }
            batches.increment();
            (graph ? graphLaunches : eagerLaunches).increment();
            rowsServed.add(rows);
            paddedRows.add(bucket - rows);
            perBucket.get(bucket).incrementAndGet();
            batchesRun.increment();
            rowsRun.add(rows);
            at = 0;
            for (Piece piece : batch) {
                Request request = piece.request();
                queueNanos.add(started - request.submittedNanos);
                System.arraycopy(output, at * outputWidth, request.output, piece.firstRow() * outputWidth,
                        piece.rows() * outputWidth);
                at += piece.rows();
                if (request.piecesLeft.decrementAndGet() == 0) {
                    request.future.complete(request.output);
                }
            }
        }
    }

    private static void fail(List<Piece> batch, Throwable failure) {
        for (Piece piece : batch) {
            piece.request().future.completeExceptionally(failure);
        }
    }

    private void poison(CudaException e) {
        if (poison == null) {
            poison = e;
            LOG.log(Level.ERROR, "inference engine unhealthy; every later request fails. Restart the process", e);
        }
    }

    /**
     * Whether the engine serves: false once an error has poisoned its CUDA context.
     *
     * @return true until then
     */
    public boolean isHealthy() {
        return poison == null;
    }

    /**
     * The error that made the engine unhealthy.
     *
     * @return it, or empty while the engine is healthy
     */
    public Optional<CudaException> failure() {
        return Optional.ofNullable(poison);
    }

    /**
     * The graphs captured so far, per lane and bucket: capture time, instantiate time, device memory.
     *
     * @return one report per captured bucket of each lane
     */
    public List<CaptureReport> captureReports() {
        return lanes.stream().flatMap(lane -> lane.reports().stream()).toList();
    }

    /**
     * The counters so far.
     *
     * @return a snapshot
     */
    public EngineMetrics metrics() {
        Map<Integer, Long> buckets = new TreeMap<>();
        perBucket.forEach((size, count) -> buckets.put(size, count.get()));
        Map<Integer, Long> deviceBatches = new TreeMap<>();
        Map<Integer, Long> deviceRows = new TreeMap<>();
        for (Worker worker : workers) {
            deviceBatches.merge(worker.lane.deviceOrdinal(), worker.batchesRun.sum(), Long::sum);
            deviceRows.merge(worker.lane.deviceOrdinal(), worker.rowsRun.sum(), Long::sum);
        }
        return new EngineMetrics(requests.sum(), rejected.sum(), completed.sum(), failed.sum(), batches.sum(),
                graphLaunches.sum(), eagerLaunches.sum(), rowsServed.sum(), paddedRows.sum(),
                options.queueCapacity() - capacity.availablePermits(), Map.copyOf(buckets),
                latency.percentile(0.5), latency.percentile(0.99), latency.percentile(0.999),
                Collections.unmodifiableMap(deviceBatches), Collections.unmodifiableMap(deviceRows),
                TimeUnit.NANOSECONDS.toMicros(queueNanos.sum()), TimeUnit.NANOSECONDS.toMicros(computeNanos.sum()));
    }

    /**
     * Stops taking requests, serves what is queued for up to {@link ServingOptions#closeTimeout()},
     * fails the rest with {@link IllegalStateException}, waits for the running batches, and frees
     * every lane. Idempotent.
     *
     * @throws IllegalStateException if called on one of the engine's threads, which it would wait for
     */
    @Override
    public void close() {
        Thread self = Thread.currentThread();
        if (self == dispatcher || workers.stream().anyMatch(worker -> worker.thread == self)) {
            throw new IllegalStateException("close() on one of the engine's own threads (in a future's callback?) "
                    + "would wait for itself; close the engine from another thread");
        }
        admission.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            closing = true;
        } finally {
            admission.writeLock().unlock();
        }
        try {
            dispatcher.join(options.closeTimeout());
            if (dispatcher.isAlive()) {
                abandoning = true;
                dispatcher.join();
            }
            for (Worker worker : workers) {
                worker.stopping = true;
            }
            for (Worker worker : workers) {
                worker.thread.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lanes.forEach(Lane::close);
            LOG.log(Level.INFO, "inference engine closed: {0}", metrics());
        }
    }
}
