package org.cudagraph4j.benchmarks;

import java.util.Locale;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaRuntimeNotFoundException;

/**
 * Checks for a GPU before a benchmark run. Prints the result folder's name ({@code <gpu>-<date>},
 * e.g. {@code nvidia-h200-2026-11-29}) and exits 0, or prints one line saying why there is no
 * device and exits 2.
 */
public final class Preflight {
    private Preflight() {}

    public static void main(String[] args) {
        try {
            if (Cuda.deviceCount() == 0) {
                fail("no CUDA device is present");
            }
            String name = Cuda.device(0).properties().name();
            String slug = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("(^-|-$)", "");
            System.out.println(slug + "-" + java.time.LocalDate.now());
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            fail(e.getMessage().lines().findFirst().orElse(e.toString()));
        }
    }

    private static void fail(String reason) {
        System.err.println("run-benchmarks: needs a CUDA GPU: " + reason);
        System.exit(2);
    }
}
