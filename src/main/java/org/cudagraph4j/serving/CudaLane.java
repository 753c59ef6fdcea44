package org.cudagraph4j.serving;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.InstantiateFlag;
import org.cudagraph4j.graph.StreamCapture;

/**
 * A lane on one device: a stream; pinned staging and device buffers for the largest bucket, which
 * every bucket's graph shares (a bucket of n rows uses their first n rows); and an executable per
 * captured bucket. A batch is one host-to-device copy, the graph launch (or the model's kernels,
 * before its bucket is captured), one device-to-host copy and one synchronization of this lane's
 * stream, on this lane's worker thread.
 */
final class CudaLane implements Lane {
    private final int index;
    private final CudaDevice device;
    private final LaneModel model;
    private final int inputWidth;
    private final int outputWidth;
    private final List<Integer> buckets;
    private final CudaStream stream;
    private final PinnedBuffer stagedInput;
    private final PinnedBuffer stagedOutput;
    private final DeviceBuffer input;
    private final DeviceBuffer output;
    private final GraphExec[] execs;
    private final List<CaptureReport> reports = Collections.synchronizedList(new ArrayList<>());
    /** Buckets still to capture, in capture order. */
    private final List<Integer> toCapture;

    CudaLane(int index, CudaDevice device, LaneModel model, int inputWidth, int outputWidth, BucketLadder ladder,
            CapturePolicy policy) {
        this.index = index;
        this.device = device;
        this.model = model;
        this.inputWidth = inputWidth;
        this.outputWidth = outputWidth;
        this.buckets = ladder.sizes();
        this.execs = new GraphExec[buckets.size()];
        int largest = ladder.largest();
        bind();
        List<AutoCloseable> made = new ArrayList<>();
        try {
            stream = add(made, device.createStream());
            stagedInput = add(made, Cuda.allocatePinned((long) Float.BYTES * largest * inputWidth));
            stagedOutput = add(made, Cuda.allocatePinned((long) Float.BYTES * largest * outputWidth));
            input = add(made, device.allocateFloats((long) largest * inputWidth));
            output = add(made, device.allocateFloats((long) largest * outputWidth));
        } catch (RuntimeException e) {
            closeAll(made, e);
            throw e;
        }
        List<Integer> order = new ArrayList<>(policy == CapturePolicy.NONE ? List.of() : buckets);
        if (policy == CapturePolicy.EAGER) {
            Collections.reverse(order); // largest first, as SGLang does: the pool then fits the smaller ones
        }
        this.toCapture = order;
        if (policy == CapturePolicy.EAGER) {
            try {
                while (captureNext()) {
                    // every bucket, before the engine takes a request
                }
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }
    }

    @Override
    public void bind() {
        device.makeCurrent();
    }

    @Override
    public float[] run(int bucket, float[] rows, int rowCount) {
        MemorySegment staged = stagedInput.segment();
        long usedBytes = (long) Float.BYTES * rowCount * inputWidth;
        MemorySegment.copy(rows, 0, staged, ValueLayout.JAVA_FLOAT, 0, rowCount * inputWidth);
        // Pad rows are zeros, so that the model never sees last batch's rows (or NaN) in them.
        staged.asSlice(usedBytes, (long) Float.BYTES * (bucket - rowCount) * inputWidth).fill((byte) 0);
        DeviceBuffer in = input.slice(0, (long) bucket * inputWidth);
        DeviceBuffer out = output.slice(0, (long) bucket * outputWidth);
        in.copyFromAsync(staged.asSlice(0, in.byteSize()), stream);
        GraphExec exec = execs[buckets.indexOf(bucket)];
        if (exec != null) {
            exec.launch(stream);
        } else {
            model.forward(stream, bucket, in, out);
        }
        out.copyToAsync(stagedOutput.segment().asSlice(0, out.byteSize()), stream);
        stream.synchronize();
        return stagedOutput.segment().asSlice(0, (long) Float.BYTES * rowCount * outputWidth)
                .toArray(ValueLayout.JAVA_FLOAT);
    }

    @Override
    public boolean hasGraph(int bucket) {
        return execs[buckets.indexOf(bucket)] != null;
    }

    @Override
    public boolean captureNext() {
        if (toCapture.isEmpty()) {
            return false;
        }
        int bucket = toCapture.removeFirst();
        ServingEvents.Capture event = new ServingEvents.Capture();
        event.lane = index;
        event.bucket = bucket;
        event.begin();
        try {
            capture(bucket);
            event.succeeded = true;
        } finally {
            event.commit();
        }
        return true;
    }

    /** Warms up, captures and instantiates {@code bucket}, and reports what it cost. */
    private void capture(int bucket) {
        DeviceBuffer in = input.slice(0, (long) bucket * inputWidth);
        DeviceBuffer out = output.slice(0, (long) bucket * outputWidth);
        long start = System.nanoTime();
        // A warm-up pass first: lazily loaded modules load outside the capture.
        in.memsetAsync(0, stream);
        model.forward(stream, bucket, in, out);
        stream.synchronize();
        CudaGraph graph;
        // Relaxed: the engine may be started from a virtual thread, which may change carriers.
        try (StreamCapture capture = stream.beginCapture(CaptureMode.RELAXED)) {
            model.forward(stream, bucket, in, out);
            graph = capture.end();
        }
        long captured = System.nanoTime();
        long freeBefore = device.memoryInfo().freeBytes();
        try (graph) {
            GraphExec exec = graph.instantiate(stream, InstantiateFlag.UPLOAD);
            stream.synchronize();
            execs[buckets.indexOf(bucket)] = exec;
        }
        long instantiated = System.nanoTime();
        reports.add(new CaptureReport(index, bucket, Duration.ofNanos(captured - start),
                Duration.ofNanos(instantiated - captured),
                Math.max(0, freeBefore - device.memoryInfo().freeBytes())));
    }

    @Override
    public List<CaptureReport> reports() {
        return List.copyOf(reports);
    }

    @Override
    public void close() {
        List<AutoCloseable> owned = new ArrayList<>();
        for (GraphExec exec : execs) {
            if (exec != null) {
                owned.add(exec);
            }
        }
        owned.addAll(List.of(input, output, stagedInput, stagedOutput, stream, model));
        closeAll(owned, null);
    }

    private static <T extends AutoCloseable> T add(List<AutoCloseable> made, T resource) {
        made.add(resource);
        return resource;
    }

    /** Closes each, in order, even when one fails; the first failure is thrown, or added to {@code primary}. */
    private static void closeAll(List<AutoCloseable> resources, RuntimeException primary) {
        RuntimeException failure = primary;
        for (AutoCloseable resource : resources) {
            try {
                resource.close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null && failure != primary) {
            throw failure;
        }
    }
}
