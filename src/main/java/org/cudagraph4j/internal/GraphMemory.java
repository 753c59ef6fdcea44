package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.cudagraph4j.cudart.cudaGraphNodeParams;
import org.cudagraph4j.cudart.cudaMemAllocNodeParamsV2;
import org.cudagraph4j.cudart.cudaMemFreeNodeParams;

/**
 * Graph memory: allocation and free nodes ({@code cudaGraphAddNode} with
 * {@code cudaMemAllocNodeParamsV2} and {@code cudaMemFreeNodeParams}), and the device's graph
 * memory footprint ({@code cudaDeviceGetGraphMemAttribute}, {@code cudaDeviceGraphMemTrim}).
 *
 * <p>An allocation node's address is fixed when the node is added and stays the same for the life
 * of the graph and its executables; the memory behind it exists only while a launch runs between
 * that node and the free node that frees it.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">Graph management</a>
 */
public final class GraphMemory {
    private GraphMemory() {}

    /** A new allocation node and the device address it allocates at every launch. */
    public record Allocation(MemorySegment node, long address) {}

    /**
     * Adds a node that allocates {@code byteSize} bytes of device {@code ordinal}'s memory, ordinary
     * (pinned, not shareable) device memory accessible from that device only.
     */
    public static Allocation addAllocation(MemorySegment graph, List<MemorySegment> dependencies, int ordinal,
            long byteSize) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaGraphNodeParams.allocate(arena); // zeroed, as the reserved fields must be
            cudaGraphNodeParams.type(params, cudaGraphNodeTypeMemAlloc());
            MemorySegment alloc = cudaGraphNodeParams.alloc(params);
            MemoryPools.pinnedOnDevice(cudaMemAllocNodeParamsV2.poolProps(alloc), ordinal);
            cudaMemAllocNodeParamsV2.bytesize(alloc, byteSize);
            MemorySegment node = arena.allocate(ADDRESS);
            Status.check(cudaGraphAddNode(node, graph, Graphs.array(arena, dependencies), MemorySegment.NULL,
                    dependencies.size(), params), "cudaGraphAddNode", "a memory allocation node of " + byteSize
                    + " bytes on device " + ordinal);
            return new Allocation(node.get(ADDRESS, 0), cudaMemAllocNodeParamsV2.dptr(alloc).address());
        }
    }

    /** Adds a node that frees the graph allocation at {@code address}. */
    public static MemorySegment addFree(MemorySegment graph, List<MemorySegment> dependencies, long address) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaGraphNodeParams.allocate(arena);
            cudaGraphNodeParams.type(params, cudaGraphNodeTypeMemFree());
            cudaMemFreeNodeParams.dptr(cudaGraphNodeParams.free(params), MemorySegment.ofAddress(address));
            MemorySegment node = arena.allocate(ADDRESS);
            Status.check(cudaGraphAddNode(node, graph, Graphs.array(arena, dependencies), MemorySegment.NULL,
                    dependencies.size(), params), "cudaGraphAddNode", String.format("a memory free node of 0x%X",
                    address));
            return node.get(ADDRESS, 0);
        }
    }

    /**
     * The device's graph memory in bytes, as {@code cudaDeviceGetGraphMemAttribute} reports it:
     * used now, used at most, reserved now, reserved at most.
     */
    public static long[] usage(int ordinal) {
        Devices.use(ordinal);
        int[] attributes = {cudaGraphMemAttrUsedMemCurrent(), cudaGraphMemAttrUsedMemHigh(),
                cudaGraphMemAttrReservedMemCurrent(), cudaGraphMemAttrReservedMemHigh()};
        long[] values = new long[attributes.length];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_LONG);
            for (int i = 0; i < attributes.length; i++) {
                Status.check(cudaDeviceGetGraphMemAttribute(ordinal, attributes[i], value),
                        "cudaDeviceGetGraphMemAttribute", "device " + ordinal);
                values[i] = value.get(JAVA_LONG, 0);
            }
        }
        return values;
    }

    /** Resets the two high-water marks to zero, the only value the runtime accepts for them. */
    public static void resetHighWaterMarks(int ordinal) {
        Devices.use(ordinal);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment zero = arena.allocate(JAVA_LONG);
            for (int attribute : new int[] {cudaGraphMemAttrUsedMemHigh(), cudaGraphMemAttrReservedMemHigh()}) {
                Status.check(cudaDeviceSetGraphMemAttribute(ordinal, attribute, zero),
                        "cudaDeviceSetGraphMemAttribute", "device " + ordinal);
            }
        }
    }

    /**
     * Gives the memory that graphs reserved on the device but do not use back to the system
     * ({@code cudaDeviceGraphMemTrim}); executables keep what their allocations are mapped to.
     */
    public static void trim(int ordinal) {
        Devices.use(ordinal);
        Status.check(cudaDeviceGraphMemTrim(ordinal), "cudaDeviceGraphMemTrim", "device " + ordinal);
    }
}
