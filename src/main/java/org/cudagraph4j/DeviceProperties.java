package org.cudagraph4j;

/**
 * What {@code cudaGetDeviceProperties} reports about a device, in the units its names say. For what
 * it does not carry (clock rates, memory pools, managed memory, preemption…), read
 * {@link CudaDevice#attribute(DeviceAttribute)}.
 *
 * @param name the marketing name, e.g. {@code NVIDIA H200}
 * @param major compute capability, major part
 * @param minor compute capability, minor part
 * @param multiprocessorCount streaming multiprocessors (SMs)
 * @param totalMemoryBytes global memory
 * @param sharedMemPerBlockOptinBytes the most shared memory a block may opt in to
 * @param l2CacheBytes L2 cache size
 * @param maxThreadsPerBlock threads a block may have
 * @param warpSize threads per warp
 */
public record DeviceProperties(String name, int major, int minor, int multiprocessorCount, long totalMemoryBytes,
        long sharedMemPerBlockOptinBytes, int l2CacheBytes, int maxThreadsPerBlock, int warpSize) {

    /** {@return the compute capability as {@code major * 10 + minor}, e.g. 90 for Hopper} */
    public int computeCapability() {
        return major * 10 + minor;
    }
}
