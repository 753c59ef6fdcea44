package org.cudagraph4j.error;

/**
 * A CUDA runtime call returned an error status.
 *
 * <p>The message reads {@code function: cudaErrorName (code): explanation}, for example
 * {@code cudaMalloc: cudaErrorMemoryAllocation (2): out of memory}. Subclasses add what a failure
 * of a graph operation needs: the capture ({@link StreamCaptureException}), the instantiation
 * ({@link org.cudagraph4j.graph.GraphInstantiateException}) or the update
 * ({@link org.cudagraph4j.graph.GraphUpdateException}) that failed.
 *
 * <p>The library raises these for every failed call. The constructors are public so that code
 * which handles CUDA failures can be tested without a GPU; the one for subclasses refines a
 * failure already reported. The hierarchy is not sealed because the graph subclasses live in a
 * package above this one, and a {@code permits} clause naming them would make this package depend
 * on that one.
 *
 * <p>Misuse of the API (a closed handle, a wrong argument) is reported with
 * {@link IllegalStateException} or {@link IllegalArgumentException} instead, before anything reaches
 * the runtime.
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private static final String STICKY_ADVICE = ". The CUDA context of this process is now unusable: every later CUDA"
            + " call fails with this error, so restart the process (an inference server should stop taking"
            + " requests and exit for its supervisor to restart it)";

    /** The raw {@code cudaError_t} value. */
    private final int code;
    /** The runtime function that returned the error. */
    private final String function;
    /** The runtime's name for the error. */
    private final String cudaName;

    /**
     * Creates the exception for {@code function} returning {@code code}.
     *
     * @param function the runtime function that failed, e.g. {@code cudaMalloc}
     * @param code the raw {@code cudaError_t}
     * @param cudaName the runtime's name for the code ({@code cudaGetErrorName})
     * @param explanation the runtime's explanation ({@code cudaGetErrorString})
     * @param context what the library was doing, or {@code null}; appended to the message
     */
    public CudaException(String function, int code, String cudaName, String explanation, String context) {
        super(function + ": " + cudaName + " (" + code + "): " + explanation
                + (context == null ? "" : " [" + context + "]")
                + (CudaError.fromCode(code).isSticky() ? STICKY_ADVICE : ""));
        this.code = code;
        this.function = function;
        this.cudaName = cudaName;
    }

    /**
     * Copies {@code cause}'s status, for subclasses that refine it.
     *
     * @param cause the failure being refined; its message, code, function and name carry over
     * @param context what the library was doing, or {@code null}; appended to the message
     */
    protected CudaException(CudaException cause, String context) {
        super(cause.getMessage() + (context == null ? "" : " [" + context + "]"), cause);
        this.code = cause.code;
        this.function = cause.function;
        this.cudaName = cause.cudaName;
    }

    /** {@return the error as an enum; {@link CudaError#UNRECOGNIZED} for codes newer than this library} */
    public CudaError error() {
        return CudaError.fromCode(code);
    }

    /**
     * {@return whether this error poisons the process's CUDA context, so that every later call fails too
     * and only a restart recovers} See {@link CudaError#isSticky()}. Other errors are recoverable: the
     * failed call had no effect, and the library and device stay usable.
     */
    public boolean isSticky() {
        return error().isSticky();
    }

    /** {@return the raw {@code cudaError_t} value, also for codes {@link #error()} does not recognize} */
    public int code() {
        return code;
    }

    /** {@return the runtime function that returned the error, e.g. {@code cudaStreamSynchronize}} */
    public String function() {
        return function;
    }

    /** {@return the runtime's name for the error ({@code cudaGetErrorName}), e.g. {@code cudaErrorNoDevice}} */
    public String cudaName() {
        return cudaName;
    }
}
