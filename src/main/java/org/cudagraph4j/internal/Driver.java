package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.cudaDriverEntryPointSuccess;
import static org.cudagraph4j.cudart.cudart_h.cudaEnableDefault;
import static org.cudagraph4j.cudart.cudart_h.cudaGetDriverEntryPointByVersion;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import org.cudagraph4j.driver.PFN_cuFuncGetName_v12030;
import org.cudagraph4j.driver.PFN_cuGraphKernelNodeGetParams_v12000;
import org.cudagraph4j.driver.PFN_cuKernelGetFunction_v12000;
import org.cudagraph4j.driver.PFN_cuKernelGetName_v12030;
import org.cudagraph4j.driver.PFN_cuMemGetAddressRange_v3020;

/**
 * The few driver API calls that the runtime API has no equivalent for, reached through the
 * function pointers {@code cudaGetDriverEntryPointByVersion} returns: the library keeps no
 * link-time dependency on {@code libcuda}, and uses the driver the runtime already loaded.
 *
 * <p>Each entry point is asked for once, at the driver API version whose signature the generated
 * {@code PFN_*} type describes. A driver that lacks one makes the operations that
 * need it report what they cannot tell, never crash: a {@code NULL} entry point is never called.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html">Driver entry point access</a>
 */
public final class Driver {
    /** {@code CUDA_SUCCESS}. */
    private static final int SUCCESS = 0;

    private Driver() {}

    /** The entry points, asked for together on first use; {@code NULL} where the driver has none. */
    private static final class EntryPoints {
        static final MemorySegment KERNEL_NODE_GET_PARAMS = find("cuGraphKernelNodeGetParams", 12000);
        static final MemorySegment FUNC_GET_NAME = find("cuFuncGetName", 12030);
        static final MemorySegment KERNEL_GET_NAME = find("cuKernelGetName", 12030);
        static final MemorySegment KERNEL_GET_FUNCTION = find("cuKernelGetFunction", 12000);
        static final MemorySegment MEM_GET_ADDRESS_RANGE = find("cuMemGetAddressRange", 3020);
    }

    private static MemorySegment find(String symbol, int version) {
        CudartLoader.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment function = arena.allocate(ADDRESS);
            MemorySegment result = arena.allocate(JAVA_INT);
            int status = cudaGetDriverEntryPointByVersion(arena.allocateFrom(symbol), function, version,
                    cudaEnableDefault(), result);
            if (status != Status.SUCCESS || result.get(JAVA_INT, 0) != cudaDriverEntryPointSuccess()) {
                Status.clearLastError();
                return MemorySegment.NULL;
            }
            return function.get(ADDRESS, 0);
        }
    }

    /**
     * What the driver reports of a kernel node ({@code CUDA_KERNEL_NODE_PARAMS_v2}): the function
     * (a {@code CUfunction}, or 0 where the node names a context-independent {@code CUkernel}
     * instead), the kernel, the launch shape and the dynamic shared memory.
     */
    public record KernelNode(long function, long kernel, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedMemBytes) {}

    /**
     * A kernel node's parameters as the driver reports them, for any kernel, also one loaded
     * through the driver by another library, which {@code cudaGraphKernelNodeGetParams} cannot
     * name; {@code null} where the driver has no such entry point or refuses.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html">cuGraphKernelNodeGetParams</a>
     */
    public static KernelNode kernelNode(MemorySegment node) {
        MemorySegment entry = EntryPoints.KERNEL_NODE_GET_PARAMS;
        if (entry.equals(MemorySegment.NULL)) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = CUDA_KERNEL_NODE_PARAMS_v2_st.allocate(arena);
            int status = PFN_cuGraphKernelNodeGetParams_v12000.invoke(entry, node, params);
            if (status != SUCCESS) {
                return null;
            }
            return new KernelNode(CUDA_KERNEL_NODE_PARAMS_v2_st.func(params).address(),
                    CUDA_KERNEL_NODE_PARAMS_v2_st.kern(params).address(),
                    CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(params), CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(params),
                    CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(params), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(params),
                    CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(params), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(params),
                    CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(params));
        }
    }

    /**
     * The mangled name of what a kernel node launches ({@code cuFuncGetName}, or {@code cuKernelGetName}
     * for a node that names only a {@code CUkernel}); {@code null} if the driver cannot tell.
     */
    public static String kernelName(KernelNode node) {
        if (node.function() != 0) {
            return name(EntryPoints.FUNC_GET_NAME, node.function(), true);
        }
        return node.kernel() != 0 ? name(EntryPoints.KERNEL_GET_NAME, node.kernel(), false) : null;
    }

    private static String name(MemorySegment entry, long handle, boolean function) {
        if (entry.equals(MemorySegment.NULL)) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(ADDRESS);
            MemorySegment target = MemorySegment.ofAddress(handle);
            int status = function ? PFN_cuFuncGetName_v12030.invoke(entry, name, target)
                    : PFN_cuKernelGetName_v12030.invoke(entry, name, target);
            MemorySegment text = name.get(ADDRESS, 0);
            return status == SUCCESS && !text.equals(MemorySegment.NULL) ? Status.cString(text) : null;
        }
    }

    /**
     * The {@code CUfunction} a {@code CUkernel} (a {@code cudaKernel_t}) has in the current context
     * ({@code cuKernelGetFunction}), which is what the driver reports for a node launched with it;
     * 0 if the driver cannot tell.
     */
    public static long functionOf(MemorySegment kernel) {
        MemorySegment entry = EntryPoints.KERNEL_GET_FUNCTION;
        if (entry.equals(MemorySegment.NULL)) {
            return 0;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment function = arena.allocate(ADDRESS);
            return PFN_cuKernelGetFunction_v12000.invoke(entry, function, kernel) == SUCCESS
                    ? function.get(ADDRESS, 0).address() : 0;
        }
    }

    /** The device allocation that holds an address: its base and size in bytes. */
    public record AddressRange(long base, long byteSize) {
        /** {@return the bytes from {@code address} to the allocation's end} */
        public long bytesFrom(long address) {
            return base + byteSize - address;
        }
    }

    /**
     * The device allocation that {@code address} lies in ({@code cuMemGetAddressRange}), in the
     * current device's context; {@code null} if the driver knows no such allocation, or has no such
     * entry point.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html">cuMemGetAddressRange</a>
     */
    public static AddressRange addressRange(long address) {
        MemorySegment entry = EntryPoints.MEM_GET_ADDRESS_RANGE;
        if (entry.equals(MemorySegment.NULL)) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(JAVA_LONG);
            MemorySegment size = arena.allocate(JAVA_LONG);
            return PFN_cuMemGetAddressRange_v3020.invoke(entry, base, size, address) == SUCCESS
                    ? new AddressRange(base.get(JAVA_LONG, 0), size.get(JAVA_LONG, 0)) : null;
        }
    }
}
