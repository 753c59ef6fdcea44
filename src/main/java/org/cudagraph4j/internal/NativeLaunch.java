package org.cudagraph4j.internal;

import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.cudagraph4j.cudart.cudaKernelNodeParams;
import org.cudagraph4j.cudart.cudaLaunchAttributeValue;
import org.cudagraph4j.cudart.cudaLaunchAttribute_st;
import org.cudagraph4j.cudart.cudaLaunchConfig_st;
import org.cudagraph4j.cudart.dim3;

/**
 * A launch configuration in the form the runtime takes it: grid, block, dynamic shared memory and
 * launch attributes, made once per {@code LaunchConfig}, which keeps it. Every path reads this one
 * value: an eager launch ({@code cudaLaunchKernel} without attributes, {@code cudaLaunchKernelExC}
 * with them), a kernel node's {@code cudaKernelNodeParams} and its node attributes, an executable
 * node's update, and the occupancy query of a cluster shape. cuda.core turns its {@code LaunchConfig}
 * into its native form in one function the same way ({@code _to_native_launch_config}).
 *
 * <p>The attributes sit in native memory in a fixed order: the cluster dimension, then cooperative
 * launch, then programmatic stream serialization. A kernel node takes the first two as node
 * attributes ({@code cudaGraphKernelNodeSetAttribute}); the third is valid only for launches, and
 * in a graph it is a programmatic edge into the node instead.
 *
 * <p>Thread safety: immutable after construction, and safe to share; its native memory is only
 * read, and freed by the collector once no configuration holds it.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaLaunchKernelExC</a>
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html">cudaLaunchAttributeID</a>
 */
public final class NativeLaunch {
    private static final long CONFIG_BYTES = cudaLaunchConfig_st.sizeof();
    private static final long DIM3_BYTES = dim3.layout().byteSize();

    /**
     * Per-thread {@code cudaLaunchConfig_t} that a launch with attributes copies its configuration
     * into and adds the stream to: the stream differs from launch to launch, and the configuration
     * is shared by every thread. Freed with its (possibly virtual) thread.
     */
    private static final ThreadLocal<MemorySegment> LAUNCH_CONFIG =
            ThreadLocal.withInitial(() -> cudaLaunchConfig_st.allocate(Arena.ofAuto()));

    /** The {@code gridDim}, then the {@code blockDim}: heap memory, which a downcall copies into registers. */
    private final MemorySegment grid;
    private final MemorySegment block;
    private final int sharedMemBytes;
    /** The {@code cudaLaunchConfig_t} without a stream, or {@code null} when there is no attribute. */
    private final MemorySegment config;
    /** The attributes, in order: cluster, cooperative, programmatic; {@code NULL} when there is none. */
    private final MemorySegment attributes;
    private final int attributeCount;
    /** How many of the first attributes a kernel node takes: cluster and cooperative, not programmatic. */
    private final int nodeAttributeCount;
    private final boolean cluster;
    private final boolean programmatic;
    /** What a launch error names besides the kernel, e.g. {@code " with a cluster of {2,1,1}"}; empty without attributes. */
    private final String described;

    private NativeLaunch(int[] grid, int[] block, int sharedMemBytes, boolean programmatic, int[] cluster,
            boolean cooperative) {
        MemorySegment dims = MemorySegment.ofArray(new int[] {grid[0], grid[1], grid[2], block[0], block[1], block[2]});
        this.grid = dims.asSlice(0, DIM3_BYTES);
        this.block = dims.asSlice(DIM3_BYTES, DIM3_BYTES);
        this.sharedMemBytes = sharedMemBytes;
        this.cluster = cluster != null;
        this.programmatic = programmatic;
        int nodeAttributes = (cluster != null ? 1 : 0) + (cooperative ? 1 : 0);
        this.nodeAttributeCount = nodeAttributes;
        this.attributeCount = nodeAttributes + (programmatic ? 1 : 0);
        if (attributeCount == 0) {
            this.attributes = MemorySegment.NULL;
            this.config = null;
            this.described = "";
            return;
        }
        Arena arena = Arena.ofAuto(); // freed with this value, by the collector
        this.attributes = cudaLaunchAttribute_st.allocateArray(attributeCount, arena);
        StringBuilder description = new StringBuilder(" with");
        int index = 0;
        if (cluster != null) {
            MemorySegment value = attribute(index++, cudaLaunchAttributeClusterDimension());
            MemorySegment dim = cudaLaunchAttributeValue.clusterDim(value);
            cudaLaunchAttributeValue.clusterDim.x(dim, cluster[0]);
            cudaLaunchAttributeValue.clusterDim.y(dim, cluster[1]);
            cudaLaunchAttributeValue.clusterDim.z(dim, cluster[2]);
            description.append(" a cluster of {").append(cluster[0]).append(',').append(cluster[1]).append(',')
                    .append(cluster[2]).append('}');
        }
        if (cooperative) {
            cudaLaunchAttributeValue.cooperative(attribute(index++, cudaLaunchAttributeCooperative()), 1);
            description.append(index > 1 ? "," : "").append(" cooperative launch");
        }
        if (programmatic) {
            cudaLaunchAttributeValue.programmaticStreamSerializationAllowed(
                    attribute(index++, cudaLaunchAttributeProgrammaticStreamSerialization()), 1);
            description.append(index > 1 ? "," : "").append(" programmatic dependent launch");
        }
        this.described = description.toString();
        MemorySegment launchConfig = cudaLaunchConfig_st.allocate(arena);
        MemorySegment.copy(this.grid, 0, cudaLaunchConfig_st.gridDim(launchConfig), 0, DIM3_BYTES);
        MemorySegment.copy(this.block, 0, cudaLaunchConfig_st.blockDim(launchConfig), 0, DIM3_BYTES);
        cudaLaunchConfig_st.dynamicSmemBytes(launchConfig, sharedMemBytes);
        cudaLaunchConfig_st.stream(launchConfig, MemorySegment.NULL);
        cudaLaunchConfig_st.attrs(launchConfig, attributes);
        cudaLaunchConfig_st.numAttrs(launchConfig, attributeCount);
        this.config = launchConfig;
    }

    /**
     * The native form of a launch configuration.
     *
     * @param grid the grid's x, y and z, in blocks
     * @param block the block's x, y and z, in threads
     * @param sharedMemBytes dynamic shared memory per block, in bytes
     * @param programmatic whether the launch allows programmatic stream serialization
     * @param cluster the cluster's x, y and z, in blocks, or {@code null} for no clusters
     * @param cooperative whether the launch is cooperative
     * @return the native form
     */
    public static NativeLaunch of(int[] grid, int[] block, int sharedMemBytes, boolean programmatic, int[] cluster,
            boolean cooperative) {
        Objects.requireNonNull(grid, "grid");
        Objects.requireNonNull(block, "block");
        return new NativeLaunch(grid, block, sharedMemBytes, programmatic, cluster, cooperative);
    }

    /**
     * Launches {@code function} on {@code stream}: {@code cudaLaunchKernel} without attributes,
     * {@code cudaLaunchKernelExC} with them. Allocates nothing.
     *
     * @param function the {@code cudaKernel_t}
     * @param arguments the {@code void*[]} of parameter addresses
     * @param stream the stream
     * @param kernelName what an error names
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaLaunchKernel</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EXECUTION.html">cudaLaunchKernelExC</a>
     */
    public void launch(MemorySegment function, MemorySegment arguments, MemorySegment stream, String kernelName) {
        if (config == null) {
            int status = cudaLaunchKernel(function, grid, block, arguments, sharedMemBytes, stream);
            if (status != Status.SUCCESS) {
                throw Status.error(status, "cudaLaunchKernel", "kernel " + kernelName);
            }
            return;
        }
        MemorySegment launchConfig = LAUNCH_CONFIG.get();
        MemorySegment.copy(config, 0, launchConfig, 0, CONFIG_BYTES);
        cudaLaunchConfig_st.stream(launchConfig, stream);
        int status = cudaLaunchKernelExC(launchConfig, function, arguments);
        if (status != Status.SUCCESS) {
            throw Status.error(status, "cudaLaunchKernelExC", "kernel " + kernelName + described);
        }
    }

    /**
     * How many clusters of this launch's shape can be co-resident on the current device
     * ({@code cudaOccupancyMaxActiveClusters}); 0 if that shape cannot run at all.
     *
     * @param function the {@code cudaKernel_t}
     * @param kernelName what an error names
     * @throws IllegalStateException if this launch has no cluster shape
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__OCCUPANCY.html">cudaOccupancyMaxActiveClusters</a>
     */
    public int maxActiveClusters(MemorySegment function, String kernelName) {
        if (!cluster) {
            throw new IllegalStateException("the launch has no cluster shape");
        }
        return Out.intValue("cudaOccupancyMaxActiveClusters", "kernel " + kernelName, (arena, count) -> {
            MemorySegment query = arena.allocate(cudaLaunchConfig_st.layout());
            MemorySegment.copy(config, 0, query, 0, CONFIG_BYTES);
            cudaLaunchConfig_st.numAttrs(query, 1); // the cluster dimension, which comes first
            return cudaOccupancyMaxActiveClusters(count, function, query);
        });
    }

    /**
     * Writes a kernel node's parameters into {@code params}, a {@code cudaKernelNodeParams}: what a
     * node added with {@link Graphs#addKernelNode} or updated with {@link Graphs#setKernelNodeParams}
     * launches. Its attributes are {@link #setNodeAttributes}'.
     *
     * @param params the struct to fill, every field of it
     * @param function the {@code cudaKernel_t}
     * @param arguments the {@code void*[]} of parameter addresses
     * @return {@code params}
     */
    MemorySegment nodeParams(MemorySegment params, MemorySegment function, MemorySegment arguments) {
        cudaKernelNodeParams.func(params, function);
        MemorySegment.copy(grid, 0, cudaKernelNodeParams.gridDim(params), 0, DIM3_BYTES);
        MemorySegment.copy(block, 0, cudaKernelNodeParams.blockDim(params), 0, DIM3_BYTES);
        cudaKernelNodeParams.sharedMemBytes(params, sharedMemBytes);
        cudaKernelNodeParams.kernelParams(params, arguments);
        cudaKernelNodeParams.extra(params, MemorySegment.NULL);
        return params;
    }

    /**
     * Sets the node attributes of kernel node {@code node}: its cluster dimension and cooperative
     * launch, whichever this launch has.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html">cudaGraphKernelNodeSetAttribute</a>
     */
    void setNodeAttributes(MemorySegment node) {
        for (int i = 0; i < nodeAttributeCount; i++) {
            MemorySegment attribute = cudaLaunchAttribute_st.asSlice(attributes, i);
            Status.check(cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttribute_st.id(attribute),
                    cudaLaunchAttribute_st.val(attribute)), "cudaGraphKernelNodeSetAttribute", described.strip());
        }
    }

    /** {@return whether the launch allows programmatic stream serialization: in a graph, programmatic edges} */
    boolean programmatic() {
        return programmatic;
    }

    /** {@return the launch attributes as the runtime reads them, in order; {@code NULL} when there is none} */
    MemorySegment attributes() {
        return attributes;
    }

    /** {@return how many launch attributes there are} */
    int attributeCount() {
        return attributeCount;
    }

    /** {@return how many of the first attributes a kernel node takes} */
    int nodeAttributeCount() {
        return nodeAttributeCount;
    }

    /** {@return the {@code cudaLaunchConfig_t} an attributed launch copies; {@code null} without attributes} */
    MemorySegment config() {
        return config;
    }

    /** {@return the {@code gridDim}} */
    MemorySegment grid() {
        return grid;
    }

    /** {@return the {@code blockDim}} */
    MemorySegment block() {
        return block;
    }

    private MemorySegment attribute(int index, int id) {
        MemorySegment attribute = cudaLaunchAttribute_st.asSlice(attributes, index);
        cudaLaunchAttribute_st.id(attribute, id);
        return cudaLaunchAttribute_st.val(attribute);
    }
}
