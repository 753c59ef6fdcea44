package org.cudagraph4j.serving;

import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;
import org.cudagraph4j.error.CudaException;

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
 * <p>Batching is work-conserving: each lane (its own stream, buffers, graphs and model copy, on a
 * platform thread of its own) takes requests from one queue as soon as it is free, so a request
 * that finds a lane idle starts at once, and a batch is whatever queued while every lane was busy
 * (with {@link ServingOptions#maxWait()} above zero, a lane also waits that long for more). A
 * lane copies each request's rows straight into its pinned input staging, at their offset in the
 * batch, and each answer straight from its pinned output staging into the request's result, and
 * completes the futures itself: one copy each way and one thread hand-off each way. A request of
 * more rows than the largest bucket is split into pieces, served in separate batches and joined
 * in order. The queue is bounded ({@link QueueFullException}); every request has a deadline
 * ({@link java.util.concurrent.TimeoutException}); cancelling a future drops its rows without
 * touching anyone else's. A CUDA error fails exactly the requests of the batch it hit; an error
 * that poisons the context makes the engine unhealthy ({@link #isHealthy()}) and fails every later
 * request at once with {@link EngineUnhealthyException}.
 *
 * <p>Rows are FP32 by default; an engine started with {@link ElementType#BFLOAT16} or
 * {@link ElementType#FLOAT16} serves a half-precision model: {@link #submit(float[])} rounds the
 * rows to the format (to nearest even) and widens the answer exactly, and
 * {@link #submit(MemorySegment, MemorySegment)} takes and gives the format's bits unconverted.
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

    private final ElementType elementType;
    private final int inputWidth;
    private final int outputWidth;
    private final long inputRowBytes;
    private final long outputRowBytes;
    private final ServingOptions options;
    private final long maxWaitNanos;
    private final long idleSpinNanos;
    private final BucketLadder ladder;
    private final List<Lane> lanes;
    private final LinkedBlockingQueue<Piece> queue = new LinkedBlockingQueue<>();
    private final Semaphore capacity;
    private final List<Worker> workers = new ArrayList<>();
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

    /**
     * One request: where its rows are read from and its answer written to, what its future
     * completes with, and how many of its pieces are still to be served.
     */
    private static final class Request<T> {
        final MemorySegment input;
        final MemorySegment output;
        final T answer;
        /** What turns the output into the answer once every piece is in (widening halves), or null. */
        final Runnable finish;
        final AtomicInteger piecesLeft;
        final Outcome<T> future;
        final long submittedNanos = System.nanoTime();

        Request(MemorySegment input, MemorySegment output, T answer, Runnable finish, int pieces,
                InferenceEngine engine) {
            this.input = input;
            this.output = output;
            this.answer = answer;
            this.finish = finish;
            this.piecesLeft = new AtomicInteger(pieces);
            this.future = new Outcome<>(engine, submittedNanos);
        }

        void pieceServed() {
            if (piecesLeft.decrementAndGet() == 0) {
                if (finish != null) {
                    finish.run();
                }
                future.complete(answer);
            }
        }
    }

    /**
     * A request's future, which the engine counts as completed or failed before it is done: a client
     * that has its answer (or its failure, its timeout, its cancellation) finds it in
     * {@link #metrics()}. Counted from a dependent stage, it could be seen done first: stages run
     * last registered first, so a client's own would run before the count.
     */
    private static final class Outcome<T> extends CompletableFuture<T> {
        private final InferenceEngine engine;
        private final long submittedNanos;
        private final AtomicBoolean settled = new AtomicBoolean();

        Outcome(InferenceEngine engine, long submittedNanos) {
            this.engine = engine;
            this.submittedNanos = submittedNanos;
        }

        @Override
        public boolean complete(T value) {
            if (!settled.compareAndSet(false, true)) {
                return false;
            }
            engine.completed.increment();
            engine.latency.record(TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - submittedNanos));
            return super.complete(value);
        }

        @Override
        public boolean completeExceptionally(Throwable failure) {
            return settleFailed() && super.completeExceptionally(failure);
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return settleFailed() && super.cancel(mayInterruptIfRunning);
        }

        private boolean settleFailed() {
            if (!settled.compareAndSet(false, true)) {
                return false;
            }
            engine.failed.increment();
            return true;
        }
    }

    /**
     * Rows {@code [firstRow, firstRow + rows)} of a request: what a batch carries. Its queue-wait
     * event is null unless Flight Recorder records it, so that no event is made per piece otherwise.
     */
    private record Piece(Request<?> request, int firstRow, int rows, ServingEvents.QueueWait queueWait) {
        static Piece of(Request<?> request, int firstRow, int rows) {
            ServingEvents.QueueWait event = new ServingEvents.QueueWait();
            if (!event.isEnabled()) {
                return new Piece(request, firstRow, rows, null);
            }
            event.rows = rows;
            event.begin();
            return new Piece(request, firstRow, rows, event);
        }
    }

    InferenceEngine(int inputWidth, int outputWidth, List<? extends Lane> lanes, ServingOptions options) {
        this(ElementType.FLOAT32, inputWidth, outputWidth, lanes, options);
    }

    InferenceEngine(ElementType elementType, int inputWidth, int outputWidth, List<? extends Lane> lanes,
            ServingOptions options) {
        this.elementType = elementType;
        this.inputWidth = inputWidth;
        this.outputWidth = outputWidth;
        this.inputRowBytes = elementType.byteSize() * inputWidth;
        this.outputRowBytes = elementType.byteSize() * outputWidth;
        this.options = options;
        this.maxWaitNanos = options.maxWait().toNanos();
        this.idleSpinNanos = options.idleSpin().toNanos();
        this.ladder = options.ladder();
        this.lanes = List.copyOf(lanes);
        this.capacity = new Semaphore(options.queueCapacity());
        for (int size : ladder.sizes()) {
            perBucket.put(size, new AtomicLong());
        }
        for (Lane lane : this.lanes) {
            if (lane.input().byteSize() < ladder.largest() * inputRowBytes
                    || lane.output().byteSize() < ladder.largest() * outputRowBytes) {
                throw new IllegalArgumentException("a lane's staging holds fewer than the largest bucket's "
                        + ladder.largest() + " rows");
            }
        }
        int engine = ENGINES.incrementAndGet();
        for (int i = 0; i < this.lanes.size(); i++) {
            workers.add(new Worker(i, this.lanes.get(i)));
        }
        for (Worker worker : workers) {
            worker.thread = Thread.ofPlatform().name("inference-" + engine + "-lane-" + worker.index).daemon()
                    .unstarted(worker);
        }
        workers.forEach(worker -> worker.thread.start());
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
     * @throws org.cudagraph4j.error.CudaException if allocating or capturing fails; what was made is closed
     */
    public static InferenceEngine start(CudaDevice device, int inputWidth, int outputWidth, LaneModel.Factory models,
            ServingOptions options) {
        return start(List.of(Objects.requireNonNull(device, "device")), inputWidth, outputWidth, models, options);
    }

    /**
     * Starts an engine on {@code device} for a model whose rows hold {@code elementType}, as
     * {@link #start(List, ElementType, int, int, LaneModel.Factory, ServingOptions)} does with that one device.
     *
     * @param device the device to serve on
     * @param elementType the model's input and output element type: FLOAT32, FLOAT16 or BFLOAT16
     * @param inputWidth elements per input row, at least 1
     * @param outputWidth elements per output row, at least 1
     * @param models makes one model copy per lane; the engine closes them
     * @param options batching, capture and limits
     * @return the running engine, which the caller closes
     * @throws IllegalArgumentException if a width is below 1, or the element type is not FLOAT32, FLOAT16 or
     *     BFLOAT16
     * @throws NullPointerException if an argument is null
     * @throws org.cudagraph4j.error.CudaException if allocating or capturing fails; what was made is closed
     */
    public static InferenceEngine start(CudaDevice device, ElementType elementType, int inputWidth, int outputWidth,
            LaneModel.Factory models, ServingOptions options) {
        return start(List.of(Objects.requireNonNull(device, "device")), elementType, inputWidth, outputWidth, models,
                options);
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
     * @throws org.cudagraph4j.error.CudaException if allocating or capturing fails; what was made is closed
     */
    public static InferenceEngine start(List<CudaDevice> devices, int inputWidth, int outputWidth,
            LaneModel.Factory models, ServingOptions options) {
        return start(devices, ElementType.FLOAT32, inputWidth, outputWidth, models, options);
    }

    /**
     * Starts an engine on several devices for a model whose input and output rows hold
     * {@code elementType}, as {@link #start(List, int, int, LaneModel.Factory, ServingOptions)} does
     * for FP32: each lane's staging and device buffers hold that type, and its model reads and
     * writes it.
     *
     * @param devices the devices to serve on, at least one, no device twice
     * @param elementType the model's input and output element type: FLOAT32, FLOAT16 or BFLOAT16
     * @param inputWidth elements per input row, at least 1
     * @param outputWidth elements per output row, at least 1
     * @param models makes one model copy per lane; the engine closes them
     * @param options batching, capture and limits
     * @return the running engine, which the caller closes
     * @throws IllegalArgumentException if a width is below 1, the element type is not FLOAT32, FLOAT16 or
     *     BFLOAT16, or {@code devices} is empty or repeats a device
     * @throws NullPointerException if an argument is null
     * @throws org.cudagraph4j.error.CudaException if allocating or capturing fails; what was made is closed
     */
    public static InferenceEngine start(List<CudaDevice> devices, ElementType elementType, int inputWidth,
            int outputWidth, LaneModel.Factory models, ServingOptions options) {
        Objects.requireNonNull(elementType, "elementType");
        if (elementType != ElementType.FLOAT32 && elementType != ElementType.FLOAT16
                && elementType != ElementType.BFLOAT16) {
            throw new IllegalArgumentException("an engine serves FLOAT32, FLOAT16 or BFLOAT16 rows, not "
                    + elementType);
        }
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
                    lanes.add(new CudaLane(i, device, model, elementType, inputWidth, outputWidth, options.ladder(),
                            options.capturePolicy(), options.graphArchives()));
                } catch (RuntimeException e) {
                    model.close();
                    throw e;
                }
            }
            return new InferenceEngine(elementType, inputWidth, outputWidth, lanes, options);
        } catch (RuntimeException e) {
            lanes.forEach(Lane::close);
            throw e;
        }
    }

    /**
     * Queues a request. Its rows are read when their batch runs, straight into the lane's pinned
     * staging: leave {@code rows} unchanged until the future completes.
     *
     * @param rows {@code n * inputWidth} floats, row after row, {@code n >= 1}; rounded to nearest even first
     *     when the engine's element type is FLOAT16 or BFLOAT16, which copies them at once
     * @return the future of the {@code n * outputWidth} output floats, widened exactly from a half-precision
     *     model's output. It fails with
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
        float[] answer = new float[rows.length / inputWidth * outputWidth];
        if (elementType == ElementType.FLOAT32) {
            return enqueue(MemorySegment.ofArray(rows), MemorySegment.ofArray(answer), answer, null);
        }
        return enqueueWidened(MemorySegment.ofArray(HalfFloats.fromFloats(rows, elementType)), answer);
    }

    /** Queues half-precision rows whose answer comes back widened into {@code answer} once it is in. */
    private CompletableFuture<float[]> enqueueWidened(MemorySegment input, float[] answer) {
        short[] bits = new short[answer.length];
        return enqueue(input, MemorySegment.ofArray(bits), answer, () -> {
            for (int i = 0; i < bits.length; i++) {
                answer[i] = elementType == ElementType.BFLOAT16 ? HalfFloats.bfloat16ToFloat(bits[i])
                        : HalfFloats.float16ToFloat(bits[i]);
            }
        });
    }

    /**
     * Queues a request whose rows are in native or heap memory, as {@link #submit(float[])} does.
     * Rows that any thread can read (heap memory, or a global, automatic or shared arena's) are
     * read when their batch runs: keep them unchanged, and their arena open, until the future
     * completes (a request whose arena closed first fails with {@link IllegalStateException}).
     * Rows of a confined arena are copied before this returns.
     *
     * @param rows {@code n * inputWidth} elements of the engine's type in native byte order, row after row
     * @return the future of the {@code n * outputWidth} output floats, as for {@link #submit(float[])}
     * @throws IllegalArgumentException if {@code rows} is empty or not a whole number of rows
     * @throws NullPointerException if {@code rows} is null
     */
    public CompletableFuture<float[]> submit(MemorySegment rows) {
        checkRows(rows);
        float[] answer = new float[(int) (rows.byteSize() / inputRowBytes) * outputWidth];
        if (elementType == ElementType.FLOAT32) {
            return enqueue(readable(rows), MemorySegment.ofArray(answer), answer, null);
        }
        return enqueueWidened(readable(rows), answer);
    }

    /**
     * Queues a request whose answer is written into {@code output}, for a server that sends its
     * response from there: the rows are read as {@link #submit(MemorySegment)} reads them, and the
     * answer goes straight from the lane's pinned staging into {@code output}.
     *
     * @param rows {@code n * inputWidth} elements of the engine's type in native byte order, row after row
     * @param output {@code n * outputWidth} elements' room, in the engine's type, writable by any thread (heap memory, or a
     *     global, automatic or shared arena's), left alone until the future completes. A batch
     *     already copying when the future is cancelled or times out may still write it, so give up
     *     a cancelled request's output rather than reuse it at once
     * @return the future, which completes with {@code output} once it holds the answer, or fails as
     *     for {@link #submit(float[])}
     * @throws IllegalArgumentException if {@code rows} is empty or not a whole number of rows, or
     *     {@code output} is read-only, of another size, or confined to a thread
     * @throws NullPointerException if an argument is null
     */
    public CompletableFuture<MemorySegment> submit(MemorySegment rows, MemorySegment output) {
        checkRows(rows);
        Objects.requireNonNull(output, "output");
        long needed = rows.byteSize() / inputRowBytes * outputRowBytes;
        if (output.byteSize() != needed || output.isReadOnly()) {
            throw new IllegalArgumentException("the output of " + rows.byteSize() / inputRowBytes + " rows is a "
                    + "writable segment of " + needed + " bytes, got " + (output.isReadOnly() ? "a read-only one of "
                    : "one of ") + output.byteSize());
        }
        if (!output.isAccessibleBy(workers.getFirst().thread)) {
            throw new IllegalArgumentException("the output is confined to its arena's thread, and the engine's lanes "
                    + "write it: give a segment of heap memory or of a global, automatic or shared arena");
        }
        return enqueue(readable(rows), output, output, null);
    }

    private void checkRows(MemorySegment rows) {
        Objects.requireNonNull(rows, "rows");
        if (rows.byteSize() == 0 || rows.byteSize() % inputRowBytes != 0) {
            throw new IllegalArgumentException("a request is a whole number of rows of " + inputRowBytes
                    + " bytes, got " + rows.byteSize() + " bytes");
        }
    }

    /** {@code rows}, or a heap copy where the lanes could not read them (a confined arena's). */
    private MemorySegment readable(MemorySegment rows) {
        return rows.isAccessibleBy(workers.getFirst().thread) ? rows
                : MemorySegment.ofArray(rows.toArray(ValueLayout.JAVA_BYTE));
    }

    private <T> CompletableFuture<T> enqueue(MemorySegment input, MemorySegment output, T answer, Runnable finish) {
        int rowCount = (int) (input.byteSize() / inputRowBytes);
        int largest = ladder.largest();
        int pieces = (rowCount + largest - 1) / largest;
        admission.readLock().lock();
        try {
            CudaException poisoned = poison;
            if (poisoned != null) {
                return CompletableFuture.failedFuture(new EngineUnhealthyException(poisoned));
            }
            if (closing) {
                return CompletableFuture.failedFuture(new IllegalStateException("the inference engine is closed"));
            }
            if (!capacity.tryAcquire(pieces)) {
                rejected.increment();
                return CompletableFuture.failedFuture(new QueueFullException(pieces, options.queueCapacity()));
            }
            Request<T> request = new Request<>(input, output, answer, finish, pieces, this);
            request.future.orTimeout(options.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
            for (int first = 0; first < rowCount; first += largest) {
                queue.add(Piece.of(request, first, Math.min(largest, rowCount - first)));
            }
            requests.increment();
            return request.future;
        } finally {
            admission.readLock().unlock();
        }
    }

    /** The next queued piece, waiting up to {@code nanos}; its queue slot is free from here on. */
    private Piece take(long nanos) throws InterruptedException {
        Piece piece = nanos > 0 ? queue.poll(nanos, TimeUnit.NANOSECONDS) : queue.poll();
        if (piece != null) {
            capacity.release();
            if (piece.queueWait() != null) {
                piece.queueWait().commit();
            }
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

    /**
     * A lane's thread: takes whatever is queued as its batch whenever it is free, runs it, answers
     * it, and, when idle under lazy capture, captures. It ends once the engine is closing and the
     * queue is empty.
     */
    private final class Worker implements Runnable {
        private final int index;
        private final Lane lane;
        private final List<Piece> batch = new ArrayList<>();
        /** A piece taken that did not fit the last batch: the first of the next. */
        private Piece carried;
        /** This lane's share of the counters, summed per device by {@link InferenceEngine#metrics()}. */
        private final LongAdder batchesRun = new LongAdder();
        private final LongAdder rowsRun = new LongAdder();
        private Thread thread;

        Worker(int index, Lane lane) {
            this.index = index;
            this.lane = lane;
        }

        @Override
        public void run() {
            lane.bind();
            boolean capturing = options.capturePolicy() == CapturePolicy.LAZY;
            try {
                while (true) {
                    Piece first = carried != null ? carried : take(0);
                    carried = null;
                    if (first == null) {
                        first = spin();
                    }
                    if (first == null) {
                        if (capturing) {
                            capturing = captureOne();
                            continue;
                        }
                        if (closing && queue.isEmpty()) { // closing first: once it is set, nothing more is queued
                            return;
                        }
                        first = take(POLL_NANOS);
                        if (first == null) {
                            continue;
                        }
                    }
                    if (servable(first)) {
                        serve(first);
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                if (carried != null) {
                    carried.request().future.completeExceptionally(
                            new IllegalStateException("the inference engine closed before serving it"));
                }
            }
        }

        /**
         * Gathers and runs a batch. Whatever goes wrong (an out-of-memory error in a future's
         * callback, say) fails the batch, not the lane: a lane thread that ended would leave its
         * share of the queue to time out.
         */
        private void serve(Piece first) throws InterruptedException {
            try {
                gather(first);
                execute();
            } catch (RuntimeException | Error e) {
                LOG.log(Level.WARNING, "lane " + index + " failed serving a batch", e);
                fail(batch, e);
            }
        }

        /** Polls the queue for up to the idle spin: a request arriving meanwhile needs no wake-up. */
        private Piece spin() throws InterruptedException {
            if (idleSpinNanos == 0) {
                return null;
            }
            long until = System.nanoTime() + idleSpinNanos;
            do {
                Thread.onSpinWait();
                Piece piece = take(0);
                if (piece != null) {
                    return piece;
                }
            } while (System.nanoTime() - until < 0);
            return null;
        }

        /**
         * Makes the batch: {@code first}, then what is queued, up to the largest bucket, waiting up
         * to {@link ServingOptions#maxWait()} for more where it is above zero.
         */
        private void gather(Piece first) throws InterruptedException {
            batch.clear();
            batch.add(first);
            int rows = first.rows();
            long deadline = System.nanoTime() + maxWaitNanos;
            while (rows < ladder.largest()) {
                Piece next = take(0);
                if (next == null && maxWaitNanos > 0 && !closing) {
                    long wait = deadline - System.nanoTime();
                    next = wait > 0 ? take(wait) : null;
                }
                if (next == null) {
                    return;
                }
                if (!servable(next)) {
                    continue;
                }
                if (rows + next.rows() > ladder.largest()) {
                    carried = next;
                    return;
                }
                batch.add(next);
                rows += next.rows();
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

        /** Copies the batch's rows in, runs it, copies each answer out and completes what is whole. */
        private void execute() {
            int rows = stage();
            if (rows == 0) {
                return;
            }
            int bucket = ladder.bucketFor(rows);
            boolean graph = lane.hasGraph(bucket);
            ServingEvents.Batch event = new ServingEvents.Batch();
            event.lane = index;
            event.bucket = bucket;
            event.rows = rows;
            event.graph = graph;
            event.begin();
            long started = System.nanoTime();
            try {
                lane.run(bucket, rows);
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
            batches.increment();
            (graph ? graphLaunches : eagerLaunches).increment();
            rowsServed.add(rows);
            paddedRows.add(bucket - rows);
            perBucket.get(bucket).incrementAndGet();
            batchesRun.increment();
            rowsRun.add(rows);
            MemorySegment staged = lane.output();
            long at = 0;
            for (Piece piece : batch) {
                Request<?> request = piece.request();
                queueNanos.add(started - request.submittedNanos);
                if (request.future.isDone()) { // cancelled or timed out meanwhile: its output is left alone
                    at += piece.rows();
                    continue;
                }
                try {
                    MemorySegment.copy(staged, at * outputRowBytes, request.output, piece.firstRow() * outputRowBytes,
                            piece.rows() * outputRowBytes);
                    request.pieceServed();
                } catch (RuntimeException e) { // the caller's output arena closed, or another thread holds it
                    request.future.completeExceptionally(new IllegalStateException(
                            "the answer could not be written to the request's output: " + e.getMessage(), e));
                }
                at += piece.rows();
            }
        }

        /**
         * Copies each piece's rows into the lane's input staging, one after another; a piece whose
         * rows cannot be read (its arena closed) fails its request and leaves the batch.
         *
         * @return the rows staged
         */
        private int stage() {
            MemorySegment staged = lane.input();
            int rows = 0;
            int kept = 0;
            for (Piece piece : batch) {
                try {
                    MemorySegment.copy(piece.request().input, piece.firstRow() * inputRowBytes, staged,
                            rows * inputRowBytes, piece.rows() * inputRowBytes);
                } catch (RuntimeException e) {
                    piece.request().future.completeExceptionally(new IllegalStateException(
                            "the request's rows could not be read: " + e.getMessage(), e));
                    continue;
                }
                batch.set(kept++, piece);
                rows += piece.rows();
            }
            batch.subList(kept, batch.size()).clear();
            return rows;
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
     * The element type of the model's input and output rows, which {@link #submit(MemorySegment, MemorySegment)}
     * takes and gives.
     *
     * @return FLOAT32, FLOAT16 or BFLOAT16
     */
    public ElementType elementType() {
        return elementType;
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
        if (workers.stream().anyMatch(worker -> worker.thread == self)) {
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
            long deadline = System.nanoTime() + options.closeTimeout().toNanos();
            for (Worker worker : workers) {
                long left = deadline - System.nanoTime();
                if (left > 0) {
                    worker.thread.join(Duration.ofNanos(left));
                }
            }
            if (workers.stream().anyMatch(worker -> worker.thread.isAlive())) {
                abandoning = true;
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
