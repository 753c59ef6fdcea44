package org.cudagraph4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.JMException;
import javax.management.ObjectName;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.StreamCapture;

/**
 * A soak test of the whole library on device 0: {@code --threads} threads, half of them platform
 * and half virtual, loop for {@code --minutes} over randomly chosen operations (eager launches,
 * stream capture in every mode, graph updates, allocation, pinned and synchronous copies, library
 * load and unload, events), each on fresh random nonzero inputs, with outputs poisoned (NaN) first
 * and every result checked exactly against a host reference. Every 5 s a sample records RSS, free
 * device memory and {@link Cuda#liveResources()}.
 *
 * <p>PASS needs no error, no wrong result, RSS and device memory flat after warm-up (growth under
 * 1% between the medians of the first and last three samples), and live resources back to their
 * starting counts once everything is closed. Exit status 0 on PASS, 1 on FAIL, 2 for bad
 * arguments or no GPU. Run it with {@code bin/soak} from the GPU bundle; with {@code --serving} it
 * soaks the serving engine instead ({@link ServingSoak}).
 */
public final class Soak {
    private static final String USAGE = "usage: soak --minutes N [--threads T] [--report FILE]\n"
            + "       soak --serving --minutes N [--report FILE] [--seed S]";
    static final long SAMPLE_NANOS = TimeUnit.SECONDS.toNanos(5);
    static final double MAX_GROWTH_PERCENT = 1.0;
    /** Every byte 0xFF: a NaN in every float, which equals no expected value. */
    static final int POISON = 0xFF;
    private static final int BLOCK = 256;
    private static final int MIN_FLOATS = 256;
    private static final int MAX_KERNEL_FLOATS = 1 << 20;
    private static final int MAX_PINNED_FLOATS = 1 << 21;
    private static final long MIN_ALLOCATION_BYTES = 1 << 10;
    private static final long MAX_ALLOCATION_BYTES = 64L << 20;
    /** Large allocations are read back through slices of this many floats, so host memory stays bounded. */
    private static final int CHUNK_FLOATS = 1 << 20;
    private static final int MAX_PRINTED = 20;
    private static final CaptureMode[] MODES = CaptureMode.values();
    private static final Op[] OPS = Op.values();

    /** What a worker does in one step. */
    private enum Op {
        EAGER_LAUNCH, PREPARED_LAUNCH, CAPTURE, UPDATE_GRAPH, UPDATE_KERNEL_NODE, ALLOCATE, SYNC_COPY,
        PINNED_ASYNC_COPY, LIBRARY_LOAD, EVENTS;

        boolean captures() {
            return this == CAPTURE || this == UPDATE_GRAPH;
        }

        String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', ' ');
        }
    }

    private record Options(double minutes, int threads, Path report) {
        static Options parse(String[] args) {
            Double minutes = null;
            int threads = 8;
            Path report = null;
            for (int i = 0; i < args.length; i++) {
                String value = i + 1 < args.length ? args[i + 1] : null;
                switch (args[i]) {
                    case "--minutes" -> minutes = number(args[i], value, Double::parseDouble);
                    case "--threads" -> threads = number(args[i], value, Integer::parseInt);
                    case "--report" -> report = Path.of(required(args[i], value));
                    default -> throw new IllegalArgumentException("unknown argument " + args[i]);
                }
                i++;
            }
            if (minutes == null) {
                throw new IllegalArgumentException("--minutes is required");
            }
            // 15 s gives three samples after warm-up, the fewest a growth figure is taken from.
            if (!(minutes >= 0.25)) {
                throw new IllegalArgumentException("--minutes must be at least 0.25, got " + minutes);
            }
            if (threads < 1) {
                throw new IllegalArgumentException("--threads must be at least 1, got " + threads);
            }
            return new Options(minutes, threads, report);
        }

        int platformThreads() {
            return (threads + 1) / 2;
        }

        long nanos() {
            return (long) (minutes * TimeUnit.MINUTES.toNanos(1));
        }
    }

    /** One sample, taken while no operation is in flight. */
    private record Sample(double seconds, long operations, long errors, long wrongResults, long rssBytes,
            long jvmNativeBytes, long heapBytes, long deviceUsedBytes, LiveResources live) {}

    /** The change of one measure from the start of the steady state to its end. */
    record Growth(long from, long to) {
        double percent() {
            return 100.0 * (to - from) / from;
        }
    }

    /** One round of the work most operations do: out[i] = i * scale + offset, then y = a * out + y. */
    private record Round(int n, float scale, float offset, float a) {
        /** out as the GPU computes it: {@code write_pattern} converts i and does one fused multiply-add. */
        float out(int i) {
            return Math.fma((float) i, scale, offset);
        }

        float[] out() {
            float[] out = new float[n];
            for (int i = 0; i < n; i++) {
                out[i] = out(i);
            }
            return out;
        }

        /** y after this round; {@code saxpy} also compiles to one fused multiply-add. */
        float[] apply(float[] y) {
            return fma(a, out(), y);
        }
    }

    private final Options options;
    private final CudaDevice device;
    private final CudaKernel writePattern;
    private final CudaKernel saxpy;
    /**
     * Held shared by every operation and exclusively by a global-mode capture and by the sampler. A
     * global capture forbids potentially unsafe calls (cudaMalloc, synchronous copies) on every
     * thread, so an application must keep its other threads out of one; a sample must see no
     * operation half done. Fair, so that neither waits behind a stream of operations.
     */
    private final ReentrantReadWriteLock gate = new ReentrantReadWriteLock(true);
    private final LongAdder[] counts = new LongAdder[Op.values().length];
    private final LongAdder errors = new LongAdder();
    private final LongAdder wrongResults = new LongAdder();
    private final AtomicInteger reported = new AtomicInteger();
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    /** Whether the last sample's device memory is this process's own (nvidia-smi) or the device's. */
    private volatile boolean perProcessDeviceMemory;
    /** The largest synchronous copy, so that every thread's host arrays together fit well inside the heap. */
    private final int maxCopyFloats;

    private Soak(Options options, CudaDevice device, CudaLibrary kernels) {
        this.options = options;
        this.device = device;
        this.writePattern = kernels.kernel("write_pattern");
        this.saxpy = kernels.kernel("saxpy");
        Arrays.setAll(counts, i -> new LongAdder());
        this.maxCopyFloats = (int) Math.min(1 << 22,
                Runtime.getRuntime().maxMemory() / (16L * options.threads() * Float.BYTES));
    }

    /** An option's value parsed as a number; a missing or malformed one is an IllegalArgumentException naming it. */
    static <T> T number(String option, String value, Function<String, T> parse) {
        try {
            return parse.apply(required(option, value));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes a number, got " + value);
        }
    }

    /** An option's value, which must be given. */
    static String required(String option, String value) {
        if (value == null) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return value;
    }

    /** The options {@code parse} makes of the command line; on a bad one, says why and how to run, and exits 2. */
    static <T> T parseOrExit(String command, String usage, Supplier<T> parse) {
        try {
            return parse.get();
        } catch (IllegalArgumentException e) {
            System.err.println(command + ": " + e.getMessage());
            System.err.println(usage);
            System.exit(2);
            throw e; // not reached
        }
    }

    /** Device 0; without a CUDA GPU, says so and exits 2. */
    static CudaDevice deviceOrExit(String command) {
        try {
            return TestData.device();
        } catch (CudaException | CudaRuntimeNotFoundException | IllegalArgumentException e) {
            System.err.println(command + ": needs a CUDA GPU: "
                    + e.getMessage().lines().findFirst().orElse(e.toString()));
            System.exit(2);
            throw e; // not reached
        }
    }

    public static void main(String[] args) throws InterruptedException {
        if (Arrays.asList(args).contains("--serving")) {
            ServingSoak.main(Arrays.stream(args).filter(arg -> !arg.equals("--serving")).toArray(String[]::new));
            return;
        }
        Options options = parseOrExit("soak", USAGE, () -> Options.parse(args));
        CudaDevice device = deviceOrExit("soak");
        Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        LiveResources before = Cuda.liveResources();
        Soak soak;
        List<Sample> samples;
        try (CudaLibrary kernels = TestData.testKernels()) {
            soak = new Soak(options, device, kernels);
            samples = soak.run(started);
        }
        boolean pass = soak.conclude(started, samples, before, Cuda.liveResources());
        System.exit(pass ? 0 : 1);
    }

    /** Runs the workers until the deadline, sampling as they go; returns when every worker has closed its stream. */
    private List<Sample> run(Instant started) throws InterruptedException {
        int platform = options.platformThreads();
        System.out.printf(Locale.ROOT, "soak: %s minutes on %s, %d threads (%d platform, %d virtual)%n",
                minutes(options.minutes()), device.properties().name(), options.threads(), platform,
                options.threads() - platform);
        List<Sample> samples = new ArrayList<>();
        List<CudaStream> streams = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        SplittableRandom seeds = new SplittableRandom();
        long start = System.nanoTime();
        long deadline = start + options.nanos();
        try {
            samples.add(sample(start));
            for (int i = 0; i < options.threads(); i++) {
                CudaStream stream = device.createStream();
                streams.add(stream);
                boolean virtual = i >= platform;
                Worker worker = new Worker(stream, seeds.split(), virtual, deadline);
                Thread.Builder builder = virtual ? Thread.ofVirtual().name("soak-virtual-" + i)
                        : Thread.ofPlatform().name("soak-platform-" + i);
                threads.add(builder.start(worker));
            }
            boolean warm = false;
            for (long next = start + SAMPLE_NANOS; next <= deadline; next += SAMPLE_NANOS) {
                TimeUnit.NANOSECONDS.sleep(next - System.nanoTime());
                Sample sample = sample(start);
                samples.add(sample);
                if (!warm && sample.seconds() > warmupSeconds()) {
                    warm = true;
                    NativeMemory.baseline();
                }
                writeProgress(started, samples);
                System.out.printf(Locale.ROOT, "soak: %4.0f s  %,d ops  %d errors  %d wrong  RSS %s MiB"
                        + "  device used %s MiB  live %d buffers, %d streams, %d graphs, %d execs%n", sample.seconds(),
                        sample.operations(),
                        sample.errors(), sample.wrongResults(), mib(sample.rssBytes()), mib(sample.deviceUsedBytes()),
                        sample.live().deviceBuffers(), sample.live().streams(), sample.live().graphs(),
                        sample.live().graphExecs());
            }
        } finally {
            for (Thread thread : threads) {
                thread.join();
            }
            streams.forEach(CudaStream::close);
        }
        return samples;
    }

    /** Takes a sample with every worker between operations. */
    private Sample sample(long start) {
        gate.writeLock().lock();
        try {
            System.gc(); // the heap after a full collection is what the program retains
            // Likewise RSS once glibc has handed back the memory freed into its arenas: a leak is memory
            // still allocated, not memory the allocator keeps for reuse.
            NativeMemory.trim();
            Runtime runtime = Runtime.getRuntime();
            return new Sample((System.nanoTime() - start) / 1e9, operations(), errors.sum(), wrongResults.sum(),
                    rssBytes(), NativeMemory.jvmCommittedBytes(), runtime.totalMemory() - runtime.freeMemory(),
                    deviceUsedBytes(), Cuda.liveResources());
        } finally {
            gate.writeLock().unlock();
        }
    }

    private long operations() {
        return Arrays.stream(counts).mapToLong(LongAdder::sum).sum();
    }

    /**
     * The device memory this process uses, as nvidia-smi reports it per process, so that other
     * processes on the GPU (a sanitizer run beside the soak, say) do not move it; where nvidia-smi
     * cannot tell, the whole device's used memory (total minus free).
     */
    private long deviceUsedBytes() {
        String pid = Long.toString(ProcessHandle.current().pid());
        try {
            Process query = new ProcessBuilder("nvidia-smi", "--query-compute-apps=pid,used_memory",
                    "--format=csv,noheader,nounits").redirectErrorStream(true).start();
            String output = new String(query.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (query.waitFor() == 0) {
                for (String line : output.split("\n")) {
                    String[] fields = line.split(",");
                    if (fields.length == 2 && fields[0].strip().equals(pid)) {
                        perProcessDeviceMemory = true;
                        return Long.parseLong(fields[1].strip()) << 20;
                    }
                }
            }
        } catch (IOException | NumberFormatException e) {
            // no nvidia-smi, or output it cannot parse: fall back to the device's totals
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        perProcessDeviceMemory = false;
        CudaDevice.MemoryInfo memory = device.memoryInfo();
        return memory.totalBytes() - memory.freeBytes();
    }

    static long rssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }

    /** Prints the samples and the verdict, writes the report if asked; whether the soak passed. */
    private boolean conclude(Instant started, List<Sample> samples, LiveResources before, LiveResources after) {
        double warmup = warmupSeconds();
        boolean live = after.equals(before);
        List<String[]> checks = checks(samples, criterion("live resources after close",
                live ? "as at the start" : difference(before, after), "as at the start", live));
        boolean pass = checks.stream().allMatch(c -> c[3].equals("yes"));
        String verdict = pass ? "PASS" : "FAIL";

        System.out.println();
        System.out.print(table(sampleTable(samples), false));
        System.out.println();
        System.out.print(table(operationTable(), false));
        System.out.println();
        String nativeGrowth = printVerdict("soak", verdict, warmup, checks);
        if (options.report() != null) {
            writeReport(started, verdict, warmup, checks, samples, nativeGrowth);
            System.out.println("soak: report written to " + options.report());
        }
        return pass;
    }

    /**
     * Prints the verdict line, its rows and the JVM's native memory growth since the baseline.
     *
     * @return that growth, for the report
     */
    static String printVerdict(String command, String verdict, double warmup, List<String[]> checks) {
        System.out.printf(Locale.ROOT, "%s: %s (growth: median of the first 3 samples after %.0f s of warm-up "
                + "to the median of the last 3)%n", command, verdict, warmup);
        System.out.print(table(checks, false));
        String nativeGrowth = NativeMemory.sinceBaseline();
        System.out.println();
        System.out.print(nativeGrowth);
        return nativeGrowth;
    }

    /**
     * The verdict's rows for the samples so far: errors, wrong results, RSS and device-memory growth
     * after warm-up (at least one sample after it is needed), then {@code liveCheck}.
     */
    private List<String[]> checks(List<Sample> samples, String[] liveCheck) {
        double warmup = warmupSeconds();
        List<Sample> steady = samples.stream().filter(s -> s.seconds() > warmup).toList();
        Growth rss = growth(steady, Sample::rssBytes);
        Growth jvmNative = growth(steady, Sample::jvmNativeBytes);
        Growth deviceUsed = growth(steady, Sample::deviceUsedBytes);
        long errorCount = errors.sum();
        long wrongCount = wrongResults.sum();
        return List.of(
                criterion("errors", Long.toString(errorCount), "0", errorCount == 0),
                criterion("wrong results", Long.toString(wrongCount), "0", wrongCount == 0),
                criterion("RSS growth", growthText(rss) + String.format(Locale.ROOT, "; JVM native memory %+.1f MiB",
                        (jvmNative.to() - jvmNative.from()) / (double) (1 << 20)), "< 1%",
                        rss.percent() < MAX_GROWTH_PERCENT),
                criterion("device memory used, growth", growthText(deviceUsed), "< 1%",
                        deviceUsed.percent() < MAX_GROWTH_PERCENT),
                liveCheck);
    }

    /**
     * Rewrites the report with the samples so far, so that a run cut short (a time limit on the host,
     * a killed process) still leaves its evidence; the final report replaces it.
     */
    private void writeProgress(Instant started, List<Sample> samples) {
        if (options.report() == null || samples.stream().noneMatch(s -> s.seconds() > warmupSeconds())) {
            return;
        }
        double seconds = samples.getLast().seconds();
        String verdict = String.format(Locale.ROOT, "INCOMPLETE, %.0f s of %.0f s (rewritten every sample until "
                + "the end)", seconds, options.nanos() / 1e9);
        String[] pending = {"live resources after close", "checked at the end", "as at the start", "pending"};
        writeReport(started, verdict, warmupSeconds(), checks(samples, pending), samples,
                "Native Memory Tracking's categories are reported at the end.\n");
    }

    /** The first fifth of the run, and at least a minute in runs of 5 minutes or more: JIT compilation settles. */
    private double warmupSeconds() {
        return Math.max(0.2 * options.nanos() / 1e9, options.minutes() >= 5 ? 60 : 0);
    }

    static String[] criterion(String name, String value, String bound, boolean ok) {
        return new String[] {name, value, bound, ok ? "yes" : "NO"};
    }

    static <S> Growth growth(List<S> steady, ToLongFunction<S> measure) {
        long[] values = steady.stream().mapToLong(measure).toArray();
        int n = values.length;
        return new Growth(median(Arrays.copyOfRange(values, 0, Math.min(3, n))),
                median(Arrays.copyOfRange(values, Math.max(0, n - 3), n)));
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    static String growthText(Growth growth) {
        return String.format(Locale.ROOT, "%+.2f%% (%s to %s MiB)", growth.percent(), mib(growth.from()),
                mib(growth.to()));
    }

    /** What grew, by name; both counts in full when something only shrank, which growthSince does not name. */
    static String difference(LiveResources before, LiveResources after) {
        String growth = after.growthSince(before);
        return growth.isEmpty() ? "before " + before + ", after " + after : "leaked " + growth;
    }

    private List<String[]> sampleTable(List<Sample> samples) {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"t (s)", "ops", "errors", "wrong", "RSS (MiB)", "JVM native (MiB)", "heap after GC (MiB)",
                "device used (MiB)", "buffers", "buffer MiB", "streams", "events", "libraries", "graphs", "execs"});
        for (Sample s : samples) {
            LiveResources live = s.live();
            rows.add(new String[] {String.format(Locale.ROOT, "%.0f", s.seconds()), Long.toString(s.operations()),
                    Long.toString(s.errors()), Long.toString(s.wrongResults()), mib(s.rssBytes()), mib(s.jvmNativeBytes()),
                    mib(s.heapBytes()),
                    mib(s.deviceUsedBytes()), Long.toString(live.deviceBuffers()), mib(live.deviceBytes()),
                    Long.toString(live.streams()), Long.toString(live.events()), Long.toString(live.libraries()),
                    Long.toString(live.graphs()), Long.toString(live.graphExecs())});
        }
        return rows;
    }

    private List<String[]> operationTable() {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"operation", "count"});
        for (Op op : Op.values()) {
            rows.add(new String[] {op.label(), Long.toString(counts[op.ordinal()].sum())});
        }
        rows.add(new String[] {"all", Long.toString(operations())});
        return rows;
    }

    /** The first row is the header; Markdown, or plain columns padded to their widest cell. */
    static String table(List<String[]> rows, boolean markdown) {
        StringBuilder out = new StringBuilder();
        if (markdown) {
            for (int r = 0; r < rows.size(); r++) {
                out.append("| ").append(String.join(" | ", rows.get(r))).append(" |\n");
                if (r == 0) {
                    out.append("|").append("---|".repeat(rows.get(0).length)).append('\n');
                }
            }
            return out.toString();
        }
        int[] widths = new int[rows.get(0).length];
        for (String[] row : rows) {
            for (int c = 0; c < row.length; c++) {
                widths[c] = Math.max(widths[c], row[c].length());
            }
        }
        for (String[] row : rows) {
            for (int c = 0; c < row.length; c++) {
                out.append("  ").append(String.format("%-" + widths[c] + "s", row[c]));
            }
            out.append('\n');
        }
        return out.toString();
    }

    private void writeReport(Instant started, String verdict, double warmup, List<String[]> checks,
            List<Sample> samples, String nativeGrowth) {
        DeviceProperties properties = device.properties();
        StringBuilder md = new StringBuilder();
        md.append("# cudagraph4j soak: ").append(verdict).append("\n\n");
        md.append(table(List.of(new String[] {"run", ""},
                new String[] {"device", String.format(Locale.ROOT, "%s (device 0, compute capability %d.%d, %d SMs, "
                        + "%.0f GiB)", properties.name(), properties.major(), properties.minor(),
                        properties.multiprocessorCount(), properties.totalMemoryBytes() / (double) (1L << 30))},
                new String[] {"CUDA driver / runtime", version(Cuda.driverVersion()) + " / "
                        + version(Cuda.runtimeVersion())},
                new String[] {"Java", Runtime.version() + ", heap " + mib(Runtime.getRuntime().maxMemory())
                        + " MiB (fixed)"},
                new String[] {"started", started.toString()},
                new String[] {"duration", minutes(options.minutes()) + " min"},
                new String[] {"threads", options.threads() + " (" + options.platformThreads() + " platform, "
                        + (options.threads() - options.platformThreads()) + " virtual)"}), true));
        appendVerdict(md, checks);
        md.append(String.format(Locale.ROOT, "%nGrowth runs from the median of the first three samples after "
                + "warm-up (the first %.0f s) to the median of the last three. %s%n", warmup,
                perProcessDeviceMemory ? "Device memory used is this process's own, as nvidia-smi reports it."
                        : "Device memory used is the device's total minus free, so other processes count too."));
        appendNativeMemory(md, nativeGrowth);
        md.append("\n## Workload\n\n");

        md.append("""
                Each thread loops over operations chosen uniformly at random until the deadline. Inputs are \
                fresh random floats of magnitude 0.5 to 2 (never zero); outputs are poisoned with NaN before \
                each run; every result is compared exactly with a host reference computed with the same fused \
                multiply-adds as the kernels (`write_pattern`, `saxpy` from `src/test/cuda/test_kernels.cu`).

                - eager launch: one-shot launches of write_pattern then saxpy
                - prepared launch: `KernelArguments`, relaunched with changed scalars
                - capture: global, thread-local or relaxed capture (virtual threads: relaxed, as a virtual \
                thread may change carriers before the capture ends), instantiate, launch 1 to 3 times; a \
                global capture runs alone, as it forbids unsafe calls on every thread
                - update graph: `GraphExec.update` with a graph re-captured on new buffers; the replaced \
                buffers are closed
                - update kernel node: an explicitly built graph, `updateKernelNode` on both nodes with new \
                buffers; the replaced buffers are closed
                - allocate: 1 to 4 buffers of 1 KiB to 64 MiB, filled by a kernel, read back through slices
                - sync copy: host to device, device to device, device to host, up to 16 MiB
                - pinned async copy: `copyFromAsync`/`copyToAsync` through pinned buffers around a saxpy
                - library load: load the test kernels, launch from them, close
                - events: timing events, a second stream waiting on one, `elapsedMillisSince`

                """);
        md.append(table(operationTable(), true));
        md.append("\n## Samples\n\n");
        md.append("Every 5 s, with every worker between operations and after a full GC. Live resources then are "
                + "the workers' streams and the shared kernel library.\n\n");
        md.append(table(sampleTable(samples), true));
        appendProblems(md, problems, MAX_PRINTED);
        writeReport(options.report(), md);
    }

    /** The report's verdict: a heading and the table of {@code checks}. */
    static void appendVerdict(StringBuilder md, List<String[]> checks) {
        md.append("\n## Verdict\n\n");
        List<String[]> verdictRows = new ArrayList<>();
        verdictRows.add(new String[] {"check", "value", "pass when", "ok"});
        verdictRows.addAll(checks);
        md.append(table(verdictRows, true));
    }

    /** How RSS and the JVM's native memory are read, then {@code nativeGrowth}, the growth by category. */
    static void appendNativeMemory(StringBuilder md, String nativeGrowth) {
        md.append("""

                RSS is read after a full GC and after glibc has returned freed memory to the system \
                (`System.trim_native_heap`). JVM native memory is what Native Memory Tracking counts as \
                committed (heap included); RSS growth beyond it is memory outside the JVM: the CUDA driver \
                and runtime, and this library's native allocations. The JVM's own native memory over the \
                steady state, by category:

                ```
                """).append(nativeGrowth).append("```\n");
    }

    /** The problems printed during the run, the first {@code printed} of them, if there were any. */
    static void appendProblems(StringBuilder md, Collection<String> problems, int printed) {
        if (!problems.isEmpty()) {
            md.append("\n## Problems (the first ").append(printed).append(")\n\n");
            problems.forEach(p -> md.append("- ").append(p.replace("\n", " ")).append('\n'));
        }
    }

    /**
     * Writes {@code md} to {@code report}: beside it first, then moved into place, so that a run killed
     * mid-write leaves the last whole report.
     */
    static void writeReport(Path report, CharSequence md) {
        try {
            Path parent = report.toAbsolutePath().getParent();
            Files.createDirectories(parent);
            Path partial = parent.resolve(report.getFileName() + ".part");
            Files.writeString(partial, md);
            Files.move(partial, report, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + report, e);
        }
    }

    /**
     * The JVM's view of its native memory, through the diagnostic commands behind {@code jcmd}: Native
     * Memory Tracking (on when the JVM runs with {@code -XX:NativeMemoryTracking=summary}, as
     * {@code bin/soak} does) and glibc heap trimming. Each reports that it is unavailable rather than
     * failing the soak.
     */
    static final class NativeMemory {
        private static final Pattern TOTAL = Pattern.compile("Total: reserved=\\d+KB, committed=(\\d+)KB");
        /** The first line of a category whose committed memory changed: "-  Code (reserved=…, committed=…KB +…KB)". */
        private static final Pattern CHANGED = Pattern.compile("-\\s+\\S.*committed=\\d+KB [+-]\\d+KB.*");

        static void trim() {
            command("systemTrimNativeHeap");
        }

        /** Committed native memory as Native Memory Tracking counts it, or 0 when tracking is off. */
        static long jvmCommittedBytes() {
            Matcher total = TOTAL.matcher(command("vmNativeMemory", "summary", "scale=KB"));
            return total.find() ? Long.parseLong(total.group(1)) << 10 : 0;
        }

        static void baseline() {
            command("vmNativeMemory", "baseline");
        }

        /** The total and each category that changed since {@link #baseline()}, as NMT prints them. */
        static String sinceBaseline() {
            String diff = command("vmNativeMemory", "summary.diff", "scale=KB");
            StringBuilder out = new StringBuilder();
            for (String line : diff.split("\n")) {
                if (line.startsWith("Total:") || CHANGED.matcher(line).matches()) {
                    out.append(line.strip()).append('\n');
                }
            }
            return out.isEmpty() ? "Native Memory Tracking is off: " + diff.strip() + "\n" : out.toString();
        }

        private static String command(String operation, String... arguments) {
            try {
                Object output = ManagementFactory.getPlatformMBeanServer().invoke(
                        new ObjectName("com.sun.management:type=DiagnosticCommand"), operation,
                        new Object[] {arguments}, new String[] {String[].class.getName()});
                return String.valueOf(output);
            } catch (JMException | RuntimeException e) {
                return operation + " unavailable: " + e;
            }
        }
    }

    static String version(int encoded) {

        return "CUDA " + encoded / 1000 + "." + encoded % 1000 / 10;
    }

    static String minutes(double minutes) {
        return minutes == Math.rint(minutes) ? Long.toString((long) minutes) : Double.toString(minutes);
    }

    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f", bytes / (double) (1 << 20));
    }

    private void problem(String message, Throwable cause) {
        if (reported.getAndIncrement() < MAX_PRINTED) {
            problems.add(message + (cause == null ? "" : ": " + cause));
            System.err.println("soak: " + message);
            if (cause != null) {
                cause.printStackTrace();
            }
        }
    }

    /** y[i] + a * x[i] with one rounding, as the GPU's fused multiply-add. */
    private static float[] fma(float a, float[] x, float[] y) {
        float[] result = new float[y.length];
        for (int i = 0; i < y.length; i++) {
            result[i] = Math.fma(a, x[i], y[i]);
        }
        return result;
    }

    /** One thread's loop, on its own stream. */
    private final class Worker implements Runnable {
        private final CudaStream stream;
        private final SplittableRandom random;
        private final boolean virtual;
        private final long deadline;

        Worker(CudaStream stream, SplittableRandom random, boolean virtual, long deadline) {
            this.stream = stream;
            this.random = random;
            this.virtual = virtual;
            this.deadline = deadline;
        }

        @Override
        public void run() {
            while (System.nanoTime() < deadline) {
                Op op = OPS[random.nextInt(OPS.length)];
                // Global and thread-local captures must end on the OS thread that began them, which a
                // virtual thread may have left by then.
                CaptureMode mode = virtual ? CaptureMode.RELAXED : MODES[random.nextInt(MODES.length)];
                Lock lock = op.captures() && mode == CaptureMode.GLOBAL ? gate.writeLock() : gate.readLock();
                lock.lock();
                try {
                    perform(op, mode);
                } catch (Throwable e) { // counted, and the loop goes on: a soak reports every failure
                    errors.increment();
                    problem(Thread.currentThread().getName() + " " + op.label() + " failed", e);
                } finally {
                    counts[op.ordinal()].increment();
                    lock.unlock();
                }
            }
        }

        private void perform(Op op, CaptureMode mode) {
            switch (op) {
                case EAGER_LAUNCH -> launchOnce("eager launch", writePattern, saxpy);
                case PREPARED_LAUNCH -> preparedLaunch();
                case CAPTURE -> capture(mode);
                case UPDATE_GRAPH -> updateGraph(mode);
                case UPDATE_KERNEL_NODE -> updateKernelNode();
                case ALLOCATE -> allocate();
                case SYNC_COPY -> syncCopy();
                case PINNED_ASYNC_COPY -> pinnedAsyncCopy();
                case LIBRARY_LOAD -> {
                    try (CudaLibrary fresh = TestData.testKernels()) {
                        launchOnce("library load", fresh.kernel("write_pattern"), fresh.kernel("saxpy"));
                    }
                }
                case EVENTS -> events();
            }
        }

        private void launchOnce(String what, CudaKernel write, CudaKernel axpy) {
            Round round = round(kernelLength());
            float[] y = nonZeros(round.n());
            try (DeviceBuffer out = device.allocateFloats(round.n()); DeviceBuffer dy = upload(y)) {
                out.memsetAsync(POISON, stream);
                write.launch(stream, config(round.n()), out, round.n(), round.scale(), round.offset());
                axpy.launch(stream, config(round.n()), round.n(), round.a(), out, dy);
                stream.synchronize();
                verify(what, round, round.apply(y), out, dy);
            }
        }

        private void preparedLaunch() {
            Round first = round(kernelLength());
            Round second = round(first.n());
            int n = first.n();
            float[] y = nonZeros(n);
            try (DeviceBuffer out = device.allocateFloats(n); DeviceBuffer dy = upload(y);
                    KernelArguments write = writePattern.arguments(out, n, first.scale(), first.offset());
                    KernelArguments axpy = saxpy.arguments(n, first.a(), out, dy)) {
                float[] expected = y;
                for (Round round : List.of(first, second)) {
                    write.set(2, round.scale());
                    write.set(3, round.offset());
                    axpy.set(1, round.a());
                    out.memsetAsync(POISON, stream);
                    writePattern.launch(stream, config(n), write);
                    saxpy.launch(stream, config(n), axpy);
                    expected = round.apply(expected);
                }
                stream.synchronize();
                verify("prepared launch", second, expected, out, dy);
            }
        }

        private void capture(CaptureMode mode) {
            Round round = round(kernelLength());
            float[] y = nonZeros(round.n());
            try (DeviceBuffer out = device.allocateFloats(round.n()); DeviceBuffer dy = upload(y);
                    CudaGraph graph = capturePair(mode, round, out, dy); GraphExec exec = graph.instantiate()) {
                launchAndVerify(mode + " capture", exec, round, y, out, dy);
            }
        }

        @SuppressWarnings("try") // the replaced buffers are closed early, on purpose
        private void updateGraph(CaptureMode mode) {
            Round first = round(kernelLength());
            Round second = round(first.n());
            float[] y = nonZeros(first.n());
            float[] y2 = nonZeros(first.n());
            try (DeviceBuffer out = device.allocateFloats(first.n()); DeviceBuffer dy = upload(y);
                    CudaGraph graph = capturePair(mode, first, out, dy); GraphExec exec = graph.instantiate()) {
                launchAndVerify(mode + " capture before update", exec, first, y, out, dy);
                try (DeviceBuffer out2 = device.allocateFloats(first.n()); DeviceBuffer dy2 = upload(y2)) {
                    try (CudaGraph recaptured = capturePair(mode, second, out2, dy2)) {
                        exec.update(recaptured);
                    }
                    out.close();
                    dy.close();
                    launchAndVerify(mode + " capture after update", exec, second, y2, out2, dy2);
                }
            }
        }

        @SuppressWarnings("try") // the replaced buffers are closed early, on purpose
        private void updateKernelNode() {
            Round first = round(kernelLength());
            Round second = round(first.n());
            float[] y = nonZeros(first.n());
            float[] y2 = nonZeros(first.n());
            try (DeviceBuffer out = device.allocateFloats(first.n()); DeviceBuffer dy = upload(y);
                    CudaGraph graph = CudaGraph.create()) {
                GraphNode write = graph.addKernel(writeParams(first, out));
                GraphNode axpy = graph.addKernel(axpyParams(first, out, dy), write);
                try (GraphExec exec = graph.instantiate()) {
                    launchAndVerify("built graph", exec, first, y, out, dy);
                    try (DeviceBuffer out2 = device.allocateFloats(first.n()); DeviceBuffer dy2 = upload(y2)) {
                        exec.updateKernelNode(write, writeParams(second, out2));
                        exec.updateKernelNode(axpy, axpyParams(second, out2, dy2));
                        out.close();
                        dy.close();
                        launchAndVerify("built graph after kernel-node update", exec, second, y2, out2, dy2);
                    }
                }
            }
        }

        private void allocate() {
            List<DeviceBuffer> buffers = new ArrayList<>();
            List<Round> rounds = new ArrayList<>();
            try {
                for (int count = 1 + random.nextInt(4); buffers.size() < count; ) {
                    Round round = round((int) (logUniform(MIN_ALLOCATION_BYTES, MAX_ALLOCATION_BYTES) / Float.BYTES));
                    DeviceBuffer buffer = device.allocateFloats(round.n());
                    buffers.add(buffer);
                    rounds.add(round);
                    buffer.memsetAsync(POISON, stream);
                    writePattern.launch(stream, config(round.n()), buffer, round.n(), round.scale(), round.offset());
                }
                stream.synchronize();
                for (int b = 0; b < buffers.size(); b++) {
                    verifySlices(buffers.get(b), rounds.get(b));
                }
            } finally {
                while (!buffers.isEmpty()) {
                    buffers.remove(random.nextInt(buffers.size())).close(); // in any order
                }
            }
        }

        /** Reads a buffer back a slice at a time, so a 64 MiB allocation needs only a 4 MiB host array. */
        private void verifySlices(DeviceBuffer buffer, Round round) {
            int n = round.n();
            Mismatch mismatch = new Mismatch();
            float[] chunk = new float[Math.min(n, CHUNK_FLOATS)];
            for (int from = 0; from < n; from += CHUNK_FLOATS) {
                int length = Math.min(CHUNK_FLOATS, n - from);
                float[] part = length == chunk.length ? chunk : new float[length];
                Arrays.fill(part, Float.NaN);
                buffer.slice(from, length).copyTo(part);
                for (int i = 0; i < length; i++) {
                    mismatch.compare(from + i, round.out(from + i), part[i]);
                }
            }
            mismatch.report("allocate " + n * (long) Float.BYTES + " bytes, write_pattern", n);
        }

        private void syncCopy() {
            float[] values = nonZeros((int) logUniform(MIN_FLOATS, maxCopyFloats));
            try (DeviceBuffer source = upload(values); DeviceBuffer copy = device.allocateFloats(values.length)) {
                copy.memset(POISON);
                copy.copyFrom(source);
                float[] back = TestData.nans(values.length);
                copy.copyTo(back);
                check("sync copy", values, back);
            }
        }

        private void pinnedAsyncCopy() {
            int n = (int) logUniform(MIN_FLOATS, MAX_PINNED_FLOATS);
            long bytes = (long) n * Float.BYTES;
            float a = nonZero();
            float[] x = nonZeros(n);
            float[] y = nonZeros(n);
            try (PinnedBuffer inputs = Cuda.allocatePinned(2 * bytes); PinnedBuffer result = Cuda.allocatePinned(bytes);
                    DeviceBuffer dx = device.allocateFloats(n); DeviceBuffer dy = device.allocateFloats(n)) {
                MemorySegment in = inputs.segment();
                MemorySegment.copy(x, 0, in, ValueLayout.JAVA_FLOAT, 0, n);
                MemorySegment.copy(y, 0, in, ValueLayout.JAVA_FLOAT, bytes, n);
                result.segment().fill((byte) POISON);
                dx.copyFromAsync(in.asSlice(0, bytes), stream);
                dy.copyFromAsync(in.asSlice(bytes, bytes), stream);
                saxpy.launch(stream, config(n), n, a, dx, dy);
                dy.copyToAsync(result.segment(), stream);
                stream.synchronize();
                check("pinned async copy, saxpy", fma(a, x, y), result.segment().toArray(ValueLayout.JAVA_FLOAT));
            }
        }

        private void events() {
            Round round = round(kernelLength());
            int n = round.n();
            float[] y = nonZeros(n);
            try (CudaStream other = device.createStream(); CudaEvent start = device.createEvent();
                    CudaEvent written = device.createEvent(); DeviceBuffer out = device.allocateFloats(n);
                    DeviceBuffer dy = upload(y)) {
                out.memsetAsync(POISON, stream);
                start.record(stream);
                writePattern.launch(stream, config(n), out, n, round.scale(), round.offset());
                written.record(stream);
                other.waitFor(written); // saxpy on the other stream reads what write_pattern wrote on this one
                saxpy.launch(other, config(n), n, round.a(), out, dy);
                other.synchronize();
                float millis = written.elapsedMillisSince(start);
                if (!(millis >= 0 && millis < 60_000)) {
                    wrong("events: elapsedMillisSince gave " + millis + " ms");
                }
                verify("events", round, round.apply(y), out, dy);
            }
        }

        /** write_pattern into out, then saxpy into y, captured from this worker's stream. */
        private CudaGraph capturePair(CaptureMode mode, Round round, DeviceBuffer out, DeviceBuffer y) {
            try (StreamCapture capture = StreamCapture.begin(stream, mode)) {
                writePattern.launch(stream, config(round.n()), out, round.n(), round.scale(), round.offset());
                saxpy.launch(stream, config(round.n()), round.n(), round.a(), out, y);
                return capture.end();
            }
        }

        private KernelLaunch writeParams(Round round, DeviceBuffer out) {
            return KernelLaunch.of(writePattern, config(round.n()), out, round.n(), round.scale(), round.offset());
        }

        private KernelLaunch axpyParams(Round round, DeviceBuffer out, DeviceBuffer y) {
            return KernelLaunch.of(saxpy, config(round.n()), round.n(), round.a(), out, y);
        }

        /** Launches a graph doing {@code round} 1 to 3 times, poisoning out before each, and checks the result. */
        private void launchAndVerify(String what, GraphExec exec, Round round, float[] y, DeviceBuffer out,
                DeviceBuffer dy) {
            float[] expected = y;
            for (int launches = 1 + random.nextInt(3); launches > 0; launches--) {
                out.memsetAsync(POISON, stream);
                exec.launch(stream);
                expected = round.apply(expected);
            }
            stream.synchronize();
            verify(what, round, expected, out, dy);
        }

        private void verify(String what, Round round, float[] expectedY, DeviceBuffer out, DeviceBuffer dy) {
            check(what + ", write_pattern", round.out(), out.toFloatArray());
            check(what + ", saxpy", expectedY, dy.toFloatArray());
        }

        private void check(String what, float[] expected, float[] actual) {
            Mismatch mismatch = new Mismatch();
            for (int i = 0; i < expected.length; i++) {
                mismatch.compare(i, expected[i], actual[i]);
            }
            mismatch.report(what, expected.length);
        }

        private void wrong(String message) {
            wrongResults.increment();
            problem(Thread.currentThread().getName() + " wrong result: " + message, null);
        }

        private DeviceBuffer upload(float[] values) {
            DeviceBuffer buffer = device.allocateFloats(values.length);
            try {
                buffer.copyFrom(values);
            } catch (RuntimeException e) {
                buffer.close();
                throw e;
            }
            return buffer;
        }

        private Round round(int n) {
            return new Round(n, nonZero(), nonZero(), nonZero());
        }

        private int kernelLength() {
            return (int) logUniform(MIN_FLOATS, MAX_KERNEL_FLOATS);
        }

        /** Uniform in magnitude on [0.5, 2) with a random sign: never zero, never subnormal. */
        private float nonZero() {
            float magnitude = (float) (0.5 + 1.5 * random.nextDouble());
            return random.nextBoolean() ? magnitude : -magnitude;
        }

        private float[] nonZeros(int n) {
            float[] values = new float[n];
            for (int i = 0; i < n; i++) {
                values[i] = nonZero();
            }
            return values;
        }

        /** Log-uniform in [min, max], so that small and large sizes are equally common. */
        private long logUniform(long min, long max) {
            return Math.min(max, (long) Math.exp(Math.log(min) + random.nextDouble() * Math.log((double) max / min)));
        }

        /** Counts elements that differ from the expected ones; NaN, the poison, differs from everything. */
        private final class Mismatch {
            private long count;
            private long first = -1;
            private float expected;
            private float actual;

            void compare(long index, float expectedValue, float actualValue) {
                if (!(actualValue == expectedValue) && count++ == 0) {
                    first = index;
                    expected = expectedValue;
                    actual = actualValue;
                }
            }

            void report(String what, long length) {
                if (count > 0) {
                    wrong(String.format(Locale.ROOT, "%s: %d of %d elements wrong, first [%d] = %s, expected %s",
                            what, count, length, first, actual, expected));
                }
            }
        }
    }

    private static LaunchConfig config(int n) {
        return LaunchConfig.of(grid(n), Dim3.of(BLOCK));
    }

    /** The kernels loop over the grid, so a bounded grid covers any length. */
    private static Dim3 grid(int n) {
        return Dim3.of(Math.min((n + BLOCK - 1) / BLOCK, 1024));
    }
}
