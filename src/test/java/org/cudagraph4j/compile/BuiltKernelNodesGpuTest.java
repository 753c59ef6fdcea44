package org.cudagraph4j.compile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.KernelParameter;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.StructArgument;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphArchiveException;
import org.cudagraph4j.graph.GraphBindings;
import org.cudagraph4j.graph.GraphEdge;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kernel nodes built with {@code CudaGraph.addKernel} run as their launch configuration asks, as a
 * captured launch does: the kernels, compiled here with NVRTC, report how they were launched. A
 * cluster node's blocks read their cluster rank and shape from the hardware, a cooperative node's
 * grid is valid and synchronizes, and a programmatic edge lets a dependent kernel start early and
 * wait on the device. A struct passed by value reaches the kernel member by member, eagerly and in
 * a node.
 */
@GpuTest
class BuiltKernelNodesGpuTest {
    static final String SOURCE = """
            #include <cooperative_groups.h>
            namespace cg = cooperative_groups;

            extern "C" __global__ void cluster_shape(int* out) {
                cg::cluster_group cluster = cg::this_cluster();
                unsigned rank;
                asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
                dim3 dims = cluster.dim_blocks();
                int block = blockIdx.x + blockIdx.y * gridDim.x;
                if (threadIdx.x == 0) {
                    out[5 * block] = (int) rank;
                    out[5 * block + 1] = (int) cluster.block_rank();
                    out[5 * block + 2] = (int) dims.x;
                    out[5 * block + 3] = (int) dims.y;
                    out[5 * block + 4] = (int) dims.z;
                }
            }

            // Each block writes its slot later than the block before it, then reads the next block's
            // slot: only a grid-wide barrier makes every read see the write.
            extern "C" __global__ void grid_rotate(int* slots, int* out, int* valid) {
                cg::grid_group grid = cg::this_grid();
                if (grid.thread_rank() == 0) *valid = grid.is_valid() ? 1 : 0;
                unsigned b = blockIdx.x;
                if (threadIdx.x == 0) {
                    long long start = clock64();
                    while (clock64() - start < 20000LL * b) {}
                    slots[b] = (int) b + 1;
                }
                grid.sync();
                if (threadIdx.x == 0) out[b] = slots[(b + 1) % gridDim.x];
            }

            // Lets its dependent start at once, then writes late.
            extern "C" __global__ void produce(int* data, int n) {
                asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                long long start = clock64();
                while (clock64() - start < 200000LL) {}
                if (i < n) data[i] = 3 * i;
            }

            extern "C" __global__ void consume(const int* data, int* out, int n) {
                asm volatile("griddepcontrol.wait;" ::: "memory");
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = data[i] + 1;
            }

            struct Affine {   // 32 bytes, aligned to 16
                float4 weights;
                double bias;
                int n;
            };

            extern "C" __global__ void affine(Affine p, const float* in, float* out) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < p.n) {
                    float x = in[i];
                    out[i] = p.weights.x * x + p.weights.y * x * x + p.weights.z - p.weights.w + (float) p.bias;
                }
            }
            """;
    /** Where cooperative_groups.h and the CCCL headers it includes are. */
    private static final String TOOLKIT = System.getenv().getOrDefault("CUDA_HOME", "/usr/local/cuda");
    private static CudaLibrary library;

    @BeforeAll
    static void compile() {
        CudaDevice device = TestData.device();
        library = Program.of("built_nodes.cu", SOURCE)
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
    void aClusterNodesBlocksReadTheirRankAndClusterShapeFromTheHardware() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("cluster_shape");
        Dim3 grid = Dim3.of(8, 4);
        int blocks = 32;
        LaunchConfig config = LaunchConfig.of(grid, Dim3.of(64)).withCluster(Dim3.of(2, 2, 1));
        try (CudaStream stream = device.createStream();
                DeviceBuffer out = device.allocate(ElementType.INT32, 5L * blocks);
                DeviceBuffer again = device.allocate(ElementType.INT32, 5L * blocks);
                CudaGraph graph = CudaGraph.create()) {
            out.memset(0xff);
            again.memset(0xff);
            KernelLaunch launch = KernelLaunch.of(kernel, config, out);
            GraphNode node = graph.addKernel(launch);
            assertEquals(config, node.kernelParams().orElseThrow().config());
            GraphArchiveException unsaved = assertThrows(GraphArchiveException.class,
                    () -> GraphArchive.save(graph, new GraphBindings().buffer("out", out)));
            assertEquals(GraphArchiveException.Reason.UNSUPPORTED, unsaved.reason());
            assertTrue(unsaved.getMessage().contains("launches in clusters of {2,2}, which a graph archive does not"
                    + " hold"), unsaved.getMessage());
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
                assertClusters(out, blocks);
                // An update keeps the node's cluster shape, which it must name again.
                exec.updateKernelNode(node, launch.withArguments(again));
                exec.launch(stream);
                stream.synchronize();
                assertClusters(again, blocks);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> exec.updateKernelNode(
                        node, KernelLaunch.of(kernel, LaunchConfig.of(grid, Dim3.of(64)), again)));
                assertEquals("updateKernelNode cannot change the launch attributes of node " + node.id()
                        + " (clusters of {2,2}) to no cluster shape, not cooperative: an executable keeps a node's"
                        + " cluster shape and cooperative launch as they were instantiated; change the graph and"
                        + " instantiate it again", e.getMessage());
            }
        }
    }

    private static void assertClusters(DeviceBuffer out, int blocks) {
        int[] reported = new int[5 * blocks];
        out.copyTo(reported);
        for (int b = 0; b < blocks; b++) {
            int x = b % 8;
            int y = b / 8;
            int rank = (x % 2) + 2 * (y % 2);
            assertEquals(rank, reported[5 * b], "block " + b + "'s %cluster_ctarank");
            assertEquals(rank, reported[5 * b + 1], "block " + b + "'s rank in this_cluster()");
            assertArrayEquals(new int[] {2, 2, 1}, new int[] {reported[5 * b + 2], reported[5 * b + 3],
                    reported[5 * b + 4]}, "block " + b + "'s cluster shape");
        }
    }

    @Test
    void aCooperativeNodesGridIsValidAndEveryBlockWaitsAtTheBarrier() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("grid_rotate");
        int blocks = device.properties().multiprocessorCount();
        Dim3 block = Dim3.of(128);
        try (CudaStream stream = device.createStream();
                DeviceBuffer slots = device.allocate(ElementType.INT32, blocks);
                DeviceBuffer out = device.allocate(ElementType.INT32, blocks);
                DeviceBuffer valid = device.allocate(ElementType.INT32, 1);
                CudaGraph graph = CudaGraph.create()) {
            slots.memset(0);
            out.memset(0xff);
            valid.memset(0);
            graph.addKernel(KernelLaunch.of(kernel, LaunchConfig.of(Dim3.of(blocks), block).withCooperativeLaunch(),
                    slots, out, valid));
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            int[] isValid = new int[1];
            valid.copyTo(isValid);
            assertEquals(1, isValid[0], "the grid group is valid only in a cooperative launch");
            int[] read = new int[blocks];
            out.copyTo(read);
            for (int b = 0; b < blocks; b++) {
                assertEquals((b + 1) % blocks + 1, read[b], "block " + b + " read the next block's slot after the barrier");
            }
            LaunchConfig oversized = LaunchConfig.of(Dim3.of(kernel.maxCooperativeBlocks(device, block, 0) + 1), block)
                    .withCooperativeLaunch();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> graph.addKernel(KernelLaunch.of(kernel, oversized, slots, out, valid)));
            assertTrue(e.getMessage().contains("resident at once"), e.getMessage());
            assertEquals(1, graph.nodes().size(), "a refused node is not added");
        }
    }

    @Test
    void aProgrammaticDependentNodeStartsEarlyAndWaitsOnTheDevice() {
        CudaDevice device = TestData.device();
        int n = 64 * 1024;
        LaunchConfig config = LaunchConfig.of(Dim3.of(n / 256), Dim3.of(256));
        try (CudaStream stream = device.createStream();
                DeviceBuffer data = device.allocate(ElementType.INT32, n);
                DeviceBuffer out = device.allocate(ElementType.INT32, n);
                CudaGraph graph = CudaGraph.create()) {
            data.memset(0);
            out.memset(0);
            GraphNode clear = graph.addMemset(out, 0);
            GraphNode produce = graph.addKernel(KernelLaunch.of(library.kernel("produce"), config, data, n));
            GraphNode consume = graph.addKernel(KernelLaunch.of(library.kernel("consume"),
                    config.withProgrammaticDependentLaunch(), data, out, n), produce, clear);
            assertEquals(config, consume.kernelParams().orElseThrow().config(), "the edge holds it, not the node");
            List<GraphEdge> edges = graph.edges();
            assertEquals(2, edges.size());
            assertTrue(edges.contains(new GraphEdge(produce, consume, true)), "kernel to kernel: " + edges);
            assertTrue(edges.contains(new GraphEdge(clear, consume, false)), "a memset stays a full edge: "
                    + edges);
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            int[] result = new int[n];
            out.copyTo(result);
            for (int i = 0; i < n; i++) {
                if (result[i] != 3 * i + 1) {
                    assertEquals(3 * i + 1, result[i], "element " + i + " was read before its producer wrote it");
                }
            }
        }
    }

    @Test
    void aStructByValueReachesTheKernelEagerlyAndInANode() {
        CudaDevice device = TestData.device();
        CudaKernel kernel = library.kernel("affine");
        assertEquals(new KernelParameter(0, 0, 32), kernel.parameters().get(0), "struct Affine, 32 bytes");
        int n = 1000;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = i * 0.01f - 3f;
        }
        // weights {2, 0.5, 1, 0.25} at 0, bias at 16, n at 24; 4 bytes of padding at 28
        StructArgument affine = StructArgument.builder(32).putFloat(0, 2f).putFloat(4, 0.5f).putFloat(8, 1f)
                .putFloat(12, 0.25f).putDouble(16, 0.125).putInt(24, n).build();
        LaunchConfig config = LaunchConfig.of(Dim3.of((n + 255) / 256), Dim3.of(256));
        try (CudaStream stream = device.createStream();
                DeviceBuffer in = TestData.upload(device, x);
                DeviceBuffer eager = device.allocateFloats(n);
                DeviceBuffer built = device.allocateFloats(n);
                CudaGraph graph = CudaGraph.create()) {
            eager.copyFrom(TestData.nans(n));
            built.copyFrom(TestData.nans(n));
            kernel.launch(stream, config, affine, in, eager);
            graph.addKernel(KernelLaunch.of(kernel, config, affine, in, built));
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
            }
            stream.synchronize();
            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = 2f * x[i] + 0.5f * x[i] * x[i] + 1f - 0.25f + 0.125f;
            }
            assertArrayEquals(expected, eager.toFloatArray(), 1e-4f);
            assertArrayEquals(expected, built.toFloatArray(), 1e-4f);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> kernel.launch(stream, config, StructArgument.builder(24).build(), in, eager));
            assertEquals("kernel affine, parameter 0 is 32 bytes but the StructArgument is 24 bytes", e.getMessage());
        }
    }
}
