package org.cudagraph4j.benchmarks;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.UndeclaredThrowableException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The same-process native baseline: the loops of {@code LaunchOverhead} and {@code GraphLifecycle}
 * run through the library and, in C, through {@code benchmarks/native/same_process.cu} built into
 * a shared library and called through FFM, in one JVM, on one GPU, taking turns round by round
 * (which goes first alternates). A round's Java time over its C time is one ratio; the median
 * ratio over the rounds, with its quartiles, is what this reports. Separate processes drift by 10
 * to 30% on a shared machine, more than the 2% the launch-overhead targets allow; within one
 * process both sides see the same clocks, the same context and the same other tenants.
 *
 * <p>The loops: {@code eager} (N launches and a sync), {@code graph} (an N-node graph's launch and
 * a sync), {@code capture} (N launches captured into a graph, which is then closed) and
 * {@code update-node} (one kernel node of an N-node executable given a new launch shape).
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.SameProcess \
 *       --library build/libcg4j_same_process.so [--rounds 31] [--iterations 2000] [--json same-process.json]
 * </pre>
 * {@code --iterations} is per round for {@code eager} and {@code graph}; a capture of N nodes runs
 * {@code iterations * 10 / N} times a round (at least twice), an update {@code iterations * 10} times,
 * so that every round lasts tens of milliseconds. Without a GPU it prints one line and exits 2.
 */
public final class SameProcess {
    private static final long WARMUP_NANOS = 2_000_000_000L;

    /** A loop timed on both sides, and the sizes N it runs at. */
    enum Loop {
        EAGER("eager", 1, 16, 128),
        GRAPH("graph", 1, 16, 128),
        CAPTURE("capture", 10, 100, 1000),
        UPDATE_NODE("update-node", 10, 100, 1000);

        final String label;
        final int[] sizes;

        Loop(String label, int... sizes) {
            this.label = label;
            this.sizes = sizes;
        }

        /** Repetitions per round for {@code n}, given the rounds' {@code iterations} for the launch loops. */
        int repetitions(int n, int iterations) {
            return switch (this) {
                case EAGER, GRAPH -> iterations;
                case CAPTURE -> Math.max(2, iterations * 10 / n);
                case UPDATE_NODE -> iterations * 10;
            };
        }
    }

    /** One loop's result: per-repetition medians and the Java/C ratio's median and quartiles. */
    record Row(String loop, int n, double javaMicros, double nativeMicros, double ratio, double ratioP25,
            double ratioP75, int rounds) {}

    private final Gpu gpu;
    private final MethodHandle eager;
    private final MethodHandle graph;
    private final MethodHandle capture;
    private final MethodHandle updateNode;
    private final MethodHandle close;

    private SameProcess(Gpu gpu, Path library, Arena arena) throws Throwable {
        this.gpu = gpu;
        Linker linker = Linker.nativeLinker();
        SymbolLookup symbols = SymbolLookup.libraryLookup(library, arena);
        MethodHandle init = linker.downcallHandle(symbol(symbols, "cg4j_same_process_init"),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        eager = linker.downcallHandle(symbol(symbols, "cg4j_same_process_eager"),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT));
        graph = linker.downcallHandle(symbol(symbols, "cg4j_same_process_graph"),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT));
        capture = linker.downcallHandle(symbol(symbols, "cg4j_same_process_capture"),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT));
        updateNode = linker.downcallHandle(symbol(symbols, "cg4j_same_process_update_node"),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT));
        close = linker.downcallHandle(symbol(symbols, "cg4j_same_process_close"), FunctionDescriptor.ofVoid());
        byte[] image;
        try (InputStream in = Gpu.class.getResourceAsStream("empty.fatbin")) {
            image = in.readAllBytes();
        }
        // The C side loads the same image the Java side does; the copy lives as long as the arena.
        MemorySegment nativeImage = arena.allocate(image.length + 1L, 16);
        MemorySegment.copy(MemorySegment.ofArray(image), 0, nativeImage, 0, image.length);
        int status = (int) init.invokeExact(nativeImage, (long) image.length);
        if (status != 0) {
            throw new IllegalStateException("cg4j_same_process_init failed with cudaError_t " + status);
        }
    }

    private static MemorySegment symbol(SymbolLookup symbols, String name) {
        return symbols.find(name).orElseThrow(() -> new IllegalArgumentException("the library has no " + name));
    }

    public static void main(String[] args) {
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line. */
    @Command(name = "SameProcess", mixinStandardHelpOptions = true,
            description = "Java and C launch loops alternating in one JVM, over one set of GPU resources.")
    static final class Main implements Callable<Integer> {
        @Option(names = "--library", required = true, description = "the C loops, libcg4j_same_process.so")
        Path library;

        @Option(names = "--rounds", description = "alternating rounds per loop (default: ${DEFAULT-VALUE})")
        int rounds = 31;

        @Option(names = "--iterations", description = "iterations per round (default: ${DEFAULT-VALUE})")
        int iterations = 2000;

        @Option(names = "--json", description = "write the rows there")
        Path json;

        @Override
        public Integer call() throws Exception {
            if (rounds < 1 || iterations < 1) {
                System.err.println("SameProcess: --rounds and --iterations must be positive");
                return 2;
            }
            try {
                return run(library, rounds, iterations, json);
            } catch (Exception | Error e) {
                throw e;
            } catch (Throwable t) { // the downcall handles declare Throwable
                throw new UndeclaredThrowableException(t);
            }
        }
    }

    private static int run(Path library, int rounds, int iterations, Path json) throws Throwable {
        Gpu gpu;
        try {
            gpu = new Gpu();
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("SameProcess: needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(""));
            return 2;
        }
        List<Row> rows = new ArrayList<>();
        String device = gpu.device.properties().name();
        try (gpu; Arena arena = Arena.ofConfined()) {
            SameProcess baseline = new SameProcess(gpu, library, arena);
            try {
                baseline.warmUp(iterations);
                for (Loop loop : Loop.values()) {
                    for (int n : loop.sizes) {
                        rows.add(baseline.compare(loop, n, rounds, loop.repetitions(n, iterations)));
                    }
                }
            } finally {
                baseline.close.invokeExact();
            }
        }
        System.out.println("loop          |    N | Java µs/rep | C µs/rep | Java/C median | quartiles     | rounds");
        for (Row row : rows) {
            System.out.printf(Locale.ROOT, "%-13s | %4d | %11.2f | %8.2f | %13.3f | %.3f - %.3f | %d%n", row.loop(),
                    row.n(), row.javaMicros(), row.nativeMicros(), row.ratio(), row.ratioP25(), row.ratioP75(),
                    row.rounds());
        }
        if (json != null) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("device", device);
            report.put("iterationsPerRound", iterations);
            report.put("rows", rows);
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), report);
        }
        return 0;
    }

    /** Both sides, the eager loop, for two seconds: the clocks rise and both JITs settle first. */
    private void warmUp(int iterations) throws Throwable {
        long end = System.nanoTime() + WARMUP_NANOS;
        try (Fixture none = new Fixture(Loop.EAGER, 1)) {
            while (System.nanoTime() < end) {
                for (int n : Loop.EAGER.sizes) {
                    time(Loop.EAGER, n, iterations / 10 + 1, false, none);
                    time(Loop.EAGER, n, iterations / 10 + 1, true, none);
                }
            }
        }
    }

    private Row compare(Loop loop, int n, int rounds, int repetitions) throws Throwable {
        double[] javaNanos = new double[rounds];
        double[] nativeNanos = new double[rounds];
        double[] ratios = new double[rounds];
        try (Fixture fixture = new Fixture(loop, n)) {
            // One untimed turn each: the C side makes its graphs on first use, the Java JIT compiles.
            time(loop, n, repetitions, true, fixture);
            time(loop, n, repetitions, false, fixture);
            for (int round = 0; round < rounds; round++) {
                boolean javaFirst = round % 2 == 0;
                double first = time(loop, n, repetitions, !javaFirst, fixture);
                double second = time(loop, n, repetitions, javaFirst, fixture);
                javaNanos[round] = javaFirst ? first : second;
                nativeNanos[round] = javaFirst ? second : first;
                ratios[round] = javaNanos[round] / nativeNanos[round];
            }
        }
        Arrays.sort(javaNanos);
        Arrays.sort(nativeNanos);
        Arrays.sort(ratios);
        return new Row(loop.label, n, javaNanos[rounds / 2] / repetitions / 1e3,
                nativeNanos[rounds / 2] / repetitions / 1e3, ratios[rounds / 2], ratios[rounds / 4],
                ratios[(3 * rounds) / 4], rounds);
    }

    /** What the Java side of a loop works on: an N-node chain's executable for graph and update-node. */
    private final class Fixture implements AutoCloseable {
        final CudaGraph chain;
        final GraphExec exec;
        final GraphNode middle;
        final KernelLaunch[] shapes;

        Fixture(Loop loop, int n) {
            if (loop == Loop.GRAPH || loop == Loop.UPDATE_NODE) {
                chain = gpu.captureEmptyChain(n);
                exec = gpu.ready(chain);
                middle = chain.nodes().get(n / 2);
                KernelLaunch launch = middle.kernelParams().orElseThrow();
                shapes = new KernelLaunch[] {launch.withConfig(LaunchConfig.of(Dim3.of(2), Gpu.ONE)), launch};
            } else {
                chain = null;
                exec = null;
                middle = null;
                shapes = null;
            }
        }

        @Override
        public void close() {
            if (exec != null) {
                exec.close();
                chain.close();
            }
        }
    }

    /** Nanoseconds for {@code repetitions} of one loop at size {@code n}, in C ({@code inC}) or through the library. */
    private double time(Loop loop, int n, int repetitions, boolean inC, Fixture fixture) throws Throwable {
        if (inC) {
            long nanos = switch (loop) {
                case EAGER -> (long) eager.invokeExact(n, repetitions);
                case GRAPH -> (long) graph.invokeExact(n, repetitions);
                case CAPTURE -> (long) capture.invokeExact(n, repetitions);
                case UPDATE_NODE -> (long) updateNode.invokeExact(n, repetitions);
            };
            if (nanos < 0) {
                throw new IllegalStateException("the C " + loop.label + " loop failed with cudaError_t " + -nanos);
            }
            return nanos;
        }
        long start = System.nanoTime();
        for (int rep = 0; rep < repetitions; rep++) {
            switch (loop) {
                case EAGER -> {
                    for (int i = 0; i < n; i++) {
                        gpu.empty.launch(gpu.stream, gpu.emptyLaunch, gpu.noArguments);
                    }
                    gpu.stream.synchronize();
                }
                case GRAPH -> {
                    fixture.exec.launch(gpu.stream);
                    gpu.stream.synchronize();
                }
                case CAPTURE -> gpu.captureEmptyChain(n).close();
                case UPDATE_NODE -> fixture.exec.updateKernelNode(fixture.middle, fixture.shapes[rep & 1]);
            }
        }
        return System.nanoTime() - start;
    }
}
