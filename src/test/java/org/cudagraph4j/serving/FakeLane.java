package org.cudagraph4j.serving;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A lane without a GPU, for the engine's logic: output row = (sum of the input row, 2 × its first
 * float), computed in the lane, so any row served with another request's data shows. It can hold
 * batches at a gate, fail chosen batches, capture buckets lazily, and claim any device ordinal.
 */
final class FakeLane implements Lane {
    static final int IN = 3;
    static final int OUT = 2;

    private final Set<Integer> captured = ConcurrentHashMap.newKeySet();
    private final List<Integer> toCapture;
    private final int device;
    final List<Integer> buckets = java.util.Collections.synchronizedList(new ArrayList<>());
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

    @Override
    public float[] run(int bucket, float[] input, int rows) {
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
        if (rows > bucket || input.length != rows * IN) {
            throw new AssertionError("bucket " + bucket + " given " + rows + " rows, " + input.length + " floats");
        }
        RuntimeException fail = failure.apply(input);
        if (fail != null) {
            throw fail;
        }
        buckets.add(bucket);
        rowsRun.addAndGet(rows);
        return expected(input);
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
