package org.cudagraph4j.error;

import java.io.Serial;

/**
 * A cuBLASLt call returned an error status ({@code cublasStatus_t}).
 *
 * <p>The message reads {@code function: CUBLAS_STATUS_NAME (code): explanation [context]}, for
 * example {@code cublasLtMatmulAlgoGetHeuristic: CUBLAS_STATUS_NOT_SUPPORTED (15): the requested
 * functionality is not supported [no algorithm for …]}. Misuse that the library can see before
 * calling cuBLASLt (a wrong element type, a shape that does not chain, a closed buffer) is reported
 * with {@link IllegalArgumentException} or {@link IllegalStateException} instead.
 */
public final class CublasException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The cuBLASLt function that failed. */
    private final String function;
    /** The raw {@code cublasStatus_t}. */
    private final int status;
    /** cuBLASLt's name for the status. */
    private final String statusName;

    /**
     * Creates the exception for {@code function} returning {@code status}.
     *
     * @param function the cuBLASLt function that failed, e.g. {@code cublasLtMatmul}
     * @param status the raw {@code cublasStatus_t}
     * @param statusName cuBLASLt's name for it ({@code cublasLtGetStatusName})
     * @param explanation cuBLASLt's explanation ({@code cublasLtGetStatusString})
     * @param context what the library was doing, or {@code null}; appended to the message
     */
    public CublasException(String function, int status, String statusName, String explanation, String context) {
        super(function + ": " + statusName + " (" + status + "): " + explanation
                + (context == null ? "" : " [" + context + "]"));
        this.function = function;
        this.status = status;
        this.statusName = statusName;
    }

    /** {@return the cuBLASLt function that failed} */
    public String function() {
        return function;
    }

    /** {@return the raw {@code cublasStatus_t}} */
    public int status() {
        return status;
    }

    /** {@return cuBLASLt's name for the status, e.g. {@code CUBLAS_STATUS_NOT_SUPPORTED}} */
    public String statusName() {
        return statusName;
    }
}
