package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.fail;

import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/** Fails a {@link GpuTest} class up front, with the runtime's reason, when there is no device. */
final class RequireDevice implements BeforeAllCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
        try {
            if (Cuda.deviceCount() == 0) {
                fail("gpu test " + context.getDisplayName() + " needs a CUDA device: "
                        + Cuda.unavailableReason().orElse("none is present"));
            }
        } catch (CudaException | CudaRuntimeNotFoundException e) {
            fail("gpu test " + context.getDisplayName() + " needs a CUDA device: " + e.getMessage(), e);
        }
    }
}
