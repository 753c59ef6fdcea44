package org.cudagraph4j;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One kernel launch, described once: the kernel, its {@link LaunchConfig} and its arguments. The
 * same value launches on a stream ({@link #launch(CudaStream)}), is what a captured launch
 * records, and is what a graph's kernel node launches ({@code CudaGraph.addKernel},
 * {@code GraphNode.kernelParams}, {@code GraphExec.updateKernelNode} in
 * {@link org.cudagraph4j.graph}). Arguments are checked against the kernel's parameter info when it
 * launches, or when a node is added or updated.
 *
 * <p>Every one of those paths takes the configuration in one native form, made once per
 * {@link LaunchConfig}. A kernel node, added or captured, keeps the whole configuration: grid, block
 * and shared memory as its parameters, a cluster shape and cooperative launch as node attributes,
 * and programmatic dependent launch as programmatic edges from the kernel nodes before it. What
 * a node records ({@code GraphNode.kernelParams}) is its own: the configuration without
 * programmatic dependent launch, which the graph's edges hold.
 *
 * <p>Thread safety: immutable and safe to share; the arguments are an unmodifiable copy.
 *
 * @param kernel the kernel
 * @param config grid, block, dynamic shared memory and launch attributes
 * @param arguments the arguments, as for {@link CudaKernel#launch(CudaStream, LaunchConfig, Object...)}
 */
public record KernelLaunch(CudaKernel kernel, LaunchConfig config, List<Object> arguments) {
    /**
     * Copies the arguments into an unmodifiable list, nulls kept.
     *
     * @throws NullPointerException if {@code kernel}, {@code config} or {@code arguments} is null
     */
    public KernelLaunch {
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(config, "config");
        arguments = arguments instanceof ArgumentValues values ? values : new ArgumentValues(arguments.toArray());
    }

    /**
     * Describes a launch of {@code kernel} with the given arguments.
     *
     * @param kernel the kernel
     * @param config grid, block, dynamic shared memory and launch attributes
     * @param arguments the arguments, as for {@link CudaKernel#launch(CudaStream, LaunchConfig, Object...)};
     *     checked against the kernel only when it launches, or when the node is added or updated
     * @return the launch description
     * @throws NullPointerException if {@code kernel} or {@code config} is null
     */
    public static KernelLaunch of(CudaKernel kernel, LaunchConfig config, Object... arguments) {
        return new KernelLaunch(kernel, config, Arrays.asList(arguments));
    }

    /**
     * The same launch with other arguments.
     *
     * @param newArguments the arguments, as for {@link CudaKernel#launch(CudaStream, LaunchConfig, Object...)}
     * @return a copy with {@code newArguments}; this record is unchanged
     */
    public KernelLaunch withArguments(Object... newArguments) {
        return new KernelLaunch(kernel, config, Arrays.asList(newArguments));
    }

    /**
     * The same arguments with another launch configuration.
     *
     * @param newConfig grid, block, dynamic shared memory and launch attributes
     * @return a copy with {@code newConfig}; this record is unchanged
     * @throws NullPointerException if {@code newConfig} is null
     */
    public KernelLaunch withConfig(LaunchConfig newConfig) {
        return new KernelLaunch(kernel, newConfig, arguments);
    }

    /**
     * Launches this kernel with these arguments on {@code stream} now, or into its capture: the
     * eager twin of adding it as a node.
     *
     * @param stream the stream to queue the launch on
     * @throws IllegalArgumentException if the arguments do not fit the kernel's parameters
     * @throws IllegalStateException if the stream, the kernel's library or a buffer among the arguments is closed
     */
    public void launch(CudaStream stream) {
        kernel.launch(stream, config, arguments.toArray());
    }
}
