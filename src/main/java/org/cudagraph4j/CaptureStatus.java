package org.cudagraph4j;

/**
 * Whether a stream is capturing ({@code cudaStreamCaptureStatus}), as {@link CudaStream#captureStatus()}
 * reports it. Captures begin with {@link org.cudagraph4j.graph.StreamCapture#begin}.
 */
public enum CaptureStatus implements CudaEnum {
    /** The stream is not capturing. */
    NONE(0),
    /** The stream is capturing, and the capture is still valid. */
    ACTIVE(1),
    /** Capture is still on, but an illegal operation broke it; ending it yields no graph. */
    INVALIDATED(2);

    private final int value;

    CaptureStatus(int value) {
        this.value = value;
    }

    /**
     * The {@code cudaStreamCaptureStatus} value.
     *
     * @return the raw value, 0 to 2
     */
    @Override
    public int value() {
        return value;
    }

    /**
     * The status with the given {@code cudaStreamCaptureStatus} value.
     *
     * @param value a raw {@code cudaStreamCaptureStatus}
     * @return the matching constant
     * @throws IllegalArgumentException if {@code value} is not a known status
     */
    public static CaptureStatus fromValue(int value) {
        return CudaEnum.find(CaptureStatus.class, value)
                .orElseThrow(() -> new IllegalArgumentException("unknown cudaStreamCaptureStatus " + value));
    }
}
