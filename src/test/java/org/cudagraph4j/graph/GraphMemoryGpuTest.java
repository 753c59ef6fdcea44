package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
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
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.MemoryPool;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Graph memory: allocation and free nodes, built and captured. The graph owns the memory, which
 * its nodes use in graph order (fresh random inputs at every launch come out transformed through
 * it); the host and other graphs cannot touch it; a graph that does not free what it allocates is
 * not instantiated; and everything is let go with the graph (the leak check counts the views).
 */
@GpuTest
class GraphMemoryGpuTest {
    private static final int N = 4099;
    private static CudaLibrary kernels;

    @BeforeAll
    static void load() {
        kernels = TestData.testKernels();
    }

    @AfterAll
    static void unload() {
        kernels.close();
    }

    /** {@code 2 x + x}, computed as the kernel does: one rounding of a fused multiply-add. */
    private static float[] tripled(float[] x) {
        float[] expected = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            expected[i] = (float) Math.fma(2.0, x[i], x[i]);
        }
        return expected;
    }

    /** Three launches of {@code exec}, each on fresh values in x and NaN in out, each leaving 3x in out. */
    private static void assertTriplesAtEveryLaunch(GraphExec exec, CudaStream stream, DeviceBuffer x,
            DeviceBuffer out) {
        for (int launch = 0; launch < 3; launch++) {
            float[] values = TestData.randomFloats(N, TestData.newSeed());
            x.copyFrom(values);
            out.copyFrom(TestData.nans(N));
            exec.launch(stream);
            stream.synchronize();
            assertTripled(values, out.toFloatArray());
        }
    }

    private static void assertTripled(float[] x, float[] actual) {
        float[] expected = tripled(x);
        for (int i = 0; i < x.length; i++) {
            assertEquals(expected[i], actual[i], Math.ulp(expected[i]), "element " + i);
        }
    }

    @Test
    void aBuiltGraphAllocatesUsesAndFreesScratchMemoryAtEveryLaunch() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        CudaKernel saxpy = kernels.kernel("saxpy");
        try (CudaStream stream = device.createStream(); DeviceBuffer x = device.allocateFloats(N);
                DeviceBuffer out = device.allocateFloats(N)) {
            GraphExec exec;
            try (CudaGraph graph = CudaGraph.create()) {
                GraphAllocation scratch = graph.addMemAlloc(ElementType.FLOAT32, N);
                assertTrue(scratch.buffer().isGraphMemory());
                assertEquals(GraphNodeType.MEM_ALLOC, scratch.node().type());
                GraphNode in = graph.addMemcpy(scratch.buffer(), x, scratch.node());
                LaunchConfig config = LaunchConfig.of(Dim3.of((N + 255) / 256), Dim3.of(256));
                GraphNode twice = graph.addKernel(KernelLaunch.of(saxpy, config, N, 2.0f, x, scratch.buffer()), in);
                GraphNode back = graph.addMemcpy(out, scratch.buffer(), twice);
                GraphNode free = graph.addMemFree(scratch.buffer(), back);
                assertEquals(GraphNodeType.MEM_FREE, free.type());
                exec = graph.instantiate();
            }
            try (exec) {
                assertTriplesAtEveryLaunch(exec, stream, x, out);
                CudaDevice.GraphMemoryUsage held = device.graphMemoryUsage();
                assertTrue(held.reservedBytes() >= (long) N * Float.BYTES, held.toString());
                assertTrue(held.usedHighBytes() >= (long) N * Float.BYTES, held.toString());
            }
        }
        device.trimGraphMemory();
        device.resetGraphMemoryHighWaterMarks();
        CudaDevice.GraphMemoryUsage after = device.graphMemoryUsage();
        assertEquals(0, after.usedBytes(), after.toString());
        assertEquals(0, after.reservedBytes(), "trimmed once no executable holds graph memory: " + after);
        assertEquals(before, Cuda.liveResources(), "the scratch view went with its graph and executable");
    }

    /**
     * NVIDIA's {@code graphMemoryFootprint}: an allocation that depends on another's free node gets
     * the freed one's address, and a graph made after another is gone may get its addresses again.
     * Each view is closed with its own graph, whichever address it shares.
     */
    @Test
    void allocationsThatReuseAFreedOnesAddressAreAllLetGoWithTheirGraphs() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        int n = 1024;
        try (CudaStream stream = device.createStream(); DeviceBuffer out = device.allocate(ElementType.INT32, n)) {
            long reused;
            try (CudaGraph graph = CudaGraph.create()) {
                GraphAllocation first = graph.addMemAlloc(ElementType.INT32, n);
                GraphNode firstFree = graph.addMemFree(first.buffer(), graph.addMemset(first.buffer(), 1,
                        first.node()));
                GraphAllocation second = graph.addMemAlloc(ElementType.INT32, n, firstFree);
                assertEquals(first.buffer().address(), second.buffer().address(),
                        "an allocation after the first one's free node reuses its address, as graphMemoryFootprint "
                        + "shows; without that this test checks nothing");
                GraphNode back = graph.addMemcpy(out, second.buffer(), graph.addMemset(second.buffer(), 2,
                        second.node()));
                graph.addMemFree(second.buffer(), back);
                IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                        () -> graph.addMemFree(first.buffer()));
                assertTrue(twice.getMessage().contains("is already freed in this graph"), twice.getMessage());
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(stream);
                    stream.synchronize();
                }
                int[] expected = new int[n];
                Arrays.fill(expected, 0x02020202);
                int[] actual = new int[n];
                out.copyTo(actual);
                assertArrayEquals(expected, actual, "the second allocation's memset reached the copy");
                reused = second.buffer().address();
            }
            assertEquals(before.deviceBuffers() + 1, Cuda.liveResources().deviceBuffers(),
                    "both views went with the graph; only out is left");
            device.trimGraphMemory();
            try (CudaGraph graph = CudaGraph.create()) {
                GraphAllocation again = graph.addMemAlloc(ElementType.INT32, n);
                graph.addMemFree(again.buffer(), graph.addMemcpy(out, again.buffer(), graph.addMemset(again.buffer(),
                        3, again.node())));
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(stream);
                    stream.synchronize();
                }
                System.out.printf("a new graph's allocation at 0x%X, the last graph's at 0x%X%n",
                        again.buffer().address(), reused);
            }
        }
        device.trimGraphMemory();
        assertEquals(before, Cuda.liveResources(), "every view, at a reused address or not, went with its graph");
    }

    @Test
    void graphMemoryIsRefusedToTheHostEagerWorkAndOtherGraphs() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream(); DeviceBuffer plain = device.allocateFloats(N);
                CudaGraph graph = CudaGraph.create(); CudaGraph other = CudaGraph.create()) {
            DeviceBuffer scratch = graph.addMemAlloc(ElementType.FLOAT32, N).buffer();
            IllegalStateException host = assertThrows(IllegalStateException.class, scratch::toFloatArray);
            assertTrue(host.getMessage().contains("exists only while its graph runs, between its allocation and free "
                    + "nodes, so the host cannot copy or set it"), host.getMessage());
            assertThrows(IllegalStateException.class, () -> scratch.memset(0));
            assertThrows(IllegalStateException.class, () -> plain.copyFrom(scratch));
            IllegalStateException eager = assertThrows(IllegalStateException.class,
                    () -> scratch.memsetAsync(0, stream));
            assertTrue(eager.getMessage().contains("is not capturing"), eager.getMessage());
            IllegalStateException launch = assertThrows(IllegalStateException.class, () -> kernels.kernel("saxpy")
                    .launch(stream, LaunchConfig.of(Dim3.of(1), Dim3.of(32)), N, 1.0f, plain, scratch));
            assertTrue(launch.getMessage().contains("argument 3: " + scratch + " exists only inside its own graph"),
                    launch.getMessage());
            IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                    () -> other.addMemset(scratch, 0));
            assertTrue(foreign.getMessage().contains("exists only inside its own graph, not in " + other),
                    foreign.getMessage());
            assertThrows(IllegalArgumentException.class, () -> other.addMemFree(scratch));
            IllegalArgumentException notGraphMemory = assertThrows(IllegalArgumentException.class,
                    () -> graph.addMemFree(plain));
            assertTrue(notGraphMemory.getMessage().contains("is not memory this graph allocates"));
            IllegalArgumentException slice = assertThrows(IllegalArgumentException.class,
                    () -> graph.addMemFree(scratch.slice(0, 8)));
            assertTrue(slice.getMessage().contains("is a slice"), slice.getMessage());
            IllegalArgumentException child = assertThrows(IllegalArgumentException.class,
                    () -> other.addChildGraph(graph));
            assertTrue(child.getMessage().contains("holds memory nodes"), child.getMessage());
            assertThrows(IllegalArgumentException.class, () -> graph.addMemAlloc(ElementType.FLOAT32, 0));
        }
    }

    @Test
    void aConditionalBodyUsesItsGraphsMemoryButHoldsNoMemoryNodes() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        CudaGraph closed = CudaGraph.create();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.addMemAlloc(ElementType.FLOAT32, 16));
        int n = 1024;
        try (CudaStream stream = device.createStream(); DeviceBuffer out = device.allocateFloats(n);
                CudaGraph graph = CudaGraph.create()) {
            GraphAllocation scratch = graph.addMemAlloc(ElementType.FLOAT32, n);
            ConditionalNode condition = graph.ifThen(graph.conditionalHandle(1, true), scratch.node());
            CudaGraph body = condition.body();
            body.addMemset(scratch.buffer(), 0x3f);
            IllegalStateException alloc = assertThrows(IllegalStateException.class,
                    () -> body.addMemAlloc(ElementType.FLOAT32, 16));
            assertTrue(alloc.getMessage().contains("not a MEM_ALLOC node"), alloc.getMessage());
            IllegalStateException free = assertThrows(IllegalStateException.class,
                    () -> body.addMemFree(scratch.buffer()));
            assertTrue(free.getMessage().contains("not a MEM_FREE node"), free.getMessage());
            GraphNode back = graph.addMemcpy(out, scratch.buffer(), condition.node());
            graph.addMemFree(scratch.buffer(), back);
            try (GraphExec exec = graph.instantiate()) {
                out.copyFrom(TestData.nans(n));
                exec.launch(stream);
                stream.synchronize();
            }
            float[] expected = new float[n];
            Arrays.fill(expected, Float.intBitsToFloat(0x3f3f3f3f));
            assertArrayEquals(expected, out.toFloatArray(),
                    "the body's memset of the graph's scratch memory reached the copy after the node");
        }
    }

    @Test
    void aGraphThatDoesNotFreeWhatItAllocatesIsNotInstantiatedAndIsOneExecutableAtATime() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaGraph graph = CudaGraph.create()) {
            GraphAllocation scratch = graph.addMemAlloc(ElementType.INT32, 64);
            GraphNode set = graph.addMemset(scratch.buffer(), 0, scratch.node());
            IllegalStateException unfreed = assertThrows(IllegalStateException.class, graph::instantiate);
            assertTrue(unfreed.getMessage().contains("allocates memory it never frees: " + scratch.buffer()),
                    unfreed.getMessage());
            graph.addMemFree(scratch.buffer(), set);
            IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                    () -> graph.addMemFree(scratch.buffer()));
            assertTrue(twice.getMessage().contains("is already freed in this graph"), twice.getMessage());
            try (GraphExec exec = graph.instantiate()) {
                IllegalStateException second = assertThrows(IllegalStateException.class, graph::instantiate);
                assertTrue(second.getMessage().contains("holds memory nodes, and CUDA allows one executable"),
                        second.getMessage());
            }
            graph.instantiate().close();
        }
    }

    @Test
    void allocatingOnACapturingStreamAddsAnAllocationNodeAndClosingItAFreeNode() {
        CudaDevice device = TestData.device();
        LiveResources before = Cuda.liveResources();
        CudaKernel saxpy = kernels.kernel("saxpy");
        try (CudaStream stream = device.createStream(); DeviceBuffer x = device.allocateFloats(N);
                DeviceBuffer out = device.allocateFloats(N)) {
            CudaGraph graph;
            DeviceBuffer scratch;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                scratch = stream.allocate(ElementType.FLOAT32, N);
                assertTrue(scratch.isGraphMemory());
                scratch.copyFromAsync(x, stream);
                saxpy.launch(stream, LaunchConfig.of(Dim3.of((N + 255) / 256), Dim3.of(256)), N, 2.0f, x, scratch);
                out.copyFromAsync(scratch, stream);
                scratch.close();
                IllegalStateException afterFree = assertThrows(IllegalStateException.class,
                        () -> out.copyFromAsync(scratch, stream));
                assertTrue(afterFree.getMessage().contains("closed"), afterFree.getMessage());
                graph = capture.end();
            }
            try (graph) {
                List<GraphNodeType> types = graph.topologicalOrder().stream().map(GraphNode::type).toList();
                assertEquals(List.of(GraphNodeType.MEM_ALLOC, GraphNodeType.MEMCPY, GraphNodeType.KERNEL,
                        GraphNodeType.MEMCPY, GraphNodeType.MEM_FREE), types);
                try (GraphExec exec = graph.instantiate()) {
                    assertTriplesAtEveryLaunch(exec, stream, x, out);
                }
            }
        }
        assertEquals(before, Cuda.liveResources());
    }

    @Test
    void aCapturedAllocationLeftOpenIsFreedByANodeAddedLaterOrRefusedAtInstantiation() {
        CudaDevice device = TestData.device();
        LiveResources before = Cuda.liveResources();
        try (CudaStream stream = device.createStream(); MemoryPool pool = device.createMemoryPool(
                MemoryPool.Options.defaults())) {
            CudaGraph graph;
            DeviceBuffer scratch;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                scratch = stream.allocate(ElementType.FLOAT32, 256);
                scratch.memsetAsync(0, stream);
                IllegalStateException fromPool = assertThrows(IllegalStateException.class,
                        () -> pool.allocate(stream, ElementType.FLOAT32, 16));
                assertTrue(fromPool.getMessage().contains("allocate with CudaStream.allocate"), fromPool.getMessage());
                graph = capture.end();
            }
            try (graph) {
                IllegalStateException unfreed = assertThrows(IllegalStateException.class, graph::instantiate);
                assertTrue(unfreed.getMessage().contains(scratch.toString()), unfreed.getMessage());
                List<GraphNode> nodes = graph.topologicalOrder();
                graph.addMemFree(scratch, nodes.get(nodes.size() - 1));
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(stream);
                    stream.synchronize();
                }
            }
            try (StreamCapture discarded = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                stream.allocate(ElementType.FLOAT32, 256).memsetAsync(1, stream);
            }
        }
        assertEquals(before, Cuda.liveResources(), "a discarded capture's allocation goes with it");
    }
}
