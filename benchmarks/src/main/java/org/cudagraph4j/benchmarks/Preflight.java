package org.cudagraph4j.benchmarks;

import java.util.Locale;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaRuntimeNotFoundException;

/**
 * Checks for a GPU before a benchmark run. Prints the result folder's name ({@code <gpu>-<date>},
 * e.g. {@code nvidia-h200-2026-11-29}) and exits 0, or prints one line saying why there is no
 * device and exits 2.
 *
 * <pre>
 *   Preflight [--as run-benchmarks] [--min-devices N]
 * </pre>
 * {@code --as} names the script in that line. With {@code --min-devices}, fewer GPUs than N is
 * also such a line, and a second line gives the host's GPU count.
 */
public final class Preflight {
    private Preflight() {}

    public static void main(String[] args) {
        String script = "run-benchmarks";
        int minDevices = 0;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--as" -> script = args[i + 1];
                case "--min-devices" -> minDevices = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        try {
            int count = Cuda.deviceCount();
            if (count == 0) {
                fail(script, "needs a CUDA GPU: no CUDA device is present");
            }
            if (count < minDevices) {
                fail(script, "needs " + minDevices + " CUDA GPUs; this host has " + count);
            }
            String name = Cuda.device(0).properties().name();
            String slug = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("(^-|-$)", "");
            System.out.println(slug + "-" + java.time.LocalDate.now());
            if (minDevices > 0) {
                System.out.println(count);
            }
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            fail(script, "needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(e.toString()));
        }
    }

    private static void fail(String script, String reason) {
        System.err.println(script + ": " + reason);
        System.exit(2);
    }
}
