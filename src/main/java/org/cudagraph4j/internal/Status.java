package org.cudagraph4j.internal;

import static org.cudagraph4j.cudart.cudart_h.cudaGetErrorName;
import static org.cudagraph4j.cudart.cudart_h.cudaGetErrorString;
import static org.cudagraph4j.cudart.cudart_h.cudaGetLastError;

import java.lang.foreign.MemorySegment;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.StreamCaptureException;
import org.cudagraph4j.internal.lifetime.CaptureTracker;

/**
 * Turns {@code cudaError_t} results into {@link CudaException}s; capture violations (900 to 908)
 * become {@link StreamCaptureException}s naming the capture that was running.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">Error handling</a>
 */
public final class Status {
    public static final int SUCCESS = 0;

    private Status() {}

    /** Throws unless {@code status} is {@code cudaSuccess}. */
    public static void check(int status, String function) {
        HostFunctions.refuseInCallback(function);
        if (status != SUCCESS) {
            throw error(status, function, null);
        }
    }

    /** Throws unless {@code status} is {@code cudaSuccess}, naming what the library was doing. */
    public static void check(int status, String function, String context) {
        HostFunctions.refuseInCallback(function);
        if (status != SUCCESS) {
            throw error(status, function, context);
        }
    }

    /**
     * The exception for a failed call. It also clears the runtime's last-error slot, so a later
     * {@code cudaGetLastError} after a launch does not report this failure a second time.
     */
    public static CudaException error(int status, String function, String context) {
        CudartLoader.ensureLoaded(); // an entry point too: a test or a caller may format any code
        clearLastError();
        CudaException error = new CudaException(function, status, name(status), explanation(status), context);
        return CudaError.fromCode(status).isCaptureError()
                ? new StreamCaptureException(error, CaptureTracker.describeRunning())
                : error;
    }

    /**
     * Clears the runtime's last-error slot after a failure this library reports itself.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">cudaGetLastError</a>
     */
    public static void clearLastError() {
        cudaGetLastError();
    }

    /**
     * The runtime's name for a code, e.g. {@code cudaErrorNoDevice}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">cudaGetErrorName</a>
     */
    public static String name(int status) {
        CudartLoader.ensureLoaded();
        return text(cudaGetErrorName(status), "unrecognized error code");
    }

    /**
     * The runtime's explanation of a code.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">cudaGetErrorString</a>
     */
    public static String explanation(int status) {
        CudartLoader.ensureLoaded();
        return text(cudaGetErrorString(status), "no explanation available");
    }

    /** A NUL-terminated string the runtime owns, such as an error name or a kernel name. */
    @SuppressWarnings("restricted") // the runtime guarantees NUL termination
    public static String cString(MemorySegment pointer) {
        return pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }

    private static String text(MemorySegment pointer, String fallback) {
        return pointer.equals(MemorySegment.NULL) ? fallback : cString(pointer);
    }
}
