package org.cudagraph4j.benchmarks;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Copy bandwidth between every ordered pair of GPUs of this host: {@code DeviceBuffer.copyFrom}
 * of {@code --mib} MiB, first without peer access (the runtime may stage it through the host), then
 * after {@link CudaDevice#enablePeerAccess} where the hardware allows it. Median of {@code --repeats}
 * copies, in GB/s.
 *
 * <pre>
 *   java --enable-native-access=ALL-UNNAMED -cp benchmarks.jar org.cudagraph4j.benchmarks.PeerCopy [--mib 256] [--repeats 11]
 * </pre>
 * With fewer than two GPUs it prints one line and exits 2.
 */
@Command(name = "PeerCopy", mixinStandardHelpOptions = true,
        description = "Copy bandwidth between every ordered pair of this host's GPUs, without and with peer access.")
public final class PeerCopy implements Callable<Integer> {
    @Option(names = "--mib", description = "MiB per copy (default: ${DEFAULT-VALUE})")
    int mib = 256;

    @Option(names = "--repeats", description = "copies per pair, of which the median counts (default: ${DEFAULT-VALUE})")
    int repeats = 11;

    private PeerCopy() {}

    public static void main(String[] args) {
        System.exit(Cli.execute(new PeerCopy(), args));
    }

    @Override
    public Integer call() {
        if (mib < 1 || repeats < 1) {
            System.err.println("PeerCopy: --mib and --repeats must be positive");
            return 2;
        }
        List<CudaDevice> devices;
        try {
            devices = Cuda.devices();
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            System.err.println("PeerCopy: needs CUDA GPUs: " + e.getMessage().lines().findFirst().orElse(""));
            return 2;
        }
        if (devices.size() < 2) {
            System.err.println("PeerCopy: needs two GPUs; this host has " + devices.size());
            return 2;
        }
        long floats = (long) mib << 18;
        int count = devices.size();
        double[][] staged = new double[count][count];
        double[][] direct = new double[count][count];
        // Every pair without peer access first: enabling it for one pair would turn the later
        // copies of the reverse pair into direct ones.
        for (boolean peer : new boolean[] {false, true}) {
            for (CudaDevice from : devices) {
                for (CudaDevice to : devices) {
                    if (from.equals(to)) {
                        continue;
                    }
                    if (peer) {
                        if (!to.canAccessPeer(from) || !from.canAccessPeer(to)) {
                            direct[from.ordinal()][to.ordinal()] = Double.NaN;
                            continue;
                        }
                        to.enablePeerAccess(from);
                        from.enablePeerAccess(to);
                    }
                    try (DeviceBuffer source = from.allocateFloats(floats);
                            DeviceBuffer target = to.allocateFloats(floats)) {
                        source.memset(0x3F);
                        double rate = medianGigabytesPerSecond(source, target, repeats);
                        (peer ? direct : staged)[from.ordinal()][to.ordinal()] = rate;
                    }
                }
            }
        }
        System.out.printf(Locale.ROOT, "%d MiB copies, median of %d%n", mib, repeats);
        System.out.println("from -> to | without peer access GB/s | with peer access GB/s");
        for (CudaDevice from : devices) {
            for (CudaDevice to : devices) {
                if (!from.equals(to)) {
                    double rate = direct[from.ordinal()][to.ordinal()];
                    System.out.printf(Locale.ROOT, "%d -> %d | %.1f | %s%n", from.ordinal(), to.ordinal(),
                            staged[from.ordinal()][to.ordinal()], Double.isNaN(rate) ? "n/a (no direct access)"
                                    : String.format(Locale.ROOT, "%.1f", rate));
                }
            }
        }
        return 0;
    }

    private static double medianGigabytesPerSecond(DeviceBuffer source, DeviceBuffer target, int repeats) {
        target.copyFrom(source); // first touch outside the timing
        double[] rates = new double[repeats];
        for (int r = 0; r < repeats; r++) {
            long start = System.nanoTime();
            target.copyFrom(source);
            rates[r] = source.byteSize() / ((System.nanoTime() - start) / 1e9) / 1e9;
        }
        Arrays.sort(rates);
        return rates[repeats / 2];
    }
}
