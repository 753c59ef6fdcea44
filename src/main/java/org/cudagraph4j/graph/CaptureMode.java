package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/**
 * Which CUDA calls a stream capture forbids while it runs ({@code cudaStreamCaptureMode}).
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html">cudaStreamBeginCapture</a>
 */
public enum CaptureMode implements CudaEnum {
    /** Potentially unsafe calls (such as {@code cudaMalloc}) are forbidden on every thread. */
    GLOBAL(0),
    /** Potentially unsafe calls are forbidden only on the capturing thread. */
    THREAD_LOCAL(1),
    /** Nothing is forbidden; the caller takes care that capture stays valid. */
    RELAXED(2);

    private final int value;

    CaptureMode(int value) {
        this.value = value;
    }

    /**
     * The {@code cudaStreamCaptureMode} value.
     *
     * @return the raw value passed to {@code cudaStreamBeginCapture}, 0 to 2
     */
    @Override
    public int value() {
        return value;
    }
}
