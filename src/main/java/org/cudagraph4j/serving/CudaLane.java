package org.cudagraph4j.serving;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphArchiveException;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.InstantiateFlag;
import org.cudagraph4j.graph.StreamCapture;

/**
 * A lane on one device: a stream; pinned staging and device buffers for the largest bucket, which
 * every bucket's graph shares (a bucket of n rows uses their first n rows); and an executable per
 * captured bucket. The engine writes a batch's rows straight into the input staging and reads
 * each answer straight from the output staging; a batch is one host-to-device copy, the graph
 * launch (or the model's kernels, before its bucket is captured), one device-to-host copy of the
 * batch's rows and one synchronization of this lane's stream, on this lane's worker thread.
 */
final class CudaLane implements Lane {
    private static final System.Logger LOG = System.getLogger(InferenceEngine.class.getName());
    /** The slot names of a lane's own input and output in its archives. */
    private static final String INPUT_SLOT = "lane.input";
    private static final String OUTPUT_SLOT = "lane.output";

    private final int index;
    private final CudaDevice device;
    private final LaneModel model;
    private final int inputWidth;
    private final int outputWidth;
    private final ElementType elementType;
    private final List<Integer> buckets;
    private final CudaStream stream;
    private final PinnedBuffer stagedInput;
    private final PinnedBuffer stagedOutput;
    private final DeviceBuffer input;
    private final DeviceBuffer output;
    private final GraphExec[] execs;
    /** Each bucket's index in {@link #buckets}, by size: a batch looks its graph up without boxing. */
    private final int[] bucketIndex;
    private final List<CaptureReport> reports = Collections.synchronizedList(new ArrayList<>());
    /** Buckets still to capture, in capture order. */
    private final List<Integer> toCapture;
    /** Where bucket graphs are kept between starts, and what they are bound to; null when not kept. */
    private final Path archives;
    private final LaneModel.Archiving archiving;

    CudaLane(int index, CudaDevice device, LaneModel model, ElementType elementType, int inputWidth, int outputWidth,
            BucketLadder ladder, CapturePolicy policy, Path archives) {
        this.index = index;
        this.device = device;
        this.model = model;
        this.elementType = elementType;
        this.inputWidth = inputWidth;
        this.outputWidth = outputWidth;
        this.buckets = ladder.sizes();
        this.execs = new GraphExec[buckets.size()];
        int largest = ladder.largest();
        this.bucketIndex = new int[largest + 1];
        for (int i = 0; i < buckets.size(); i++) {
            bucketIndex[buckets.get(i)] = i;
        }
        bind();
        List<AutoCloseable> made = new ArrayList<>();
        try {
            stream = add(made, device.createStream());
            stagedInput = add(made, Cuda.allocatePinned(elementType.byteSize() * largest * inputWidth));
            stagedOutput = add(made, Cuda.allocatePinned(elementType.byteSize() * largest * outputWidth));
            input = add(made, device.allocate(elementType, (long) largest * inputWidth));
            output = add(made, device.allocate(elementType, (long) largest * outputWidth));
        } catch (RuntimeException e) {
            closeAll(made, e);
            throw e;
        }
        LaneModel.Archiving kept = archives == null ? null : model.archiving().orElse(null);
        if (kept != null) {
            kept.bindings().buffer(INPUT_SLOT, input).buffer(OUTPUT_SLOT, output);
        }
        this.archives = kept == null ? null : archives;
        this.archiving = kept;
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
    public int deviceOrdinal() {
        return device.ordinal();
    }

    @Override
    public MemorySegment input() {
        return stagedInput.segment();
    }

    @Override
    public MemorySegment output() {
        return stagedOutput.segment();
    }

    @Override
    public void run(int bucket, int rows) {
        // Pad rows are zeros, so that the model never sees last batch's rows (or NaN) in them.
        long rowBytes = elementType.byteSize() * inputWidth;
        stagedInput.segment().asSlice(rows * rowBytes, (bucket - rows) * rowBytes).fill((byte) 0);
        DeviceBuffer in = input.slice(0, (long) bucket * inputWidth);
        DeviceBuffer out = output.slice(0, (long) bucket * outputWidth);
        in.copyFromAsync(stagedInput.segment().asSlice(0, in.byteSize()), stream);
        GraphExec exec = execs[bucketIndex[bucket]];
        if (exec != null) {
            exec.launch(stream);
        } else {
            model.forward(stream, bucket, in, out);
        }
        // Only the batch's own rows come back: the pad rows' outputs are never read.
        out.slice(0, (long) rows * outputWidth).copyToAsync(
                stagedOutput.segment().asSlice(0, elementType.byteSize() * rows * outputWidth), stream);
        stream.synchronize();
    }

    @Override
    public boolean hasGraph(int bucket) {
        return execs[bucketIndex[bucket]] != null;
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

    /**
     * Loads {@code bucket}'s graph from its archive, or warms up and captures it (and archives it,
     * when archives are kept); instantiates it; and reports what it cost.
     */
    private void capture(int bucket) {
        DeviceBuffer in = input.slice(0, (long) bucket * inputWidth);
        DeviceBuffer out = output.slice(0, (long) bucket * outputWidth);
        long start = System.nanoTime();
        Path archive = archives == null ? null : archives.resolve("bucket-" + bucket + ".cg4j");
        CudaGraph archived = archive == null ? null : load(archive, bucket);
        boolean loaded = archived != null;
        CudaGraph graph = loaded ? archived : warmUpAndCapture(bucket, in, out);
        long captured = System.nanoTime();
        long freeBefore = device.memoryInfo().freeBytes();
        try (graph) {
            GraphExec exec = graph.instantiate(stream, InstantiateFlag.UPLOAD);
            stream.synchronize();
            execs[bucketIndex[bucket]] = exec;
            if (archive != null && !loaded) {
                save(graph, archive, bucket);
            }
        }
        long instantiated = System.nanoTime();
        reports.add(new CaptureReport(index, bucket, Duration.ofNanos(captured - start),
                Duration.ofNanos(instantiated - captured),
                Math.max(0, freeBefore - device.memoryInfo().freeBytes()), loaded));
    }

    private CudaGraph warmUpAndCapture(int bucket, DeviceBuffer in, DeviceBuffer out) {
        // A warm-up pass first: lazily loaded modules load outside the capture.
        in.memsetAsync(0, stream);
        model.forward(stream, bucket, in, out);
        stream.synchronize();
        // Relaxed: the engine may be started from a virtual thread, which may change carriers.
        try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.RELAXED)) {
            model.forward(stream, bucket, in, out);
            return capture.end();
        }
    }

    /** The archived graph, or null when there is none or it no longer fits (then it is captured again). */
    private CudaGraph load(Path archive, int bucket) {
        if (!Files.isRegularFile(archive)) {
            return null;
        }
        try {
            return GraphArchive.load(archive, archiving.libraries(), archiving.bindings());
        } catch (GraphArchiveException | UncheckedIOException e) {
            LOG.log(Level.WARNING, "lane " + index + ", bucket " + bucket + ": " + archive + " cannot be used ("
                    + e.getMessage() + "); capturing the bucket again");
            return null;
        }
    }

    /**
     * Archives a captured graph, through a file of this lane's own and a rename, so that lanes
     * saving the same bucket at once never leave half a file. A failure costs the next start a
     * capture, not this one its graph.
     */
    private void save(CudaGraph graph, Path archive, int bucket) {
        try {
            Files.createDirectories(archive.getParent());
            Path partial = archive.resolveSibling(archive.getFileName() + ".lane" + index + ".partial");
            GraphArchive.save(graph, archiving.bindings(), partial);
            Files.move(partial, archive, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (GraphArchiveException | IOException | UncheckedIOException e) {
            LOG.log(Level.WARNING, "lane " + index + ", bucket " + bucket + ": its graph cannot be archived in "
                    + archive + " (" + e.getMessage() + ")");
        }
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
