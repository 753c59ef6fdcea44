package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.cudagraph4j.cudart.cudaLaunchAttributeValue;
import org.cudagraph4j.cudart.cudaLaunchAttribute_st;
import org.cudagraph4j.cudart.cudaLaunchConfig_st;
import org.cudagraph4j.cudart.dim3;

/** Context-independent libraries ({@code cudaLibrary_t}), their kernels, and kernel launches. */
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
     * A launch's grid and block as the two {@code dim3} that {@code cudaLaunchKernel} takes by value,
     * in a heap segment: the downcall copies them into registers, so that a launch shape made once
     * serves every launch from any thread, with no native memory, thread-local lookup or liveness
     * check per launch.
     *
     * @param grid the {@code gridDim}: the first three ints of one heap segment
     * @param block the {@code blockDim}: the next three
     */
    public record LaunchDims(MemorySegment grid, MemorySegment block) {
        /** The shape {@code (gridX, gridY, gridZ) x (blockX, blockY, blockZ)}. */
        public static LaunchDims of(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ) {
            MemorySegment dims = MemorySegment.ofArray(new int[] {gridX, gridY, gridZ, blockX, blockY, blockZ});
            long size = dim3.layout().byteSize();
            return new LaunchDims(dims.asSlice(0, size), dims.asSlice(size, size));
        }
    }

    /**
     * Per-thread {@code cudaLaunchConfig_t} with one attribute, programmatic stream serialization,
     * for launches with programmatic dependent launch; written in full by each such launch.
     */
    private static final ThreadLocal<MemorySegment> PROGRAMMATIC_CONFIG = ThreadLocal.withInitial(() -> {
        Arena arena = Arena.ofAuto();
        MemorySegment attribute = cudaLaunchAttribute_st.allocate(arena);
        cudaLaunchAttribute_st.id(attribute, cudaLaunchAttributeProgrammaticStreamSerialization());
        cudaLaunchAttributeValue.programmaticStreamSerializationAllowed(cudaLaunchAttribute_st.val(attribute), 1);
        MemorySegment config = cudaLaunchConfig_st.allocate(arena);
        cudaLaunchConfig_st.attrs(config, attribute);
        cudaLaunchConfig_st.numAttrs(config, 1);
        return config;
    });

    /**
     * {@code cudaLaunchKernelExC} with programmatic stream serialization: the kernel may start before
     * the previous kernel on the stream has finished, and must wait for it on the device
     * ({@code griddepcontrol.wait}) before touching what that kernel writes or reads.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaLaunchKernelExC</a>
     */
    public static void launchProgrammatic(MemorySegment function, int gridX, int gridY, int gridZ, int blockX,
            int blockY, int blockZ, int sharedMemBytes, MemorySegment arguments, MemorySegment stream,
            String kernelName) {
        MemorySegment config = PROGRAMMATIC_CONFIG.get();
        set(cudaLaunchConfig_st.gridDim(config), gridX, gridY, gridZ);
        set(cudaLaunchConfig_st.blockDim(config), blockX, blockY, blockZ);
        cudaLaunchConfig_st.dynamicSmemBytes(config, sharedMemBytes);
        cudaLaunchConfig_st.stream(config, stream);
        int status = cudaLaunchKernelExC(config, function, arguments);
        if (status != Status.SUCCESS) {
            throw Status.error(status, "cudaLaunchKernelExC", "kernel " + kernelName
                    + " with programmatic dependent launch");
        }
    }

    /**
     * {@code cudaLaunchKernel}; {@code arguments} is the {@code void*[]} of parameter addresses.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaLaunchKernel</a>
     */
    public static void launch(MemorySegment function, LaunchDims dims, int sharedMemBytes, MemorySegment arguments,
            MemorySegment stream, String kernelName) {
        int status = cudaLaunchKernel(function, dims.grid(), dims.block(), arguments, sharedMemBytes, stream);
        if (status != Status.SUCCESS) {
            throw Status.error(status, "cudaLaunchKernel", "kernel " + kernelName);
        }
    }

    /**
     * {@code cudaLaunchKernelExC} with any of programmatic stream serialization, a thread-block
     * cluster shape and cooperative launch; a cluster dimension of 0 means no cluster. Rare
     * enough that it builds its configuration in a confined arena per launch.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaLaunchKernelExC</a>
     */
    public static void launchWithAttributes(MemorySegment function, int gridX, int gridY, int gridZ, int blockX,
            int blockY, int blockZ, int sharedMemBytes, MemorySegment arguments, MemorySegment stream,
            boolean programmatic, int clusterX, int clusterY, int clusterZ, boolean cooperative, String kernelName) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment config = launchConfig(arena, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes,
                    stream, programmatic, clusterX, clusterY, clusterZ, cooperative);
            int status = cudaLaunchKernelExC(config, function, arguments);
            if (status != Status.SUCCESS) {
                throw Status.error(status, "cudaLaunchKernelExC", "kernel " + kernelName);
            }
        }
    }

    /**
     * How many clusters of the configuration's shape can be co-resident on the device
     * ({@code cudaOccupancyMaxActiveClusters}); 0 if that shape cannot run at all.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__OCCUPANCY.html">cudaOccupancyMaxActiveClusters</a>
     */
    public static int maxActiveClusters(MemorySegment function, int gridX, int gridY, int gridZ, int blockX,
            int blockY, int blockZ, int sharedMemBytes, MemorySegment stream, int clusterX, int clusterY,
            int clusterZ, String kernelName) {
        return Out.intValue("cudaOccupancyMaxActiveClusters", "kernel " + kernelName, (arena, count) ->
                cudaOccupancyMaxActiveClusters(count, function, launchConfig(arena, gridX, gridY, gridZ, blockX,
                        blockY, blockZ, sharedMemBytes, stream, false, clusterX, clusterY, clusterZ, false)));
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

    private static MemorySegment launchConfig(Arena arena, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedMemBytes, MemorySegment stream, boolean programmatic, int clusterX, int clusterY,
            int clusterZ, boolean cooperative) {
        MemorySegment attributes = cudaLaunchAttribute_st.allocateArray(3, arena);
        int count = 0;
        if (programmatic) {
            MemorySegment attribute = cudaLaunchAttribute_st.asSlice(attributes, count++);
            cudaLaunchAttribute_st.id(attribute, cudaLaunchAttributeProgrammaticStreamSerialization());
            cudaLaunchAttributeValue.programmaticStreamSerializationAllowed(cudaLaunchAttribute_st.val(attribute), 1);
        }
        if (clusterX > 0) {
            MemorySegment attribute = cudaLaunchAttribute_st.asSlice(attributes, count++);
            cudaLaunchAttribute_st.id(attribute, cudaLaunchAttributeClusterDimension());
            MemorySegment cluster = cudaLaunchAttributeValue.clusterDim(cudaLaunchAttribute_st.val(attribute));
            cudaLaunchAttributeValue.clusterDim.x(cluster, clusterX);
            cudaLaunchAttributeValue.clusterDim.y(cluster, clusterY);
            cudaLaunchAttributeValue.clusterDim.z(cluster, clusterZ);
        }
        if (cooperative) {
            MemorySegment attribute = cudaLaunchAttribute_st.asSlice(attributes, count++);
            cudaLaunchAttribute_st.id(attribute, cudaLaunchAttributeCooperative());
            cudaLaunchAttributeValue.cooperative(cudaLaunchAttribute_st.val(attribute), 1);
        }
        MemorySegment config = cudaLaunchConfig_st.allocate(arena);
        set(cudaLaunchConfig_st.gridDim(config), gridX, gridY, gridZ);
        set(cudaLaunchConfig_st.blockDim(config), blockX, blockY, blockZ);
        cudaLaunchConfig_st.dynamicSmemBytes(config, sharedMemBytes);
        cudaLaunchConfig_st.stream(config, stream);
        cudaLaunchConfig_st.attrs(config, attributes);
        cudaLaunchConfig_st.numAttrs(config, count);
        return config;
    }

    private static MemorySegment set(MemorySegment dims, int x, int y, int z) {
        dim3.x(dims, x);
        dim3.y(dims, y);
        dim3.z(dims, z);
        return dims;
    }
}
