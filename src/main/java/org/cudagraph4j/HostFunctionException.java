package org.cudagraph4j;

import java.io.Serial;

/**
 * A host function ({@link CudaStream#launchHostFunction}, or a graph's host node) threw. CUDA ran
 * it on its own thread, where the exception could not be thrown to anyone: the stream it ran on
 * raises it at its next synchronization, as this exception's cause (later failures before that are
 * suppressed in the cause). The stream's other work has run; the CUDA context is not affected.
 */
public final class HostFunctionException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    HostFunctionException(String message, Throwable cause) {
        super(message, cause);
    }
}
