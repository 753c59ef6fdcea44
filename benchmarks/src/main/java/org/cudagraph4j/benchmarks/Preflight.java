package org.cudagraph4j.benchmarks;

import java.time.LocalDate;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Checks for a GPU before a benchmark run. Prints the result folder's name ({@code <gpu>-<date>},
 * e.g. {@code nvidia-h200-2026-11-29}) and exits 0, or prints one line saying why there is no
 * device (the library's {@link Cuda#unavailableReason()}) and exits 2.
 *
 * <pre>
 *   Preflight [--as run-benchmarks] [--min-devices N]
 * </pre>
 * {@code --as} names the script in that line. With {@code --min-devices}, fewer GPUs than N is
 * also such a line, and a second line gives the host's GPU count.
 */
@Command(name = "Preflight", mixinStandardHelpOptions = true,
        description = "Prints the results folder's name for this host's GPU, or why there is none (exit 2).")
public final class Preflight implements Callable<Integer> {
    @Option(names = "--as", description = "the script named in the line (default: ${DEFAULT-VALUE})")
    String script = "run-benchmarks";

    @Option(names = "--min-devices", description = "the fewest GPUs the script needs (default: ${DEFAULT-VALUE})")
    int minDevices = 0;

    public static void main(String[] args) {
        System.exit(Cli.execute(new Preflight(), args));
    }

    @Override
    public Integer call() {
        try {
            int count = Cuda.deviceCount();
            if (count == 0) {
                return fail("needs a CUDA GPU: " + Cuda.unavailableReason().orElse("no CUDA device is present"));
            }
            if (count < minDevices) {
                return fail("needs " + minDevices + " CUDA GPUs; this host has " + count);
            }
            String name = Cuda.device(0).properties().name();
            String slug = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-").replaceAll("(^-|-$)", "");
            System.out.println(slug + "-" + LocalDate.now());
            if (minDevices > 0) {
                System.out.println(count);
            }
            return 0;
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            return fail("needs a CUDA GPU: " + e.getMessage().lines().findFirst().orElse(e.toString()));
        }
    }

    private int fail(String reason) {
        System.err.println(script + ": " + reason);
        return 2;
    }
}
