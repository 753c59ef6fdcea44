package org.cudagraph4j;

/**
 * A device attribute that {@link CudaDevice#attribute} reads ({@code cudaDeviceAttr}): the ones
 * NVIDIA's samples and sizing code ask for most, each named with the unit of its value. An
 * attribute that says whether the device supports something reads 1 if it does and 0 if not. The
 * CUDA name, e.g. {@code cudaDevAttrClockRate}, is in {@link #cudaName()}.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html">cudaDeviceAttr</a>
 */
public enum DeviceAttribute implements CudaEnum {
    /** Threads a block may have. */
    MAX_THREADS_PER_BLOCK(1, "cudaDevAttrMaxThreadsPerBlock"),
    /** Shared memory a block may use without opting in, in bytes. */
    MAX_SHARED_MEMORY_PER_BLOCK_BYTES(8, "cudaDevAttrMaxSharedMemoryPerBlock"),
    /** Threads per warp. */
    WARP_SIZE(10, "cudaDevAttrWarpSize"),
    /** The peak clock of the multiprocessors, in kHz. */
    CLOCK_RATE_KHZ(13, "cudaDevAttrClockRate"),
    /** Streaming multiprocessors (SMs). */
    MULTIPROCESSOR_COUNT(16, "cudaDevAttrMultiProcessorCount"),
    /**
     * The compute mode, a {@code cudaComputeMode}: 0 default (any number of processes), 2 prohibited
     * (no process), 3 exclusive process (one process at a time).
     */
    COMPUTE_MODE(20, "cudaDevAttrComputeMode"),
    /** Whether the device may run several kernels at once. */
    CONCURRENT_KERNELS(31, "cudaDevAttrConcurrentKernels"),
    /** The peak memory clock, in kHz. */
    MEMORY_CLOCK_RATE_KHZ(36, "cudaDevAttrMemoryClockRate"),
    /** The width of the global memory bus, in bits. */
    GLOBAL_MEMORY_BUS_WIDTH_BITS(37, "cudaDevAttrGlobalMemoryBusWidth"),
    /** The L2 cache's size, in bytes. */
    L2_CACHE_SIZE_BYTES(38, "cudaDevAttrL2CacheSize"),
    /** Threads that may be resident on one multiprocessor. */
    MAX_THREADS_PER_MULTIPROCESSOR(39, "cudaDevAttrMaxThreadsPerMultiProcessor"),
    /** Copy engines that can run copies while kernels run. */
    ASYNC_ENGINE_COUNT(40, "cudaDevAttrAsyncEngineCount"),
    /** The compute capability's major part, e.g. 9 for Hopper. */
    COMPUTE_CAPABILITY_MAJOR(75, "cudaDevAttrComputeCapabilityMajor"),
    /** The compute capability's minor part. */
    COMPUTE_CAPABILITY_MINOR(76, "cudaDevAttrComputeCapabilityMinor"),
    /** Shared memory one multiprocessor has for its resident blocks, in bytes. */
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR_BYTES(81, "cudaDevAttrMaxSharedMemoryPerMultiprocessor"),
    /** Whether the device can allocate managed memory on this system. */
    MANAGED_MEMORY(83, "cudaDevAttrManagedMemory"),
    /** Whether the device can access managed memory while the CPU does. */
    CONCURRENT_MANAGED_ACCESS(89, "cudaDevAttrConcurrentManagedAccess"),
    /** Whether the device can preempt running kernels (compute preemption). */
    COMPUTE_PREEMPTION_SUPPORTED(90, "cudaDevAttrComputePreemptionSupported"),
    /** Whether the device can launch cooperative kernels ({@link LaunchConfig#withCooperativeLaunch()}). */
    COOPERATIVE_LAUNCH(95, "cudaDevAttrCooperativeLaunch"),
    /** The most shared memory a block may opt in to, in bytes
     * ({@link CudaKernel#setMaxDynamicSharedMemory}). */
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN_BYTES(97, "cudaDevAttrMaxSharedMemoryPerBlockOptin"),
    /** Blocks that may be resident on one multiprocessor. */
    MAX_BLOCKS_PER_MULTIPROCESSOR(106, "cudaDevAttrMaxBlocksPerMultiprocessor"),
    /**
     * Whether the device has the stream-ordered allocator and memory pools ({@code cudaMallocAsync},
     * {@link MemoryPool}), which graph memory nodes also need.
     */
    MEMORY_POOLS_SUPPORTED(115, "cudaDevAttrMemoryPoolsSupported"),
    /** Whether the device can launch thread-block clusters. */
    CLUSTER_LAUNCH(120, "cudaDevAttrClusterLaunch");

    private final int value;
    private final String cudaName;

    DeviceAttribute(int value, String cudaName) {
        this.value = value;
        this.cudaName = cudaName;
    }

    /**
     * The {@code cudaDeviceAttr} value.
     *
     * @return the raw value
     */
    @Override
    public int value() {
        return value;
    }

    /**
     * The runtime's name for this attribute.
     *
     * @return the enumerator's name, e.g. {@code cudaDevAttrClockRate}
     */
    public String cudaName() {
        return cudaName;
    }
}
