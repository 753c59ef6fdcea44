package org.cudagraph4j.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.cudagraph4j.serving.CaptureReport;
import org.cudagraph4j.serving.InferenceEngine;
import org.cudagraph4j.serving.LaneModel;
import org.cudagraph4j.serving.ServingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * How long an {@link InferenceEngine} takes to start with every bucket of the default ladder (35
 * buckets, 2 lanes, a 16-layer {@code Linear(512, 512)} + ReLU MLP): captured (warm-up, capture,
 * instantiate) against loaded from the {@link org.cudagraph4j.graph.GraphArchive}s a first start
 * saved. The two alternate over {@code rounds}, so that clocks and other processes weigh on both
 * alike; the medians and their ratio are printed.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.EngineStartup [rounds]
 * </pre>
 * Without a GPU it prints one line and exits 2.
 */
@Command(name = "EngineStartup", mixinStandardHelpOptions = true,
        description = "An engine's start with every bucket captured against one loading its graph archives.")
public final class EngineStartup implements Callable<Integer> {
    private static final int WIDTH = 512;
    private static final int LAYERS = 16;

    private EngineStartup() {}

    @Parameters(index = "0", arity = "0..1", defaultValue = "5",
            description = "starts of each kind, of which the median counts (default: ${DEFAULT-VALUE})")
    int rounds;

    public static void main(String[] args) {
        System.exit(Cli.execute(new EngineStartup(), args));
    }

    @Override
    public Integer call() throws Exception {
        if (rounds < 1) {
            System.err.println("EngineStartup: the number of rounds must be positive, got " + rounds);
            return 2;
        }
        CudaDevice device;
        try {
            device = Cuda.device(0);
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("EngineStartup: needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(""));
            return 2;
        }
        Path archives = Files.createTempDirectory("cg4j-archives");
        List<DeviceBuffer> weights = new ArrayList<>();
        try (ShippedKernels kernels = ShippedKernels.load(device)) {
            SplittableRandom random = new SplittableRandom(42);
            List<Linear> layers = new ArrayList<>();
            for (int l = 0; l < LAYERS; l++) {
                DeviceBuffer w = device.allocateFloats((long) WIDTH * WIDTH);
                DeviceBuffer b = device.allocateFloats(WIDTH);
                weights.add(w);
                weights.add(b);
                w.copyFrom(uniform(WIDTH * WIDTH, Math.sqrt(6.0 / WIDTH), random));
                b.copyFrom(uniform(WIDTH, 0.1, random));
                layers.add(new Linear(kernels, w, b, WIDTH, WIDTH));
            }
            LaneModel.Factory model = d -> LaneModel.of(new Mlp(kernels, layers, 256), Linear.Mode.FUSED);
            ServingOptions captured = ServingOptions.defaults();
            ServingOptions loaded = captured.withGraphArchives(archives);
            start(device, model, loaded, "save"); // fills the archives
            double[] capture = new double[rounds];
            double[] load = new double[rounds];
            for (int round = 0; round < rounds; round++) {
                capture[round] = start(device, model, captured, "capture");
                load[round] = start(device, model, loaded, "load");
            }
            Arrays.sort(capture);
            Arrays.sort(load);
            System.out.printf(Locale.ROOT, "engine start, %d buckets x %d lanes, median of %d: captured %.1f ms, "
                    + "loaded from archives %.1f ms, ratio %.2f%n", captured.ladder().sizes().size(), captured.lanes(),
                    rounds, capture[rounds / 2], load[rounds / 2], load[rounds / 2] / capture[rounds / 2]);
        } finally {
            weights.forEach(DeviceBuffer::close);
            try (Stream<Path> files = Files.walk(archives)) {
                files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
        return 0;
    }

    /** Starts and closes an engine; the milliseconds the start took. */
    private static double start(CudaDevice device, LaneModel.Factory model, ServingOptions options, String label) {
        long began = System.nanoTime();
        try (InferenceEngine engine = InferenceEngine.start(device, WIDTH, WIDTH, model, options)) {
            double millis = (System.nanoTime() - began) / 1e6;
            List<CaptureReport> reports = engine.captureReports();
            long fromArchive = reports.stream().filter(CaptureReport::fromArchive).count();
            Duration graphs = reports.stream().map(r -> r.capture().plus(r.instantiate()))
                    .reduce(Duration.ZERO, Duration::plus);
            System.out.printf(Locale.ROOT, "%-8s start %8.1f ms: %d graphs (%d from archives), %.1f ms in capture or "
                    + "load and instantiate%n", label, millis, reports.size(), fromArchive, graphs.toNanos() / 1e6);
            return millis;
        }
    }

    private static float[] uniform(int length, double bound, SplittableRandom random) {
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
        }
        return values;
    }
}
