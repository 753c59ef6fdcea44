package org.cudagraph4j.error;

/**
 * An operation that is illegal during stream capture was attempted (CUDA errors 900 to 908), or a
 * capture ended invalidated because of one. The message names the capture that was running.
 *
 * <p>The stream that was capturing becomes usable again once its
 * {@link org.cudagraph4j.graph.StreamCapture} is closed, which try-with-resources does. Any call can
 * raise it, not only graph calls: a {@code cudaMalloc} on a capturing stream's device is illegal in a
 * global capture, for example.
 */
public final class StreamCaptureException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** The capture(s) running at the time, described. */
    private final String capture;

    /**
     * Refines {@code cause} with the capture that was running, named in the message.
     *
     * @param cause the failed call
     * @param capture the capture(s) running at the time, described
     */
    public StreamCaptureException(CudaException cause, String capture) {
        super(cause, "while capturing: " + capture);
        this.capture = capture;
    }

    /**
     * The capture that was running.
     *
     * @return its description, e.g. {@code capture 12 (GLOBAL) on CudaStream 0x... on device 0}
     */
    public String capture() {
        return capture;
    }
}
