package org.cudagraph4j;

import java.util.Objects;

/**
 * How to launch a kernel: grid, block, dynamic shared memory and the stream to queue it on.
 *
 * <p>{@link #shape()} prints it the way the CUDA docs and the graph diagram do:
 * {@code <<<{32,20},64,19200>>>}.
 *
 * @param grid blocks in the grid
 * @param block threads in a block; at most 1024 in all
 * @param sharedMemBytes dynamic shared memory per block, in bytes
 * @param stream the stream the launch is ordered on
 */
public record LaunchConfig(Dim3 grid, Dim3 block, int sharedMemBytes, CudaStream stream) {
    /** The most threads a block may have on every GPU this library supports. */
    public static final int MAX_THREADS_PER_BLOCK = 1024;

    /**
     * Checks the configuration.
     *
     * @param grid blocks in the grid
     * @param block threads in a block; at most {@value #MAX_THREADS_PER_BLOCK} in all
     * @param sharedMemBytes dynamic shared memory per block, in bytes; not negative
     * @param stream the stream the launch is ordered on
     * @throws NullPointerException if {@code grid}, {@code block} or {@code stream} is {@code null}
     * @throws IllegalArgumentException if the block has more than {@value #MAX_THREADS_PER_BLOCK} threads, or
     *     {@code sharedMemBytes} is negative
     */
    public LaunchConfig {
        Objects.requireNonNull(grid, "grid");
        Objects.requireNonNull(block, "block");
        Objects.requireNonNull(stream, "stream");
        if (block.volume() > MAX_THREADS_PER_BLOCK) {
            throw new IllegalArgumentException("a block has at most " + MAX_THREADS_PER_BLOCK + " threads, but "
                    + block + " has " + block.volume());
        }
        if (sharedMemBytes < 0) {
            throw new IllegalArgumentException("sharedMemBytes must not be negative, got " + sharedMemBytes);
        }
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
        return new LaunchConfig(grid, block, sharedMemBytes, stream);
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
        return new LaunchConfig(grid, block, 0, stream);
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
