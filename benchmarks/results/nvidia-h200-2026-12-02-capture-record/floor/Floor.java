// The capture and update loops of SameProcess taken apart, each variant timed against the same C
// loop (libcg4j_same_process.so) in the same rounds of one process, variants taking turns:
//   C       the C loop
//   raw     the same calls through the generated bindings (cudart_h), no library code
//   crit    raw, with cudaLaunchKernel bound with Linker.Option.critical(false)
//   klaunch raw begin and end, the launches through CudaKernel.launch (the library does not know
//           the stream is capturing)
//   cleaner raw, plus a Lifetime registered with the Cleaner and closed per capture
//   tracker raw, plus a CaptureTracker capture per capture (with a new Slot each time, so it
//           overstates a capture's tracking by one synchronized WeakHashMap insertion)
//   scope   raw launches inside a StreamCapture, the CudaGraph it returns closed
//   lib     Gpu.captureEmptyChain(n).close(), as SameProcess times it
// Built against the library and benchmark classes, run as
//   java --enable-native-access=ALL-UNNAMED -cp floor:benchmarks.jar:cudagraph4j.jar \
//       org.cudagraph4j.benchmarks.Floor libcg4j_same_process.so ROUNDS [capture|update|all] [VARIANTS]
package org.cudagraph4j.benchmarks;

import static java.lang.foreign.ValueLayout.*;

import java.io.InputStream;
import java.lang.foreign.*;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.*;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.cudart.cudaKernelNodeParams;
import org.cudagraph4j.cudart.cudart_h;
import org.cudagraph4j.cudart.dim3;
import org.cudagraph4j.graph.*;

/** Capture and update decomposed, each variant against C in the same rounds of one process. */
public class Floor {
    static MethodHandle cCapture, cUpdate, crit, critInfo;
    static Gpu gpu;
    static MemorySegment f, s, g, b, out, params;

    public static void main(String[] args) throws Throwable {
        int rounds = Integer.parseInt(args[1]);
        gpu = new Gpu();
        Arena arena = Arena.ofShared();
        Linker linker = Linker.nativeLinker();
        SymbolLookup symbols = SymbolLookup.libraryLookup(Path.of(args[0]), arena);
        MethodHandle init = linker.downcallHandle(symbols.find("cg4j_same_process_init").get(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        cCapture = linker.downcallHandle(symbols.find("cg4j_same_process_capture").get(), FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT));
        cUpdate = linker.downcallHandle(symbols.find("cg4j_same_process_update_node").get(), FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_INT));
        byte[] image;
        try (InputStream in = Gpu.class.getResourceAsStream("empty.fatbin")) { image = in.readAllBytes(); }
        MemorySegment ni = arena.allocate(image.length + 1L, 16);
        MemorySegment.copy(MemorySegment.ofArray(image), 0, ni, 0, image.length);
        if ((int) init.invokeExact(ni, (long) image.length) != 0) throw new IllegalStateException("init");
        f = gpu.empty.handle(); s = gpu.stream.handle();
        g = dim3.allocate(arena); b = dim3.allocate(arena);
        dim3.x(g, 1); dim3.y(g, 1); dim3.z(g, 1); dim3.x(b, 1); dim3.y(b, 1); dim3.z(b, 1);
        out = arena.allocate(ADDRESS);
        params = cudaKernelNodeParams.allocate(arena);
        crit = linker.downcallHandle(cudart_h.cudaLaunchKernel$address(), cudart_h.cudaLaunchKernel$descriptor(), Linker.Option.critical(false));
        String[] capture = args.length > 3 ? args[3].split(",") : new String[] {"C", "raw", "scope", "lib"};
        String[] update = {"C", "raw", "lib"};
        String only = args.length > 2 ? args[2] : "";
        if (!only.equals("update")) for (int n : new int[] {10, 100}) run("capture", n, capture, rounds, Math.max(2, 20000 / n));
        if (!only.equals("capture")) for (int n : new int[] {10, 1000}) run("update", n, update, rounds, 20000);
    }

    static void run(String loop, int n, String[] variants, int rounds, int reps) throws Throwable {
        CudaGraph chain = null; GraphExec exec = null; GraphNode middle = null; KernelLaunch[] shapes = null;
        if (loop.equals("update")) {
            chain = gpu.captureEmptyChain(n); exec = gpu.ready(chain); middle = chain.nodes().get(n / 2);
            KernelLaunch launch = middle.kernelParams().orElseThrow();
            shapes = new KernelLaunch[] {launch.withConfig(LaunchConfig.of(Dim3.of(2), Gpu.ONE)), launch};
        }
        double[][] t = new double[variants.length][rounds];
        long warmEnd = System.nanoTime() + 1_500_000_000L;
        while (System.nanoTime() < warmEnd) for (String v : variants) time(loop, v, n, reps / 4 + 1, exec, middle, shapes);
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < variants.length; k++) {
                int i = (k + r) % variants.length;
                t[i][r] = time(loop, variants[i], n, reps, exec, middle, shapes) / reps;
            }
        }
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%-7s n=%4d", loop, n));
        for (int i = 0; i < variants.length; i++) {
            double[] ratio = new double[rounds], abs = t[i].clone();
            for (int r = 0; r < rounds; r++) ratio[r] = t[i][r] / t[0][r];
            Arrays.sort(ratio); Arrays.sort(abs);
            sb.append(String.format(Locale.ROOT, " | %s %.3fus %.3fx (%.3f-%.3f)", variants[i], abs[rounds / 2] / 1e3,
                    ratio[rounds / 2], ratio[rounds / 4], ratio[3 * rounds / 4]));
        }
        System.out.println(sb);
        if (exec != null) { exec.close(); chain.close(); }
    }

    static double time(String loop, String v, int n, int reps, GraphExec exec, GraphNode middle, KernelLaunch[] shapes) throws Throwable {
        if (v.equals("C")) {
            long ns = loop.equals("capture") ? (long) cCapture.invokeExact(n, reps) : (long) cUpdate.invokeExact(n, reps);
            if (ns < 0) throw new IllegalStateException("C failed " + ns);
            return ns;
        }
        long t0 = System.nanoTime();
        if (loop.equals("update")) {
            MemorySegment e = exec.handle(), node = middle.handle();
            for (int r = 0; r < reps; r++) {
                if (v.equals("raw")) {
                    cudaKernelNodeParams.func(params, f);
                    MemorySegment gd = cudaKernelNodeParams.gridDim(params);
                    dim3.x(gd, (r & 1) == 0 ? 2 : 1); dim3.y(gd, 1); dim3.z(gd, 1);
                    MemorySegment bd = cudaKernelNodeParams.blockDim(params);
                    dim3.x(bd, 1); dim3.y(bd, 1); dim3.z(bd, 1);
                    cudaKernelNodeParams.sharedMemBytes(params, 0);
                    cudaKernelNodeParams.kernelParams(params, MemorySegment.NULL);
                    cudaKernelNodeParams.extra(params, MemorySegment.NULL);
                    check(cudart_h.cudaGraphExecKernelNodeSetParams(e, node, params));
                } else {
                    return updateLib(exec, middle, shapes, reps);
                }
            }
            return System.nanoTime() - t0;
        }
        for (int r = 0; r < reps; r++) {
            switch (v) {
                case "lib" -> { return captureLib(n, reps); }
                case "raw" -> {
                    check(cudart_h.cudaStreamBeginCapture(s, 0));
                    for (int i = 0; i < n; i++) check(cudart_h.cudaLaunchKernel(f, g, b, MemorySegment.NULL, 0, s));
                    check(cudart_h.cudaStreamEndCapture(s, out));
                    check(cudart_h.cudaGraphDestroy(out.get(ADDRESS, 0)));
                }
                case "crit" -> {
                    check(cudart_h.cudaStreamBeginCapture(s, 0));
                    for (int i = 0; i < n; i++) check((int) crit.invokeExact(f, g, b, MemorySegment.NULL, 0L, s));
                    check(cudart_h.cudaStreamEndCapture(s, out));
                    check(cudart_h.cudaGraphDestroy(out.get(ADDRESS, 0)));
                }
                case "klaunch" -> {
                    check(cudart_h.cudaStreamBeginCapture(s, 0));
                    for (int i = 0; i < n; i++) gpu.empty.launch(gpu.stream, gpu.emptyLaunch, gpu.noArguments);
                    check(cudart_h.cudaStreamEndCapture(s, out));
                    check(cudart_h.cudaGraphDestroy(out.get(ADDRESS, 0)));
                }
                case "cleaner" -> {
                    check(cudart_h.cudaStreamBeginCapture(s, 0));
                    for (int i = 0; i < n; i++) check(cudart_h.cudaLaunchKernel(f, g, b, MemorySegment.NULL, 0, s));
                    check(cudart_h.cudaStreamEndCapture(s, out));
                    Object owner = new Object();
                    org.cudagraph4j.internal.lifetime.Lifetime life = new org.cudagraph4j.internal.lifetime.Lifetime(
                            org.cudagraph4j.internal.lifetime.LiveCounters.Kind.GRAPH, 0, "x", out, () -> check(cudart_h.cudaGraphDestroy(out.get(ADDRESS, 0))));
                    life.watch(owner);
                    life.close();
                }
                case "tracker" -> {
                    var cap = org.cudagraph4j.internal.lifetime.CaptureTracker.begin(new org.cudagraph4j.internal.lifetime.CaptureTracker.Slot(s), "x", String.class);
                    check(cudart_h.cudaStreamBeginCapture(s, 0));
                    for (int i = 0; i < n; i++) check(cudart_h.cudaLaunchKernel(f, g, b, MemorySegment.NULL, 0, s));
                    cap.endRuns(x -> 0);
                    check(cudart_h.cudaStreamEndCapture(s, out));
                    cap.handOver().dropAll();
                    check(cudart_h.cudaGraphDestroy(out.get(ADDRESS, 0)));
                }
                case "scope" -> {
                    try (StreamCapture c = StreamCapture.begin(gpu.stream, CaptureMode.GLOBAL)) {
                        for (int i = 0; i < n; i++) check(cudart_h.cudaLaunchKernel(f, g, b, MemorySegment.NULL, 0, s));
                        c.end().close();
                    }
                }
                default -> throw new IllegalArgumentException(v);
            }
        }
        return System.nanoTime() - t0;
    }

    static long updateLib(GraphExec exec, GraphNode middle, KernelLaunch[] shapes, int reps) {
        long t0 = System.nanoTime();
        for (int r = 0; r < reps; r++) exec.updateKernelNode(middle, shapes[r & 1]);
        return System.nanoTime() - t0;
    }

    static long captureLib(int n, int reps) {
        long t0 = System.nanoTime();
        for (int r = 0; r < reps; r++) gpu.captureEmptyChain(n).close();
        return System.nanoTime() - t0;
    }

    static void check(int st) { if (st != 0) throw new IllegalStateException("status " + st); }
}
