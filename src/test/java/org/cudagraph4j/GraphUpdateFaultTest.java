package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.CONFIG;
import static org.cudagraph4j.FaultChecks.N;
import static org.cudagraph4j.FaultChecks.assertExecWritesPattern;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.cudagraph4j.FaultChecks.patternGraph;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.GraphUpdateException;
import org.cudagraph4j.graph.InstantiateFlag;
import org.cudagraph4j.graph.UpdateResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Graph updates and graph nodes that cannot apply are refused, and the executable goes on
 * computing what it computed before. Fault injection as {@link FaultChecks} describes it, on a
 * {@link GpuFixture}.
 */
@GpuTest
class GraphUpdateFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void updateWithAnotherTopologyIsTopologyChangedAndTheExecutableKeepsItsResult() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph original = patternGraph(gpu, out, 0.5f, 4f);
                CudaGraph bigger = patternGraph(gpu, out, 2f, 1f); GraphExec exec = original.instantiate()) {
            bigger.addEmpty(bigger.nodes().get(0));
            LiveResources before = Cuda.liveResources();
            GraphUpdateException e = assertThrows(GraphUpdateException.class, () -> exec.update(bigger));
            assertSame(GraphUpdateException.class, e.getClass());
            assertEquals(UpdateResult.TOPOLOGY_CHANGED, e.result(), e.getMessage());
            assertEquals("cudaGraphExecUpdate", e.function());
            assertEquals(CudaError.GRAPH_EXEC_UPDATE_FAILURE, e.error());
            assertTrue(e.getMessage().startsWith("cudaGraphExecUpdate: cudaErrorGraphExecUpdateFailure (910): "),
                    e.getMessage());
            assertTrue(e.getMessage().contains(" [cudaGraphExecUpdateErrorTopologyChanged"), e.getMessage());
            // Where the runtime names the edge that differs, the message names both of its ends.
            e.edgeFrom().ifPresent(from -> assertTrue(e.node().isPresent()
                    && e.getMessage().contains("on the edge from " + from + " to " + e.node().get()), e.getMessage()));
            assertFalse(e.isSticky());
            assertEquals(before, Cuda.liveResources(), "a refused update holds nothing more");
            assertExecWritesPattern(gpu, exec, out, 0.5f, 4f);
        }
        assertHealthy(gpu);
    }

    @Test
    void updateThatChangesTheKernelTakesTheNewKernelAndItsBuffers() {
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(N, seed + 1);
        float[] y = TestData.randomFloats(N, seed);
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph original = patternGraph(gpu, out, 0.5f, 4f);
                GraphExec exec = original.instantiate()) {
            DeviceBuffer dx = gpu.device().allocateFloats(N);
            try (DeviceBuffer dy = gpu.device().allocateFloats(N)) {
                try (CudaGraph otherKernel = CudaGraph.create()) {
                    dx.copyFrom(x);
                    otherKernel.addKernel(KernelLaunch.of(gpu.saxpy(), CONFIG, N, 2f, dx, dy));
                    // cudaGraphExecUpdate accepts another function in the same context (since CUDA 11.2):
                    // the executable then runs saxpy, and holds saxpy's buffers.
                    exec.update(otherKernel);
                }
                dx.close();
                dy.copyFrom(y);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                float[] result = dy.toFloatArray();
                for (int i = 0; i < N; i++) {
                    assertEquals(2f * x[i] + y[i], result[i], 1e-6f * Math.abs(2f * x[i] + y[i]) + 1e-7f,
                            TestData.seedDescription(seed) + ", element " + i);
                }
            }
        }
        assertHealthy(gpu);
    }

    @Test
    void updateKernelNodeWithANodeOfAnotherGraphIsRefused() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph original = patternGraph(gpu, out, 0.5f, 4f);
                CudaGraph other = patternGraph(gpu, out, 2f, 1f); GraphExec exec = original.instantiate()) {
            GraphNode foreign = other.nodes().get(0);
            KernelLaunch params = foreign.kernelParams().orElseThrow();
            assertRefused(IllegalArgumentException.class, () -> exec.updateKernelNode(foreign, params),
                    foreign + " is not a node of the graph this executable was made from");
            assertExecWritesPattern(gpu, exec, out, 0.5f, 4f);
        }
        assertHealthy(gpu);
    }

    @Test
    void updateKernelNodeWithAMemsetNodeIsRefusedNamingTheNodeType() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            GraphNode memset = graph.addMemset(out, 0xFF);
            graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, 0.5f, 6f), memset);
            try (GraphExec exec = graph.instantiate()) {
                KernelLaunch params = KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, 2f, 0f);
                assertRefused(IllegalStateException.class, () -> exec.updateKernelNode(memset, params),
                        "node 0 is a MEMSET node, not KERNEL");
                assertExecWritesPattern(gpu, exec, out, 0.5f, 6f);
            }
        }
        assertHealthy(gpu);
    }

    @Test
    void updateKernelNodeWithAClosedBufferIsRefusedAndTheExecutableKeepsItsResult() {
        DeviceBuffer doomed = gpu.device().allocateFloats(N);
        String doomedName = doomed.toString();
        doomed.close();
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = patternGraph(gpu, out, 0.5f, 4f);
                GraphExec exec = graph.instantiate()) {
            GraphNode node = graph.nodes().get(0);
            KernelLaunch params = node.kernelParams().orElseThrow().withArguments(doomed, N, 1f, 0f);
            assertRefused(IllegalStateException.class, () -> exec.updateKernelNode(node, params),
                    doomedName + " is closed");
            assertExecWritesPattern(gpu, exec, out, 0.5f, 4f);
        }
        assertHealthy(gpu);
    }

    @Test
    void instantiateWithUploadButNoStreamIsRefused() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = patternGraph(gpu, out, 1f, 0f)) {
            LiveResources before = Cuda.liveResources();
            assertRefused(IllegalArgumentException.class, () -> graph.instantiate(InstantiateFlag.UPLOAD).close(),
                    "InstantiateFlag.UPLOAD needs a stream: use instantiate(stream, flags)");
            assertEquals(before, Cuda.liveResources());
        }
        assertHealthy(gpu);
    }

    @Test
    void graphNodesOfAnotherGraphOrMismatchedCopiesAreRefused() {
        try (CudaGraph a = CudaGraph.create(); CudaGraph b = CudaGraph.create();
                DeviceBuffer big = gpu.device().allocateFloats(16);
                DeviceBuffer small = gpu.device().allocateFloats(8)) {
            GraphNode inA = a.addEmpty();
            assertRefused(IllegalArgumentException.class, () -> b.addEmpty(inA), inA + " belongs to another graph");
            assertRefused(IllegalArgumentException.class, () -> b.addMemcpy(big, small),
                    "memcpy node: destination has 64 bytes but source has 32");
            assertTrue(b.nodes().isEmpty());
        }
        assertHealthy(gpu);
    }
}
