package org.cudagraph4j.serving;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A lane without a GPU, for the engine's logic: output row = (sum of the input row, 2 × its first
 * float), computed in the lane from its staging, so any row served with another request's data
 * shows. Its staging holds the largest capturable bucket, in shared memory as a pinned buffer is
 * readable by any thread. It can hold batches at a gate, fail chosen batches, capture buckets
 * lazily, and claim any device ordinal.
 */
final class FakeLane implements Lane {
    static final int IN = 3;
    static final int OUT = 2;

    private final Set<Integer> captured = ConcurrentHashMap.newKeySet();
    private final List<Integer> toCapture;
    private final int device;
    private final MemorySegment input;
    private final MemorySegment output;
    /** Set once a batch has entered {@link #run}, before its gate. */
    final CountDownLatch entered = new CountDownLatch(1);
    /** The rows of the batch that entered {@link #run} last. */
    volatile int enteredRows;
    final List<Integer> buckets = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger rowsRun = new AtomicInteger();
    volatile CountDownLatch gate = new CountDownLatch(0);
    volatile long delayNanos;
    /** Given a batch's packed input, a failure to throw instead of answering, or null. */
    volatile Function<float[], RuntimeException> failure = input -> null;
    volatile boolean closed;

    FakeLane(List<Integer> capturable) {
        this(capturable, 0);
    }

    FakeLane(List<Integer> capturable, int device) {
        this.toCapture = new ArrayList<>(capturable);
        this.device = device;
        int largest = Collections.max(capturable);
        this.input = Arena.ofAuto().allocate((long) Float.BYTES * largest * IN);
        this.output = Arena.ofAuto().allocate((long) Float.BYTES * largest * OUT);
    }

    static float[] expected(float[] rows) {
        float[] out = new float[rows.length / IN * OUT];
        for (int r = 0; r < rows.length / IN; r++) {
            out[r * OUT] = rows[r * IN] + rows[r * IN + 1] + rows[r * IN + 2];
            out[r * OUT + 1] = 2 * rows[r * IN];
        }
        return out;
    }

    final AtomicInteger binds = new AtomicInteger();

    @Override
    public void bind() {
        binds.incrementAndGet();
    }

    @Override
    public int deviceOrdinal() {
        return device;
    }

    /** Thrown once by the next {@link #input()}, when set: a failure outside the batch's run. */
    volatile Error stagingError;

    @Override
    public MemorySegment input() {
        Error error = stagingError;
        if (error != null) {
            stagingError = null;
            throw error;
        }
        return input;
    }

    @Override
    public MemorySegment output() {
        return output;
    }

    @Override
    public void run(int bucket, int rows) {
        enteredRows = rows;
        entered.countDown();
        try {
            if (!gate.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never opened the gate");
            }
            if (delayNanos > 0) {
                TimeUnit.NANOSECONDS.sleep(delayNanos);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        if (rows < 1 || rows > bucket) {
            throw new AssertionError("bucket " + bucket + " given " + rows + " rows");
        }
        float[] batch = input.asSlice(0, (long) Float.BYTES * rows * IN).toArray(ValueLayout.JAVA_FLOAT);
        RuntimeException fail = failure.apply(batch);
        if (fail != null) {
            throw fail;
        }
        buckets.add(bucket);
        rowsRun.addAndGet(rows);
        MemorySegment.copy(expected(batch), 0, output, ValueLayout.JAVA_FLOAT, 0, rows * OUT);
    }

    @Override
    public boolean hasGraph(int bucket) {
        return captured.contains(bucket);
    }

    @Override
    public synchronized boolean captureNext() {
        if (toCapture.isEmpty()) {
            return false;
        }
        captured.add(toCapture.removeFirst());
        return true;
    }

    @Override
    public List<CaptureReport> reports() {
        return List.of();
    }

    @Override
    public void close() {
        closed = true;
    }
}
