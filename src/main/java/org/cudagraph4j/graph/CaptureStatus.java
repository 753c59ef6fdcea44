package org.cudagraph4j.graph;

/** Whether a stream is capturing ({@code cudaStreamCaptureStatus}). */
public enum CaptureStatus {
    NONE(0),
    ACTIVE(1),
    /** Capture is still on, but an illegal operation broke it; ending it yields no graph. */
    INVALIDATED(2);

    private final int value;

    CaptureStatus(int value) {
        this.value = value;
    }

    public int value() {
        return value;
    }

    public static CaptureStatus fromValue(int value) {
        for (CaptureStatus status : values()) {
            if (status.value == value) {
                return status;
            }
        }
        throw new IllegalArgumentException("unknown cudaStreamCaptureStatus " + value);
    }
}
