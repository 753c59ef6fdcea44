package org.cudagraph4j.compile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Thread-block clusters and cooperative launch, on kernels compiled here with NVRTC that can tell
 * how they were launched: a cluster kernel reports its rank, its cluster's size and a value read
 * from another block's shared memory; a cooperative kernel checks that its grid group is valid and
 * sums through a grid-wide barrier. Eager and captured launches agree; shapes the GPU cannot run
 * are refused by name before the launch.
 */
@GpuTest
class ClusterAndCooperativeGpuTest {
    static final String SOURCE = """
            #include <cooperative_groups.h>
            namespace cg = cooperative_groups;

            extern "C" __global__ void cluster_report(int* out) {
                cg::cluster_group cluster = cg::this_cluster();
                __shared__ int rank;
                if (threadIdx.x == 0) rank = (int) cluster.block_rank();
                cluster.sync();
                int* first = cluster.map_shared_rank(&rank, 0);
                int block = blockIdx.x + blockIdx.y * gridDim.x;
                if (threadIdx.x == 0) {
                    out[3 * block] = (int) cluster.block_rank();
                    out[3 * block + 1] = (int) cluster.num_blocks();
                    out[3 * block + 2] = *first + 100;
                }
                cluster.sync(); // block 0's shared memory must outlive the others' reads
            }

            extern "C" __global__ void grid_sum(const float* in, float* partial, float* out, int* valid, int n) {
                cg::grid_group grid = cg::this_grid();
                if (grid.thread_rank() == 0) *valid = grid.is_valid() ? 1 : 0;
                __shared__ float sums[256];
                float sum = 0;
                for (int i = grid.thread_rank(); i < n; i += grid.size()) sum += in[i];
                sums[threadIdx.x] = sum;
                __syncthreads();
                for (int s = blockDim.x / 2; s > 0; s /= 2) {
                    if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];
                    __syncthreads();
                }
                if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
                grid.sync();
                if (grid.thread_rank() == 0) {
                    float total = 0;
                    for (int b = 0; b < gridDim.x; b++) total += partial[b];
                    *out = total;
                }
            }
            """;
    /** Where cooperative_groups.h and the CCCL headers it includes are. */
    private static final String TOOLKIT = System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda");
    private static CudaLibrary library;

    @BeforeAll
    static void compile() {
        CudaDevice device = TestData.device();
        library = Program.of("launch_shapes.cu", SOURCE)
                .compile(ProgramOptions.defaults().withArchitecture(device).withStandard("c++17")
                        .withIncludePath(TOOLKIT + "/include").withIncludePath(TOOLKIT + "/include/cccl"),
                        CompileTarget.CUBIN)
                .load();
    }

    @AfterAll
    static void unload() {
        library.close();
    }

    @Test
    void clusterBlocksShareARankAndEachOthersSharedMemoryEagerlyAndInAGraph() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("cluster_report");
        Dim3 grid = Dim3.of(8, 3);
        int blocks = 24;
        try (CudaStream stream = device.createStream(); DeviceBuffer out = device.allocate(ElementType.INT32, 3L * blocks)) {
            LaunchConfig config = LaunchConfig.of(grid, Dim3.of(64)).withCluster(Dim3.of(4, 1, 1));
            assertTrue(kernel.maxActiveClusters(device, config) > 0);
            out.memset(0xff);
            kernel.launch(stream, config, out);
            stream.synchronize();
            int[] eager = new int[3 * blocks];
            out.copyTo(eager);
            for (int b = 0; b < blocks; b++) {
                assertEquals((b % 8) % 4, eager[3 * b], "block " + b + "'s rank in its cluster");
                assertEquals(4, eager[3 * b + 1], "block " + b + "'s cluster size");
                assertEquals(100, eager[3 * b + 2], "block " + b + " read rank 0's shared memory");
            }
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                kernel.launch(stream, config, out);
                graph = capture.end();
            }
            assertEquals(config, graph.nodes().get(0).kernelParams().orElseThrow().config(),
                    "the captured node records its cluster shape");
            out.memset(0xff);
            try (graph; GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            int[] replayed = new int[3 * blocks];
            out.copyTo(replayed);
            assertArrayEquals(eager, replayed, "the graph's node kept the cluster shape");
        }
    }

    @Test
    void aGridMustBeAWholeNumberOfClustersAndTheOptionsCombine() {
        LaunchConfig config = LaunchConfig.of(Dim3.of(8, 3), Dim3.of(64));
        assertEquals(Dim3.of(4), config.withCluster(Dim3.of(4)).cluster());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> config.withCluster(Dim3.of(3)));
        assertEquals("the grid {8,3} is not a whole number of clusters 3: each grid dimension must be a "
                + "multiple of the cluster's", e.getMessage());
        LaunchConfig all = config.withProgrammaticDependentLaunch().withCluster(Dim3.of(2)).withCooperativeLaunch();
        assertTrue(all.programmaticDependentLaunch() && all.cooperative());
        assertEquals(Dim3.of(2), all.cluster());
        assertThrows(IllegalArgumentException.class,
                () -> library.kernel("cluster_report").maxActiveClusters(TestData.device(), config));
    }

    @Test
    void aClusterShapeThatCannotBeResidentIsRefusedBeforeTheLaunch() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("cluster_report");
        try (CudaStream stream = device.createStream(); DeviceBuffer out = device.allocate(ElementType.INT32, 3L * 64)) {
            LaunchConfig tooLarge = LaunchConfig.of(Dim3.of(64), Dim3.of(64)).withCluster(Dim3.of(32, 1, 1));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> kernel.launch(stream, tooLarge, out));
            assertTrue(e.getMessage().contains("cannot run in clusters of 32 blocks"), e.getMessage());
            stream.synchronize();
        }
    }

    @Test
    void residentBlocksPerMultiprocessorSizeTheCooperativeGridAndFallWithSharedMemory() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("grid_sum");
        Dim3 block = Dim3.of(256);
        int perSm = kernel.maxActiveBlocksPerMultiprocessor(device, block, 0);
        assertTrue(perSm >= 1 && perSm * 256 <= 2048, "blocks of 256 threads an SM keeps: " + perSm);
        assertEquals(perSm * device.properties().multiprocessorCount(), kernel.maxCooperativeBlocks(device, block, 0));
        int withShared = kernel.maxActiveBlocksPerMultiprocessor(device, block, 16 * 1024);
        assertTrue(withShared >= 1 && withShared <= perSm, "with 16 KiB of shared memory each: " + withShared);
        // 48 KiB of dynamic shared memory beside the kernel's 1 KiB of static is past the 48 KiB a
        // block gets without opting in (CudaKernel.setMaxDynamicSharedMemory): no block can run.
        assertEquals(0, kernel.maxActiveBlocksPerMultiprocessor(device, block, 48 * 1024));
    }

    @Test
    void aCooperativeGridIsValidAndSynchronizesAndAnOversizedOneIsRefused() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("grid_sum");
        int n = 1 << 20;
        float[] values = TestData.randomFloats(n, TestData.newSeed());
        double expected = 0;
        for (float value : values) {
            expected += value;
        }
        Dim3 block = Dim3.of(256);
        int most = kernel.maxCooperativeBlocks(device, block, 0);
        assertTrue(most >= device.properties().multiprocessorCount(), "at least a block per SM: " + most);
        int blocks = device.properties().multiprocessorCount();
        try (CudaStream stream = device.createStream();
                DeviceBuffer in = TestData.upload(device, values);
                DeviceBuffer partial = device.allocateFloats(most + 1);
                DeviceBuffer out = device.allocateFloats(1);
                DeviceBuffer valid = device.allocate(ElementType.INT32, 1)) {
            out.copyFrom(new float[] {Float.NaN});
            valid.memset(0);
            kernel.launch(stream, LaunchConfig.of(Dim3.of(blocks), block).withCooperativeLaunch(), in, partial, out,
                    valid, n);
            stream.synchronize();
            int[] isValid = new int[1];
            valid.copyTo(isValid);
            assertEquals(1, isValid[0], "the grid group is valid only in a cooperative launch");
            float total = out.toFloatArray()[0];
            assertEquals(expected, total, Math.max(1e-3, Math.abs(expected) * 1e-4), "the grid-wide sum");

            LaunchConfig oversized = LaunchConfig.of(Dim3.of(most + 1), block).withCooperativeLaunch();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> kernel.launch(stream, oversized, in, partial, out, valid, n));
            assertTrue(e.getMessage().contains("needs all " + (most + 1) + " blocks"), e.getMessage());
            assertTrue(e.getMessage().contains("holds at most " + most + " blocks"), e.getMessage());
        }
    }
}
