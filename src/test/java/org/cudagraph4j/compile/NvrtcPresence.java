package org.cudagraph4j.compile;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.cudagraph4j.error.CudaRuntimeNotFoundException;

/**
 * Whether this JVM can open NVRTC; the compiler's tests need it, but no GPU. Without it they skip,
 * saying why, unless {@code -Dcudagraph4j.test.nvrtcRequired=true} (as {@code -Pnvrtc-redist}
 * sets) makes its absence a failure.
 */
final class NvrtcPresence {
    private static final String MISSING = missing();

    private NvrtcPresence() {}

    /** Skips the calling test, saying why, where NVRTC cannot be found. */
    static void assumePresent() {
        if (Boolean.getBoolean("cudagraph4j.test.nvrtcRequired") && MISSING != null) {
            throw new AssertionError("NVRTC is required here and was not found: " + MISSING);
        }
        assumeTrue(MISSING == null, () -> "needs NVRTC (libnvrtc.so.13): " + MISSING);
    }

    private static String missing() {
        try {
            Program.nvrtcVersion();
            return null;
        } catch (CudaRuntimeNotFoundException e) {
            return e.getMessage().lines().findFirst().orElse("not found");
        }
    }
}
