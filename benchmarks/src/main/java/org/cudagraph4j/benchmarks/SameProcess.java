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
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaRuntimeNotFoundException;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;

/**
 * The same-process native baseline: the launch loops of {@code LaunchOverhead} run through the
 * library and, in C, through {@code benchmarks/native/same_process.cu} built into a shared library
 * and called through FFM, in one JVM, on one GPU, taking turns round by round (which goes first
 * alternates). A round's Java time over its C time is one ratio; the median ratio over the rounds,
 * with its quartiles, is what this reports. Separate processes drift by 10 to 30% on a shared
 * machine, more than the 2% the launch-overhead targets allow; within one process both sides see
 * the same clocks, the same context and the same other tenants.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.SameProcess \
 *       --library build/libcg4j_same_process.so [--rounds 31] [--iterations 2000] [--json same-process.json]
 * </pre>
 * Without a GPU it prints one line and exits 2.
 */
public final class SameProcess {
    private static final int[] SIZES = {1, 16, 128};
    private static final long WARMUP_NANOS = 2_000_000_000L;

    /** One loop's result: per-iteration medians and the Java/C ratio's median and quartiles. */
    record Row(String loop, int n, double javaMicros, double nativeMicros, double ratio, double ratioP25,
            double ratioP75, int rounds) {}

    private final Gpu gpu;
    private final MethodHandle eager;
    private final MethodHandle graph;
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

    public static void main(String[] args) throws Throwable {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        if (!options.containsKey("library")) {
            System.err.println("usage: SameProcess --library libcg4j_same_process.so [--rounds 31] [--iterations 2000]"
                    + " [--json FILE]");
            System.exit(2);
        }
        int rounds = Integer.parseInt(options.getOrDefault("rounds", "31"));
        int iterations = Integer.parseInt(options.getOrDefault("iterations", "2000"));
        Gpu gpu;
        try {
            gpu = new Gpu();
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("SameProcess: needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(""));
            System.exit(2);
            return;
        }
        List<Row> rows = new ArrayList<>();
        try (gpu; Arena arena = Arena.ofConfined()) {
            SameProcess baseline = new SameProcess(gpu, Path.of(options.get("library")), arena);
            try {
                baseline.warmUp(iterations);
                for (int n : SIZES) {
                    rows.add(baseline.compare("eager", n, rounds, iterations));
                    rows.add(baseline.compare("graph", n, rounds, iterations));
                }
            } finally {
                baseline.close.invokeExact();
            }
        }
        System.out.println("loop   |    N | Java µs/iter | C µs/iter | Java/C median | quartiles     | rounds");
        for (Row row : rows) {
            System.out.printf(Locale.ROOT, "%-6s | %4d | %12.2f | %9.2f | %13.3f | %.3f - %.3f | %d%n", row.loop(),
                    row.n(), row.javaMicros(), row.nativeMicros(), row.ratio(), row.ratioP25(), row.ratioP75(),
                    row.rounds());
        }
        if (options.containsKey("json")) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("iterationsPerRound", iterations);
            report.put("rows", rows);
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(Path.of(options.get("json"))
                    .toFile(), report);
        }
    }

    /** Both sides, every loop, for two seconds: the clocks rise and both JITs settle first. */
    private void warmUp(int iterations) throws Throwable {
        long end = System.nanoTime() + WARMUP_NANOS;
        while (System.nanoTime() < end) {
            for (int n : SIZES) {
                time("eager", n, iterations / 10 + 1, false, null);
                time("eager", n, iterations / 10 + 1, true, null);
            }
        }
    }

    private Row compare(String loop, int n, int rounds, int iterations) throws Throwable {
        double[] javaNanos = new double[rounds];
        double[] nativeNanos = new double[rounds];
        double[] ratios = new double[rounds];
        try (CudaGraph chain = gpu.captureEmptyChain(n); GraphExec exec = gpu.ready(chain)) {
            for (int round = 0; round < rounds; round++) {
                boolean javaFirst = round % 2 == 0;
                double first = time(loop, n, iterations, !javaFirst, exec);
                double second = time(loop, n, iterations, javaFirst, exec);
                javaNanos[round] = javaFirst ? first : second;
                nativeNanos[round] = javaFirst ? second : first;
                ratios[round] = javaNanos[round] / nativeNanos[round];
            }
        }
        Arrays.sort(javaNanos);
        Arrays.sort(nativeNanos);
        Arrays.sort(ratios);
        return new Row(loop, n, javaNanos[rounds / 2] / iterations / 1e3, nativeNanos[rounds / 2] / iterations / 1e3,
                ratios[rounds / 2], ratios[rounds / 4], ratios[(3 * rounds) / 4], rounds);
    }

    /**
     * Nanoseconds for {@code iterations} of one loop, in C ({@code inC}) or through the library;
     * {@code exec}, an {@code n}-node chain, for the graph loop.
     */
    private double time(String loop, int n, int iterations, boolean inC, GraphExec exec) throws Throwable {
        if (inC) {
            long nanos = loop.equals("eager") ? (long) eager.invokeExact(n, iterations)
                    : (long) graph.invokeExact(n, iterations);
            if (nanos < 0) {
                throw new IllegalStateException("the C " + loop + " loop failed with cudaError_t " + -nanos);
            }
            return nanos;
        }
        long start = System.nanoTime();
        for (int it = 0; it < iterations; it++) {
            if (loop.equals("eager")) {
                for (int i = 0; i < n; i++) {
                    gpu.empty.launch(gpu.emptyLaunch, gpu.noArguments);
                }
            } else {
                exec.launch(gpu.stream);
            }
            gpu.stream.synchronize();
        }
        return System.nanoTime() - start;
    }
}
