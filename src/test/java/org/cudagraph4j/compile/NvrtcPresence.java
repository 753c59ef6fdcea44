package org.cudagraph4j.compile;

import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Whether this JVM can open NVRTC; the compiler's tests need it, but no GPU. Without it they are
 * skipped, the reason naming every place NVRTC was looked for, unless
 * {@code -Dcudagraph4j.test.nvrtcRequired=true} (as {@code -Pnvrtc-redist} sets) makes its absence
 * a failure. A test class that needs NVRTC is annotated {@code @ExtendWith(NvrtcPresence.class)}.
 */
final class NvrtcPresence implements ExecutionCondition, BeforeEachCallback {
    /** The places NVRTC was looked for, each with why it failed, on one line; null where it was found. */
    private static final String NOT_FOUND = notFound();
    private static final boolean REQUIRED = Boolean.getBoolean("cudagraph4j.test.nvrtcRequired");

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        if (NOT_FOUND == null) {
            return ConditionEvaluationResult.enabled("NVRTC found");
        }
        if (REQUIRED) {
            return ConditionEvaluationResult.enabled("NVRTC is required here");
        }
        return ConditionEvaluationResult.disabled("needs NVRTC (libnvrtc.so.13), not found here; tried " + NOT_FOUND);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        if (NOT_FOUND != null) {
            throw new AssertionError("NVRTC is required here and was not found; tried " + NOT_FOUND);
        }
    }

    private static String notFound() {
        try {
            Program.nvrtcVersion();
            return null;
        } catch (CudaRuntimeNotFoundException e) {
            return String.join("; ", e.attempts());
        }
    }
}
