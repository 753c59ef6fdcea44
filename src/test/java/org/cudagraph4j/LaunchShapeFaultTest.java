package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.N;
import static org.cudagraph4j.FaultChecks.assertAllNaN;
import static org.cudagraph4j.FaultChecks.assertCudaMessage;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.cudagraph4j.FaultChecks.assertSaxpyComputesOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Launch shapes out of range are refused by {@link Dim3} and {@link LaunchConfig} where the
 * library checks them, and otherwise by the runtime as a recoverable {@link CudaException}. Fault
 * injection as {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class LaunchShapeFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void gridDimensionZeroIsRefusedByDim3() {
        // The runtime would answer cudaErrorInvalidConfiguration; Dim3 refuses a 0 component
        // before any launch can be built, which is the library's documented contract.
        assertRefused(IllegalArgumentException.class, () -> Dim3.of(0),
                "every Dim3 component must be at least 1, got (0, 1, 1)");
        assertRefused(IllegalArgumentException.class, () -> Dim3.of(4, 0),
                "every Dim3 component must be at least 1, got (4, 0, 1)");
        assertHealthy(gpu);
    }

    @Test
    void blockOfMoreThan1024ThreadsIsRefusedByLaunchConfig() {
        assertRefused(IllegalArgumentException.class, () -> LaunchConfig.of(Dim3.of(1), Dim3.of(32, 33)),
                "a block has at most 1024 threads, but {32,33} has 1056");
        assertHealthy(gpu);
    }

    @Test
    void negativeDynamicSharedMemoryIsRefusedByLaunchConfig() {
        assertRefused(IllegalArgumentException.class, () -> LaunchConfig.of(Dim3.of(1), Dim3.of(32), -1),
                "sharedMemBytes must not be negative, got -1");
        assertHealthy(gpu);
    }

    // Seen on the H200 (driver 580): out-of-range dimensions are cudaErrorInvalidValue, not
    // cudaErrorInvalidConfiguration.
    @Test
    void blockZAbove64IsCudaErrorInvalidValue() {
        assertLaunchRefused(LaunchConfig.of(Dim3.of(1), Dim3.of(1, 1, 65)), CudaError.INVALID_VALUE);
    }

    @Test
    void gridYAbove65535IsCudaErrorInvalidValue() {
        assertLaunchRefused(LaunchConfig.of(Dim3.of(1, 65_536), Dim3.of(32)), CudaError.INVALID_VALUE);
    }

    @Test
    void gridZAbove65535IsCudaErrorInvalidValue() {
        assertLaunchRefused(LaunchConfig.of(Dim3.of(1, 1, 65_536), Dim3.of(32)), CudaError.INVALID_VALUE);
    }

    @Test
    void dynamicSharedMemoryBeyondTheDeviceLimitIsARecoverableCudaException() {
        int oneMiB = 1 << 20;
        assertTrue(oneMiB > gpu.device().properties().sharedMemPerBlockOptinBytes());
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            out.memset(0xFF);
            CudaException e = assertThrows(CudaException.class,
                    () -> gpu.writePattern().launch(gpu.stream(), LaunchConfig.of(Dim3.of(1), Dim3.of(32), oneMiB),
                            out, N, 1f, 0f));
            assertSame(CudaException.class, e.getClass());
            assertEquals("cudaLaunchKernel", e.function());
            assertFalse(e.isSticky(), e.getMessage());
            // expected: the runtime reports cudaErrorInvalidValue for too much dynamic shared memory;
            // older drivers said cudaErrorInvalidConfiguration. Either is a refusal of the launch shape.
            assertTrue(e.error() == CudaError.INVALID_VALUE || e.error() == CudaError.INVALID_CONFIGURATION,
                    e.getMessage());
            assertCudaMessage(e, "cudaLaunchKernel", e.error(), "kernel write_pattern");
            gpu.stream().synchronize();
            assertAllNaN(out, "a refused launch");
        }
        assertSaxpyComputesOn(gpu, gpu.stream());
        assertHealthy(gpu);
    }

    // expected (the three tests above): the runtime refuses a block z above maxThreadsDim.z = 64 and a
    // grid y or z above 65535 with cudaErrorInvalidConfiguration, at the launch call, recoverably.
    private void assertLaunchRefused(LaunchConfig config, CudaError error) {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            out.memset(0xFF);
            CudaException e = assertThrows(CudaException.class,
                    () -> gpu.writePattern().launch(gpu.stream(), config, out, N, 1f, 0f));
            assertSame(CudaException.class, e.getClass());
            assertCudaMessage(e, "cudaLaunchKernel", error, "kernel write_pattern");
            gpu.stream().synchronize();
            assertAllNaN(out, "a refused launch " + config.shape());
        }
        assertSaxpyComputesOn(gpu, gpu.stream());
        assertHealthy(gpu);
    }
}
