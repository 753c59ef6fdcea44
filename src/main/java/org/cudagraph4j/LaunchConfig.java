package org.cudagraph4j;

import java.util.Objects;

/**
 * How to launch a kernel: grid, block, dynamic shared memory and the stream to queue it on.
 *
 * <p>{@link #shape()} prints it the way the CUDA docs and the graph diagram do:
 * {@code <<<{32,20},64,19200>>>}.
 *
 * <p>{@link #withProgrammaticDependentLaunch() Programmatic dependent launch} (PDL, sm_90 and newer)
 * lets the kernel start while the previous kernel on the stream is still running; it is for
 * kernels written for it, which wait on the device ({@code griddepcontrol.wait}, or
 * {@code cudaGridDependencySynchronize()}) before they touch anything the previous kernel writes or
 * reads. Every kernel shipped in {@code org.cudagraph4j.kernels} is. Stream capture keeps the
 * programmatic edge in the graph.
 *
 * <p>{@link #withCluster(Dim3) Thread-block clusters} (sm_90 and newer) group blocks that are
 * scheduled together on one GPU processing cluster and share distributed shared memory;
 * {@link #withCooperativeLaunch() cooperative launch} guarantees that every block of the grid is
 * resident at once, so that the grid can synchronize on the device
 * ({@code cooperative_groups::this_grid().sync()}). {@link CudaKernel#launch} checks both against
 * the device before launching, and captures keep them in the graph's kernel node.
 *
 * @param grid blocks in the grid
 * @param block threads in a block; at most 1024 in all
 * @param sharedMemBytes dynamic shared memory per block, in bytes
 * @param stream the stream the launch is ordered on
 * @param programmaticDependentLaunch whether to launch with programmatic stream serialization
 * @param cluster blocks per thread-block cluster, or {@code null} for no clusters
 * @param cooperative whether to launch cooperatively, every block resident at once
 */
public record LaunchConfig(Dim3 grid, Dim3 block, int sharedMemBytes, CudaStream stream,
        boolean programmaticDependentLaunch, Dim3 cluster, boolean cooperative) {
    /** The most threads a block may have on every GPU this library supports. */
    public static final int MAX_THREADS_PER_BLOCK = 1024;

    /**
     * Checks the configuration.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param stream the stream the launch is ordered on
     * @param programmaticDependentLaunch whether to launch with programmatic stream serialization
     * @param cluster blocks per thread-block cluster, or {@code null} for no clusters
     * @param cooperative whether to launch cooperatively, every block resident at once
     * @throws NullPointerException if {@code grid}, {@code block} or {@code stream} is {@code null}
     * @throws IllegalArgumentException if the block has more than {@value #MAX_THREADS_PER_BLOCK} threads,
     *     {@code sharedMemBytes} is negative, or the grid is not a whole number of clusters
     */
    public LaunchConfig {
        Objects.requireNonNull(grid, "grid");
        Objects.requireNonNull(block, "block");
        Objects.requireNonNull(stream, "stream");
        checkShape(block, sharedMemBytes);
        if (cluster != null && (grid.x() % cluster.x() != 0 || grid.y() % cluster.y() != 0
                || grid.z() % cluster.z() != 0)) {
            throw new IllegalArgumentException("the grid " + grid + " is not a whole number of clusters " + cluster
                    + ": each grid dimension must be a multiple of the cluster's");
        }
    }

    /**
     * The checks every launch shape passes, here and in {@link KernelLaunch}.
     *
     * @throws IllegalArgumentException if the block has more than {@value #MAX_THREADS_PER_BLOCK} threads,
     *     or {@code sharedMemBytes} is negative
     */
    static void checkShape(Dim3 block, int sharedMemBytes) {
        if (block.volume() > MAX_THREADS_PER_BLOCK) {
            throw new IllegalArgumentException("a block has at most " + MAX_THREADS_PER_BLOCK + " threads, but "
                    + block + " has " + block.volume());
        }
        if (sharedMemBytes < 0) {
            throw new IllegalArgumentException("sharedMemBytes must not be negative, got " + sharedMemBytes);
        }
    }

    /**
     * A configuration without clusters or cooperative launch.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param stream the stream the launch is ordered on
     * @param programmaticDependentLaunch whether to launch with programmatic stream serialization
     * @throws NullPointerException if {@code grid}, {@code block} or {@code stream} is {@code null}
     * @throws IllegalArgumentException if the block has too many threads, or {@code sharedMemBytes} is negative
     */
    public LaunchConfig(Dim3 grid, Dim3 block, int sharedMemBytes, CudaStream stream,
            boolean programmaticDependentLaunch) {
        this(grid, block, sharedMemBytes, stream, programmaticDependentLaunch, null, false);
    }

    /**
     * A configuration without programmatic dependent launch.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param stream the stream the launch is ordered on
     * @throws NullPointerException if {@code grid}, {@code block} or {@code stream} is {@code null}
     * @throws IllegalArgumentException if the block has too many threads, or {@code sharedMemBytes} is negative
     */
    public LaunchConfig(Dim3 grid, Dim3 block, int sharedMemBytes, CudaStream stream) {
        this(grid, block, sharedMemBytes, stream, false, null, false);
    }

    /**
     * Makes a configuration, as the constructor does.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param stream the stream the launch is ordered on
     * @return the configuration
     * @throws IllegalArgumentException if the block has too many threads, or {@code sharedMemBytes} is negative
     */
    public static LaunchConfig of(Dim3 grid, Dim3 block, int sharedMemBytes, CudaStream stream) {
        return new LaunchConfig(grid, block, sharedMemBytes, stream, false, null, false);
    }

    /**
     * Makes a configuration without dynamic shared memory.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param stream the stream the launch is ordered on
     * @return the configuration, with {@code sharedMemBytes} 0
     * @throws IllegalArgumentException if the block has too many threads
     */
    public static LaunchConfig of(Dim3 grid, Dim3 block, CudaStream stream) {
        return new LaunchConfig(grid, block, 0, stream, false, null, false);
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
        return new LaunchConfig(grid, block, sharedMemBytes, stream, true, cluster, cooperative);
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
        return new LaunchConfig(grid, block, sharedMemBytes, stream, programmaticDependentLaunch,
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
        return new LaunchConfig(grid, block, sharedMemBytes, stream, programmaticDependentLaunch, cluster, true);
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
}
