package org.cudagraph4j.graph;

import org.cudagraph4j.Dim3;
import org.cudagraph4j.LaunchConfig;

/**
 * What the runtime reports about a kernel node ({@code cudaGraphKernelNodeGetParams}).
 *
 * @param name the kernel's name from {@code cudaFuncGetName}, demangled where it is C++
 * @param mangledName the name as compiled
 * @param grid blocks in the grid
 * @param block threads in a block
 * @param sharedMemBytes dynamic shared memory per block
 * @param functionHandle the function's address, as the seed diagram prints it
 */
public record KernelNodeInfo(String name, String mangledName, Dim3 grid, Dim3 block, int sharedMemBytes,
        long functionHandle) {
    /**
     * The launch shape in CUDA's notation.
     *
     * @return grid, block and dynamic shared memory in bytes, e.g. {@code <<<{256,2},{8,32},0>>>}
     */
    public String shape() {
        return LaunchConfig.shape(grid, block, sharedMemBytes);
    }
}
