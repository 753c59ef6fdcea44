package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Context-independent libraries ({@code cudaLibrary_t}) and their kernels. Launches go through
 * {@link NativeLaunch}.
 */
public final class Libraries {
    /** {@code cudaErrorInvalidValue}: what {@code cudaFuncGetParamInfo} returns past the last parameter. */
    private static final int INVALID_VALUE = 1;

    private Libraries() {}

    /**
     * Loads a cubin, fatbin or NUL-terminated PTX image.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__LIBRARY.html">cudaLibraryLoadData</a>
     */
    public static MemorySegment load(MemorySegment image, String description) {
        CudartLoader.ensureLoaded();
        return Out.pointer("cudaLibraryLoadData", description, (arena, library) -> cudaLibraryLoadData(library, image,
                MemorySegment.NULL, MemorySegment.NULL, 0, MemorySegment.NULL, MemorySegment.NULL, 0));
    }

    /**
     * Unloads a library from {@link #load}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__LIBRARY.html">cudaLibraryUnload</a>
     */
    public static void unload(MemorySegment library) {
        Status.check(cudaLibraryUnload(library), "cudaLibraryUnload");
    }

    /**
     * The kernel named {@code name} in {@code library}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__LIBRARY.html">cudaLibraryGetKernel</a>
     */
    public static MemorySegment kernel(MemorySegment library, String name) {
        return Out.pointer("cudaLibraryGetKernel", "kernel " + name,
                (arena, kernel) -> cudaLibraryGetKernel(kernel, library, arena.allocateFrom(name)));
    }

    /**
     * Every kernel in {@code library}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__LIBRARY.html">cudaLibraryGetKernelCount</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__LIBRARY.html">cudaLibraryEnumerateKernels</a>
     */
    public static List<MemorySegment> kernels(MemorySegment library) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            Status.check(cudaLibraryGetKernelCount(count, library), "cudaLibraryGetKernelCount");
            int n = count.get(JAVA_INT, 0);
            MemorySegment kernels = arena.allocate(ADDRESS, Math.max(n, 1));
            Status.check(cudaLibraryEnumerateKernels(kernels, n, library), "cudaLibraryEnumerateKernels");
            List<MemorySegment> result = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                result.add(kernels.getAtIndex(ADDRESS, i));
            }
            return result;
        }
    }

    /**
     * {@code cudaFuncGetName}: the symbol as compiled (mangled for C++ kernels).
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaFuncGetName</a>
     */
    public static String name(MemorySegment function) {
        return Status.cString(Out.pointer("cudaFuncGetName", null, (arena, name) -> cudaFuncGetName(name, function)));
    }

    /**
     * One kernel parameter as {@code cudaFuncGetParamInfo} reports it; the root's
     * {@code KernelParameter} copies it.
     */
    public record Parameter(int index, long offsetBytes, long sizeBytes) {}

    /**
     * Every parameter's offset and size, from {@code cudaFuncGetParamInfo}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaFuncGetParamInfo</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">cudaGetLastError</a>
     */
    public static List<Parameter> parameters(MemorySegment function) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment offset = arena.allocate(JAVA_LONG);
            MemorySegment size = arena.allocate(JAVA_LONG);
            List<Parameter> parameters = new ArrayList<>();
            for (int index = 0; ; index++) {
                int status = cudaFuncGetParamInfo(function, index, offset, size);
                if (status == INVALID_VALUE) {
                    // Past the last parameter; clear the error so it does not linger as the last error.
                    cudaGetLastError();
                    return List.copyOf(parameters);
                }
                Status.check(status, "cudaFuncGetParamInfo");
                parameters.add(new Parameter(index, offset.get(JAVA_LONG, 0), size.get(JAVA_LONG, 0)));
            }
        }
    }

    /**
     * Sets a {@code cudaFuncAttribute} for the current device.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaFuncSetAttribute</a>
     */
    public static void setAttribute(MemorySegment function, int attribute, int value, String context) {
        Status.check(cudaFuncSetAttribute(function, attribute, value), "cudaFuncSetAttribute", context);
    }

    public static int maxDynamicSharedMemoryAttribute() {
        return cudaFuncAttributeMaxDynamicSharedMemorySize();
    }

    /**
     * How many blocks of {@code blockSize} threads and {@code sharedMemBytes} can be resident on one
     * multiprocessor at once ({@code cudaOccupancyMaxActiveBlocksPerMultiprocessor}).
     */
    public static int maxActiveBlocksPerMultiprocessor(MemorySegment function, int blockSize, int sharedMemBytes,
            String kernelName) {
        return Out.intValue("cudaOccupancyMaxActiveBlocksPerMultiprocessor", "kernel " + kernelName,
                (arena, count) -> cudaOccupancyMaxActiveBlocksPerMultiprocessor(count, function, blockSize,
                        sharedMemBytes));
    }
}
