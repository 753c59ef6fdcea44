package org.cudagraph4j.serving;

import org.cudagraph4j.error.CudaException;

/**
 * The engine has stopped serving: an error poisoned its CUDA context (see
 * {@link CudaException#isSticky()}), and every later request fails at once with this exception,
 * whose cause is that error. Restart the process to serve again.
 */
public final class EngineUnhealthyException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    EngineUnhealthyException(CudaException cause) {
        super("the inference engine is unhealthy: " + cause.getMessage(), cause);
    }
}
