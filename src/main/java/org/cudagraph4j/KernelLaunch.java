package org.cudagraph4j;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * One kernel launch, described once: the kernel, its launch shape and its arguments. The same
 * value launches eagerly ({@link #launch(CudaStream)}), is what a captured launch records, and is
 * what a graph's kernel node launches ({@code CudaGraph.addKernel}, {@code GraphNode.kernelParams},
 * {@code GraphExec.updateKernelNode} in {@link org.cudagraph4j.graph}). Arguments are checked
 * against the kernel's parameter info when it launches, or when a node is added or updated.
 *
 * @param kernel the kernel
 * @param grid blocks in the grid
 * @param block threads in a block
 * @param sharedMemBytes dynamic shared memory per block
 * @param arguments the arguments, as for {@link CudaKernel#launch(LaunchConfig, Object...)}
 */
public record KernelLaunch(CudaKernel kernel, Dim3 grid, Dim3 block, int sharedMemBytes, List<Object> arguments) {
    /**
     * Checks the launch shape and copies the arguments into an unmodifiable list, nulls kept.
     *
     * @throws NullPointerException if {@code kernel}, {@code grid}, {@code block} or {@code arguments} is null
     * @throws IllegalArgumentException if {@code block} has more than {@link LaunchConfig#MAX_THREADS_PER_BLOCK}
     *     threads or {@code sharedMemBytes} is negative
     */
    public KernelLaunch {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(grid, "grid");
        Objects.requireNonNull(block, "block");
        LaunchConfig.checkShape(block, sharedMemBytes);
        // Arrays.asList keeps nulls, so that the argument check can name a null argument.
        arguments = Collections.unmodifiableList(Arrays.asList(arguments.toArray()));
    }

    /**
     * Describes a launch of {@code kernel} with the given arguments.
     *
     * @param kernel the kernel
     * @param grid blocks in the grid
     * @param block threads in a block, at most {@link LaunchConfig#MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param arguments the arguments, as for {@link CudaKernel#launch(LaunchConfig, Object...)}; checked
     *     against the kernel only when the node is added or updated
     * @return the launch description
     * @throws NullPointerException if {@code kernel}, {@code grid} or {@code block} is null
     * @throws IllegalArgumentException if {@code block} is too large or {@code sharedMemBytes} is negative
     */
    public static KernelLaunch of(CudaKernel kernel, Dim3 grid, Dim3 block, int sharedMemBytes,
            Object... arguments) {
        return new KernelLaunch(kernel, grid, block, sharedMemBytes, Arrays.asList(arguments));
    }

    /**
     * The same launch with other arguments.
     *
     * @param newArguments the arguments, as for {@link CudaKernel#launch(LaunchConfig, Object...)}
     * @return a copy with {@code newArguments}; this record is unchanged
     */
    public KernelLaunch withArguments(Object... newArguments) {
        return new KernelLaunch(kernel, grid, block, sharedMemBytes, Arrays.asList(newArguments));
    }

    /**
     * The same arguments with another launch shape.
     *
     * @param newGrid blocks in the grid
     * @param newBlock threads in a block, at most {@link LaunchConfig#MAX_THREADS_PER_BLOCK} in all
     * @param newSharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @return a copy with the new shape; this record is unchanged
     * @throws NullPointerException if {@code newGrid} or {@code newBlock} is null
     * @throws IllegalArgumentException if {@code newBlock} is too large or {@code newSharedMemBytes} is negative
     */
    public KernelLaunch withLaunchShape(Dim3 newGrid, Dim3 newBlock, int newSharedMemBytes) {
        return new KernelLaunch(kernel, newGrid, newBlock, newSharedMemBytes, arguments);
    }

    /**
     * Launches this kernel with these arguments on {@code stream} now, or into its capture: the
     * eager twin of adding it as a node.
     *
     * @param stream the stream to launch on
     * @throws IllegalArgumentException if the arguments do not fit the kernel's parameters
     * @throws IllegalStateException if the stream, the kernel's library or a buffer among the arguments is closed
     */
    public void launch(CudaStream stream) {
        kernel.launch(LaunchConfig.of(grid, block, sharedMemBytes, stream), arguments.toArray());
    }

    /**
     * The launch shape in CUDA's notation.
     *
     * @return grid, block and dynamic shared memory in bytes, e.g. {@code <<<{32,20},64,19200>>>}
     */
    public String shape() {
        return LaunchConfig.shape(grid, block, sharedMemBytes);
    }
}
