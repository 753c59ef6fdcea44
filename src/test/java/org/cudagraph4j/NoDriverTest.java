package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIf;

/**
 * On a machine with the runtime but no driver or GPU (CI), the first device call is a named
 * {@link CudaException}, never a crash. Tagged {@code nodevice}: the GPU bundle leaves it out, and
 * a developer's machine with a GPU (an NVIDIA device node) skips it, saying why.
 */
@Tag("nodevice")
@DisabledIf(value = "aGpuIsPresent", disabledReason = "this machine has an NVIDIA GPU; the test checks the no-GPU path")
class NoDriverTest {
    private static final Set<CudaError> NO_GPU = Set.of(CudaError.INSUFFICIENT_DRIVER, CudaError.NO_DEVICE);

    static boolean aGpuIsPresent() {
        return Files.exists(Path.of("/dev/nvidia0"));
    }

    @Test
    void deviceCountNamesTheMissingDriverOrDevice() {
        CudaException e = assertThrows(CudaException.class, Cuda::deviceCount);

        assertTrue(NO_GPU.contains(e.error()), e.getMessage());
        assertEquals("cudaGetDeviceCount", e.function());
        assertTrue(e.getMessage().startsWith("cudaGetDeviceCount: " + e.error().cudaName() + " (" + e.code() + "): "),
                e.getMessage());
    }

    @Test
    void everyLaterCallFailsTheSameWay() {
        for (int attempt = 0; attempt < 3; attempt++) {
            CudaException e = assertThrows(CudaException.class, () -> Cuda.device(0));
            assertTrue(NO_GPU.contains(e.error()), e.getMessage());
        }
    }

    @Test
    void versionsAreReadableWithoutADevice() {
        assertTrue(Cuda.runtimeVersion() >= 13000, "runtime " + Cuda.runtimeVersion());
        assertTrue(Cuda.driverVersion() >= 0);
    }
}
