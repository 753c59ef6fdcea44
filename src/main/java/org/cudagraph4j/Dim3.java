package org.cudagraph4j;

/**
 * A grid or block extent, as CUDA's {@code dim3}. Every component is at least 1.
 *
 * <p>{@link #toString()} uses the launch notation of {@code <<<grid, block, shmem>>>} with trailing
 * 1s dropped: {@code 64}, {@code {32,20}}, {@code {2,2,4}}.
 *
 * @param x the extent along x: blocks in a grid, threads in a block
 * @param y the extent along y
 * @param z the extent along z
 */
public record Dim3(int x, int y, int z) {
    /**
     * Checks the extent.
     *
     * @param x the extent along x; at least 1
     * @param y the extent along y; at least 1
     * @param z the extent along z; at least 1
     * @throws IllegalArgumentException if a component is less than 1
     */
    public Dim3 {
        if (x < 1 || y < 1 || z < 1) {
            throw new IllegalArgumentException("every Dim3 component must be at least 1, got (" + x + ", " + y + ", "
                    + z + ")");
        }
    }

    /**
     * Makes a one-dimensional extent.
     *
     * @param x the extent along x; at least 1
     * @return {@code (x, 1, 1)}
     * @throws IllegalArgumentException if {@code x} is less than 1
     */
    public static Dim3 of(int x) {
        return new Dim3(x, 1, 1);
    }

    /**
     * Makes a two-dimensional extent.
     *
     * @param x the extent along x; at least 1
     * @param y the extent along y; at least 1
     * @return {@code (x, y, 1)}
     * @throws IllegalArgumentException if a component is less than 1
     */
    public static Dim3 of(int x, int y) {
        return new Dim3(x, y, 1);
    }

    /**
     * Makes a three-dimensional extent, as the constructor does.
     *
     * @param x the extent along x; at least 1
     * @param y the extent along y; at least 1
     * @param z the extent along z; at least 1
     * @return {@code (x, y, z)}
     * @throws IllegalArgumentException if a component is less than 1
     */
    public static Dim3 of(int x, int y, int z) {
        return new Dim3(x, y, z);
    }

    /** {@return x·y·z: the number of blocks or threads, as a long so that large grids do not overflow} */
    public long volume() {
        return (long) x * y * z;
    }

    @Override
    public String toString() {
        if (z != 1) {
            return "{" + x + "," + y + "," + z + "}";
        }
        if (y != 1) {
            return "{" + x + "," + y + "}";
        }
        return Integer.toString(x);
    }
}
