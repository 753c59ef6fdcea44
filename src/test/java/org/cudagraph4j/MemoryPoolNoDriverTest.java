package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIf;

/**
 * Memory pools on a machine with the runtime but no driver or GPU: a named {@link CudaException},
 * never a crash, and nothing counted as alive. Tagged and skipped like {@link NoDriverTest}.
 */
@Tag("nodevice")
@DisabledIf(value = "org.cudagraph4j.NoDriverTest#aGpuIsPresent",
        disabledReason = "this machine has an NVIDIA GPU; the test checks the no-GPU path")
class MemoryPoolNoDriverTest {
    private static final Set<CudaError> NO_GPU = Set.of(CudaError.INSUFFICIENT_DRIVER, CudaError.NO_DEVICE);

    @Test
    void theDefaultPoolNamesTheMissingDriverOrDevice() {
        CudaException e = assertThrows(CudaException.class, () -> new CudaDevice(0).defaultMemoryPool());

        assertTrue(NO_GPU.contains(e.error()), e.getMessage());
        assertEquals("cudaDeviceGetAttribute", e.function());
    }

    @Test
    void creatingAPoolFailsTheSameWayAndCountsNothing() {
        LiveResources before = Cuda.liveResources();

        CudaException e = assertThrows(CudaException.class,
                () -> new CudaDevice(0).createMemoryPool(MemoryPool.Options.defaults().withReleaseThreshold(1 << 20)));

        assertTrue(NO_GPU.contains(e.error()), e.getMessage());
        assertEquals(before, Cuda.liveResources());
    }
}
