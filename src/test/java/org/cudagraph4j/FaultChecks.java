package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.junit.jupiter.api.function.Executable;

/**
 * What the fault tests ({@code *FaultTest}) share. Every fault test provokes one fault, checks the
 * exact exception and what its message names, then proves with {@link #assertHealthy} that the
 * device and the library still compute correctly (a fresh stream, fresh random data, a host
 * double-precision reference, no lingering last error). Every test closes what it creates;
 * {@link LeakCheck} holds it to that. The device, stream and test kernels come from each class's
 * {@link GpuFixture}.
 *
 * <p>Where the library's documentation does not state the behaviour, the test encodes what a
 * demanding user would expect and says so in a comment starting {@code // expected:}.
 */
final class FaultChecks {
    static final int N = 10_007;
    static final int THREADS_PER_BLOCK = 256;
    static final Duration THREAD_TIMEOUT = Duration.ofMinutes(2);
    /** The launch shape of the fault tests' kernels: 40 blocks of {@value #THREADS_PER_BLOCK} threads. */
    static final LaunchConfig CONFIG = LaunchConfig.of(Dim3.of(40), Dim3.of(THREADS_PER_BLOCK));

    private FaultChecks() {}

    /**
     * The device and library still work: saxpy on fresh random data on a fresh stream matches a
     * double-precision host reference, and no error is left pending on this thread.
     */
    static void assertHealthy(GpuFixture gpu) {
        try (CudaStream fresh = gpu.device().createStream()) {
            assertSaxpyComputesOn(gpu, fresh);
        }
        assertDoesNotThrow(Cuda::checkLastError, "an error was left pending as the last error");
    }

    /**
     * y = a*x + y on {@code on}, checked against the host in double precision. The device copy of y
     * is poisoned with NaN before y is uploaded, and the host result array is NaN before the
     * download, so a copy or launch that silently did nothing cannot pass.
     */
    static void assertSaxpyComputesOn(GpuFixture gpu, CudaStream on) {
        int n = 4099 + (int) Math.floorMod(TestData.newSeed(), 997L);
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(n, seed);
        float[] y = TestData.randomFloats(n, seed + 1);
        float a = 0.5f + 3 * Math.abs(TestData.randomFloats(1, seed + 2)[0]);
        try (DeviceBuffer dx = gpu.device().allocateFloats(n); DeviceBuffer dy = gpu.device().allocateFloats(n)) {
            dx.copyFrom(x);
            dy.memset(0xFF);
            dy.copyFrom(y);
            gpu.saxpy().launch(on, LaunchConfig.of(Dim3.of(blocksFor(n)), Dim3.of(THREADS_PER_BLOCK)), n, a, dx, dy);
            on.synchronize();
            float[] result = TestData.nans(n);
            dy.copyTo(result);
            for (int i = 0; i < n; i++) {
                double expected = (double) a * x[i] + y[i];
                // Relative to the operands' magnitude, so that cancellation near 0 cannot flake.
                double tolerance = 1e-5 * (Math.abs((double) a * x[i]) + Math.abs(y[i]));
                if (!(Math.abs(result[i] - expected) <= tolerance)) {
                    fail("saxpy element " + i + " of " + n + ": expected " + expected + " but was " + result[i]
                            + " (a = " + a + ", " + TestData.seedDescription(seed) + ")");
                }
            }
        }
    }

    private static int blocksFor(int n) {
        return (n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    }


    /** out[i] = i * scale + offset, exactly (the scales used keep every product exact). */
    static void assertPattern(float[] values, float scale, float offset, String what) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] != i * scale + offset) {
                fail(what + ": element " + i + " is " + values[i] + ", expected " + (i * scale + offset));
            }
        }
    }

    /** {@code call} throws a {@code type} (or a subclass), whose message is {@code message}; returns it. */
    static <T extends Throwable> T assertRefused(Class<T> type, Executable call, String message) {
        T refusal = assertThrows(type, call);
        assertEquals(message, refusal.getMessage());
        return refusal;
    }

    static void assertAllNaN(DeviceBuffer buffer, String what) {
        float[] values = buffer.toFloatArray();
        for (int i = 0; i < values.length; i++) {
            if (!Float.isNaN(values[i])) {
                fail(what + ": element " + i + " was written (" + values[i] + "), but it must still be NaN");
            }
        }
    }

    static void assertCudaMessage(CudaException e, String function, CudaError error, String context) {
        assertEquals(function, e.function(), e.getMessage());
        assertEquals(error, e.error(), e.getMessage());
        assertEquals(error.cudaName(), e.cudaName(), e.getMessage());
        assertTrue(e.getMessage().startsWith(function + ": " + error.cudaName() + " (" + error.code() + "): "),
                e.getMessage());
        if (context != null) {
            assertTrue(e.getMessage().endsWith(" [" + context + "]"), e.getMessage());
        }
        assertFalse(e.isSticky(), e.getMessage());
    }

    /** After a refused operation and the capture scope's close: not capturing, and computing again. */
    static void assertStreamRecoveredFromCapture(GpuFixture gpu, CudaStream on) {
        assertEquals(CaptureStatus.NONE, on.captureStatus());
        assertSaxpyComputesOn(gpu, on);
        assertHealthy(gpu);
    }

    /** write_pattern(out, N, scale, offset) as a one-node graph. */
    static CudaGraph patternGraph(GpuFixture gpu, DeviceBuffer out, float scale, float offset) {
        CudaGraph graph = CudaGraph.create();
        graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, scale, offset));
        return graph;
    }

    /** Launches {@code exec} into a poisoned {@code out} and checks the pattern it writes. */
    static void assertExecWritesPattern(GpuFixture gpu, GraphExec exec, DeviceBuffer out, float scale,
            float offset) {
        out.memset(0xFF);
        exec.launch(gpu.stream());
        gpu.stream().synchronize();
        assertPattern(out.toFloatArray(), scale, offset, exec.toString());
    }
}
