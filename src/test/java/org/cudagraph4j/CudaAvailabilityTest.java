package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.Optional;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.junit.jupiter.api.Test;

/**
 * Whether a GPU can be used, asked without exceptions: on any machine, with or without a driver
 * or a GPU (CI has the runtime and no driver; the GPU bundle's host has both).
 */
class CudaAvailabilityTest {
    @Test
    void availabilityNeverThrowsAndAgreesWithTheDeviceCount() {
        boolean available = Cuda.isAvailable();
        Optional<String> reason = Cuda.unavailableReason();
        assertEquals(!available, reason.isPresent(), "available " + available + ", reason " + reason);
        if (available) {
            assertTrue(Cuda.deviceCount() > 0);
            assertEquals(Cuda.deviceCount(), Cuda.devices().size());
            return;
        }
        assumeTrue(runtimeLoads(), "no CUDA runtime here: deviceCount() throws, as documented");
        assertEquals(0, Cuda.deviceCount());
        assertEquals(List.of(), Cuda.devices());
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> Cuda.device(0));
        assertEquals("no CUDA device 0: this machine has 0: " + reason.orElseThrow(), none.getMessage());
    }

    @Test
    void withoutADriverTheReasonSaysSoInsteadOfNamingAnErrorCode() {
        assumeTrue(runtimeLoads() && Cuda.driverVersion() == 0, "an NVIDIA driver is installed here");
        assertEquals(Optional.of("no NVIDIA driver is installed (libcuda.so.1 not found)"), Cuda.unavailableReason());
        assertEquals(0, Cuda.deviceCount());
    }

    @Test
    void aRuntimeThatIsNotFoundIsTheWholeReasonWithEveryPlaceTried() throws Exception {
        // A JVM of its own: this one may have opened the runtime already, and a found runtime stays open.
        Process process = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-Dorg.cudagraph4j.cudart.path=/nonexistent/libcudart.so.13",
                "-cp", System.getProperty("java.class.path"), PrintReason.class.getName())
                .redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());

        assertEquals(0, process.waitFor(), output);
        assertTrue(output.startsWith("could not load the CUDA runtime"), output);
        assertTrue(output.contains("/nonexistent/libcudart.so.13 (no such file)"), "the place tried, not only the"
                + " first line: " + output);
    }

    /** Prints {@link Cuda#unavailableReason()}, for a JVM whose runtime cannot be found. */
    static final class PrintReason {
        public static void main(String[] args) {
            System.out.print(Cuda.unavailableReason().orElse("available"));
        }
    }

    private static boolean runtimeLoads() {
        try {
            Cuda.runtimeVersion();
            return true;
        } catch (CudaRuntimeNotFoundException e) {
            return false;
        }
    }
}
