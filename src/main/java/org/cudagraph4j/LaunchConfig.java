package org.cudagraph4j;

import java.util.Objects;
import org.cudagraph4j.internal.NativeLaunch;

/**
 * The shape of a kernel launch: grid, block, dynamic shared memory, and the launch attributes.
 * The stream is not part of it: it is given where the launch is queued,
 * {@link CudaKernel#launch(CudaStream, LaunchConfig, Object...)} or {@link KernelLaunch#launch(CudaStream)},
 * so that one configuration serves launches on any stream.
 *
 * <p>{@link #shape()} prints it the way the CUDA docs and the graph diagram do:
 * {@code <<<{32,20},64,19200>>>}.
 *
 * <p>{@link #withProgrammaticDependentLaunch() Programmatic dependent launch} (PDL, sm_90 and newer)
 * lets the kernel start while the previous kernel on the stream is still running; it is for
 * kernels written for it, which wait on the device ({@code griddepcontrol.wait}, or
 * {@code cudaGridDependencySynchronize()}) before they touch anything the previous kernel writes or
 * reads. Every kernel shipped in {@code org.cudagraph4j.kernels} is. Stream capture keeps the
 * programmatic edge in the graph, and {@code CudaGraph.addKernel} makes one from each kernel node
 * the new node depends on.
 *
 * <p>{@link #withCluster(Dim3) Thread-block clusters} (sm_90 and newer) group blocks that are
 * scheduled together on one GPU processing cluster and share distributed shared memory;
 * {@link #withCooperativeLaunch() cooperative launch} guarantees that every block of the grid is
 * resident at once, so that the grid can synchronize on the device
 * ({@code cooperative_groups::this_grid().sync()}). {@link CudaKernel#launch} checks both against
 * the stream's device before launching; captures keep them in the graph's kernel node, and
 * {@code CudaGraph.addKernel} sets them as the node's attributes.
 *
 * <p>The first launch turns a configuration into the form the runtime takes, once, and keeps it:
 * every later launch, captured launch, graph node and node update with the same configuration reads
 * that form as it is, so keep a configuration that launches often rather than making it anew. That
 * is why this value class is not a record; it compares, hashes and prints as one would.
 *
 * <p>Thread safety: immutable and safe to share; one configuration may serve launches from several
 * threads at once.
 */
public final class LaunchConfig {
    /** The most threads a block may have on every GPU this library supports. */
    public static final int MAX_THREADS_PER_BLOCK = 1024;

    private final Dim3 grid;
    private final Dim3 block;
    private final int sharedMemBytes;
    private final boolean programmaticDependentLaunch;
    private final Dim3 cluster;
    private final boolean cooperative;
    /**
     * The native form, made on first use; threads that race each make an equal one. Volatile, so
     * that the native memory it wrote is seen by every thread that reads it (an x86 load all the same).
     */
    private volatile NativeLaunch nativeLaunch;

    /**
     * Checks the configuration.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param programmaticDependentLaunch whether to launch with programmatic stream serialization
     * @param cluster blocks per thread-block cluster, or {@code null} for no clusters
     * @param cooperative whether to launch cooperatively, every block resident at once
     * @throws NullPointerException if {@code grid} or {@code block} is {@code null}
     * @throws IllegalArgumentException if the block has more than {@value #MAX_THREADS_PER_BLOCK} threads,
     *     {@code sharedMemBytes} is negative, or the grid is not a whole number of clusters
     */
    public LaunchConfig(Dim3 grid, Dim3 block, int sharedMemBytes, boolean programmaticDependentLaunch, Dim3 cluster,
            boolean cooperative) {
        Objects.requireNonNull(grid, "grid");
        Objects.requireNonNull(block, "block");
        if (block.volume() > MAX_THREADS_PER_BLOCK) {
            throw new IllegalArgumentException("a block has at most " + MAX_THREADS_PER_BLOCK + " threads, but "
                    + block + " has " + block.volume());
        }
        if (sharedMemBytes < 0) {
            throw new IllegalArgumentException("sharedMemBytes must not be negative, got " + sharedMemBytes);
        }
        if (cluster != null && (grid.x() % cluster.x() != 0 || grid.y() % cluster.y() != 0
                || grid.z() % cluster.z() != 0)) {
            throw new IllegalArgumentException("the grid " + grid + " is not a whole number of clusters " + cluster
                    + ": each grid dimension must be a multiple of the cluster's");
        }
        this.grid = grid;
        this.block = block;
        this.sharedMemBytes = sharedMemBytes;
        this.programmaticDependentLaunch = programmaticDependentLaunch;
        this.cluster = cluster;
        this.cooperative = cooperative;
    }

    /** {@return blocks in the grid} */
    public Dim3 grid() {
        return grid;
    }

    /** {@return threads in a block} */
    public Dim3 block() {
        return block;
    }

    /** {@return dynamic shared memory per block, in bytes} */
    public int sharedMemBytes() {
        return sharedMemBytes;
    }

    /** {@return whether the launch allows programmatic stream serialization} */
    public boolean programmaticDependentLaunch() {
        return programmaticDependentLaunch;
    }

    /** {@return blocks per thread-block cluster, or {@code null} for no clusters} */
    public Dim3 cluster() {
        return cluster;
    }

    /** {@return whether the launch is cooperative, every block resident at once} */
    public boolean cooperative() {
        return cooperative;
    }

    /**
     * The configuration a kernel node holds: this one without programmatic dependent launch, which
     * in a graph is the programmatic edges into the node, not the node's own.
     */
    LaunchConfig nodeConfig() {
        return programmaticDependentLaunch ? new LaunchConfig(grid, block, sharedMemBytes, false, cluster, cooperative)
                : this;
    }

    /** {@return whether the launch has a cluster shape or is cooperative: what a kernel node holds as attributes} */
    boolean hasNodeAttributes() {
        return cluster != null || cooperative;
    }

    /**
     * The launch in the form the runtime takes it, made on the first call and kept: a launch reads a
     * field, with no lookup, copy or allocation.
     */
    NativeLaunch nativeLaunch() {
        NativeLaunch result = nativeLaunch;
        if (result == null) {
            result = NativeLaunch.of(dims(grid), dims(block), sharedMemBytes, programmaticDependentLaunch,
                    cluster == null ? null : dims(cluster), cooperative);
            nativeLaunch = result;
        }
        return result;
    }

    private static int[] dims(Dim3 dims) {
        return new int[] {dims.x(), dims.y(), dims.z()};
    }

    /**
     * Makes a configuration without launch attributes.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @return the configuration
     * @throws NullPointerException if {@code grid} or {@code block} is {@code null}
     * @throws IllegalArgumentException if the block has too many threads, or {@code sharedMemBytes} is negative
     */
    public static LaunchConfig of(Dim3 grid, Dim3 block, int sharedMemBytes) {
        return new LaunchConfig(grid, block, sharedMemBytes, false, null, false);
    }

    /**
     * Makes a configuration without dynamic shared memory or launch attributes.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @return the configuration, with {@code sharedMemBytes} 0
     * @throws NullPointerException if {@code grid} or {@code block} is {@code null}
     * @throws IllegalArgumentException if the block has too many threads
     */
    public static LaunchConfig of(Dim3 grid, Dim3 block) {
        return new LaunchConfig(grid, block, 0, false, null, false);
    }

    /**
     * This configuration with programmatic dependent launch: the kernel may start before the
     * previous kernel on the stream has finished. Only for kernels that wait for it on the device
     * before touching its data (see the class description); on GPUs before sm_90, which cannot
     * overlap kernels this way, the kernels run one after the other as usual.
     *
     * @return a copy of this configuration that launches with programmatic stream serialization
     */
    public LaunchConfig withProgrammaticDependentLaunch() {
        return new LaunchConfig(grid, block, sharedMemBytes, true, cluster, cooperative);
    }

    /**
     * This configuration in thread-block clusters of {@code cluster} blocks
     * ({@code cudaLaunchAttributeClusterDimension}; sm_90 and newer). The kernel sees them through
     * {@code cooperative_groups::this_cluster()}. Portable cluster sizes are up to 8 blocks;
     * {@link CudaKernel#maxActiveClusters} tells whether a shape can run.
     *
     * @param cluster blocks per cluster; each grid dimension must be a multiple of the cluster's
     * @return a copy of this configuration with that cluster shape
     * @throws IllegalArgumentException if the grid is not a whole number of clusters
     */
    public LaunchConfig withCluster(Dim3 cluster) {
        return new LaunchConfig(grid, block, sharedMemBytes, programmaticDependentLaunch,
                Objects.requireNonNull(cluster, "cluster"), cooperative);
    }

    /**
     * This configuration launched cooperatively ({@code cudaLaunchAttributeCooperative}): every block
     * of the grid is resident at once, so the kernel may synchronize the whole grid. The grid may
     * hold at most {@link CudaKernel#maxCooperativeBlocks} blocks.
     *
     * @return a copy of this configuration with cooperative launch
     */
    public LaunchConfig withCooperativeLaunch() {
        return new LaunchConfig(grid, block, sharedMemBytes, programmaticDependentLaunch, cluster, true);
    }

    /** {@return the launch shape in CUDA's notation, e.g. {@code <<<{256,2},{8,32},0>>>}} */
    public String shape() {
        return shape(grid, block, sharedMemBytes);
    }

    /**
     * Formats a launch shape in CUDA's notation, for any grid, block and shared-memory size.
     *
     * @param grid blocks in the grid
     * @param block threads in a block
     * @param sharedMemBytes dynamic shared memory per block, in bytes
     * @return {@code <<<grid,block,sharedMemBytes>>>}, each {@link Dim3} as its {@link Dim3#toString()}
     */
    public static String shape(Dim3 grid, Dim3 block, int sharedMemBytes) {
        return "<<<" + grid + "," + block + "," + sharedMemBytes + ">>>";
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof LaunchConfig config && grid.equals(config.grid) && block.equals(config.block)
                && sharedMemBytes == config.sharedMemBytes
                && programmaticDependentLaunch == config.programmaticDependentLaunch
                && Objects.equals(cluster, config.cluster) && cooperative == config.cooperative;
    }

    @Override
    public int hashCode() {
        return Objects.hash(grid, block, sharedMemBytes, programmaticDependentLaunch, cluster, cooperative);
    }

    /** {@return the components, as a record prints them} */
    @Override
    public String toString() {
        return "LaunchConfig[grid=" + grid + ", block=" + block + ", sharedMemBytes=" + sharedMemBytes
                + ", programmaticDependentLaunch=" + programmaticDependentLaunch + ", cluster=" + cluster
                + ", cooperative=" + cooperative + "]";
    }
}
