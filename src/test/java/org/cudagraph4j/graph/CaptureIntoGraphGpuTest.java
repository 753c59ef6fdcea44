package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.cudagraph4j.Cuda;
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
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Capturing into an existing graph ({@code cudaStreamBeginCaptureToGraph}): a WHILE node's body
 * recorded by stream capture, as {@code graphConditionalNodes} records its bodies, and work captured
 * after nodes of a built graph. The graph keeps alive what the captured nodes use, knows their
 * launches, and a capture closed without end leaves its nodes in the graph, still kept alive.
 */
@GpuTest
class CaptureIntoGraphGpuTest {
    private static final int N = 1 << 16;
    private static final LaunchConfig CONFIG = LaunchConfig.of(Dim3.of((N + 255) / 256), Dim3.of(256));
    private static CudaLibrary kernels;
    private static ConditionalKernels conditions;

    @BeforeAll
    static void load() {
        kernels = TestData.testKernels();
        conditions = ConditionalKernels.load();
    }

    @AfterAll
    static void unload() {
        conditions.close();
        kernels.close();
    }

    @Test
    void aWhileBodyRecordedByCaptureRunsAsOftenAsTheCountSays() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        CudaKernel saxpy = kernels.kernel("saxpy");
        float[] ones = new float[N];
        Arrays.fill(ones, 1f);
        try (CudaStream stream = device.createStream(); DeviceBuffer count = device.allocate(ElementType.INT32, 1);
                DeviceBuffer y = device.allocateFloats(N)) {
            DeviceBuffer x = device.allocateFloats(N);
            x.copyFrom(ones);
            GraphExec exec;
            try (CudaGraph graph = CudaGraph.create()) {
                ConditionalHandle more = graph.conditionalHandle(0, true);
                GraphNode start = graph.addKernel(conditions.set(more, count));
                ConditionalNode loop = graph.whileLoop(more, start);
                try (StreamCapture capture = StreamCapture.beginInto(loop.body(), stream, CaptureMode.GLOBAL)) {
                    saxpy.launch(stream, CONFIG, N, 2.0f, x, y);
                    conditions.countDown(more, count).launch(stream);
                    assertSame(loop.body(), capture.end());
                }
                List<GraphNode> body = loop.body().topologicalOrder();
                assertEquals(List.of(GraphNodeType.KERNEL, GraphNodeType.KERNEL),
                        body.stream().map(GraphNode::type).toList());
                assertEquals(saxpy, body.get(0).kernelParams().orElseThrow().kernel(),
                        "a kernel node captured into the body reports its launch");
                exec = graph.instantiate();
            }
            x.close(); // the executable keeps it: the captured node uses it
            try (exec) {
                for (int rounds : new int[] {3, 10}) {
                    count.copyFrom(new int[] {rounds});
                    y.copyFrom(new float[N]);
                    exec.launch(stream);
                    stream.synchronize();
                    float[] result = y.toFloatArray();
                    assertEquals(2f * rounds, result[0], rounds + " rounds");
                    assertEquals(2f * rounds, result[N - 1], rounds + " rounds");
                }
            }
        }
        assertEquals(before, Cuda.liveResources(), "x went with the executable that held it");
    }

    @Test
    void workCapturedAfterABuiltNodeRunsAfterIt() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        CudaKernel saxpy = kernels.kernel("saxpy");
        float[] x = TestData.randomFloats(N, TestData.newSeed());
        try (CudaStream stream = device.createStream(); DeviceBuffer xs = TestData.upload(device, x);
                DeviceBuffer y = device.allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            GraphNode clear = graph.addMemset(y, 0);
            try (StreamCapture capture = StreamCapture.beginInto(graph, stream, CaptureMode.THREAD_LOCAL, clear)) {
                saxpy.launch(stream, CONFIG, N, 3.0f, xs, y);
                capture.end();
            }
            List<GraphEdge> edges = graph.edges();
            assertEquals(1, edges.size(), edges.toString());
            assertEquals(clear, edges.get(0).from());
            assertEquals(GraphNodeType.KERNEL, edges.get(0).to().type());
            y.copyFrom(TestData.nans(N));
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            float[] result = y.toFloatArray();
            for (int i = 0; i < N; i++) {
                assertEquals(3f * x[i], result[i], Math.ulp(3f * x[i]), "element " + i);
            }
        }
    }

    @Test
    void aCaptureIntoAGraphUsesItsMemoryAndItsAllocationsBecomeTheGraphs() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream(); DeviceBuffer out = device.allocate(ElementType.INT32, 256);
                CudaGraph graph = CudaGraph.create()) {
            GraphAllocation scratch = graph.addMemAlloc(ElementType.INT32, 256);
            DeviceBuffer captured;
            try (StreamCapture capture = StreamCapture.beginInto(graph, stream, CaptureMode.GLOBAL,
                    scratch.node())) {
                scratch.buffer().memsetAsync(0x01, stream);
                captured = stream.allocate(ElementType.INT32, 256);
                captured.copyFromAsync(scratch.buffer(), stream);
                out.copyFromAsync(captured, stream);
                captured.close(); // a free node, in the graph
                capture.end();
            }
            assertTrue(captured.isGraphMemory());
            IllegalStateException unfreed = assertThrows(IllegalStateException.class, graph::instantiate);
            assertTrue(unfreed.getMessage().contains(scratch.buffer().toString()), unfreed.getMessage());
            List<GraphNode> order = graph.topologicalOrder();
            graph.addMemFree(scratch.buffer(), order.get(order.size() - 1));
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            int[] result = new int[256];
            out.copyTo(result);
            int[] expected = new int[256];
            Arrays.fill(expected, 0x01010101);
            assertEquals(Arrays.toString(expected), Arrays.toString(result));
        }
    }

    @Test
    void aCaptureClosedWithoutEndLeavesItsNodesInTheGraphWhichKeepsWhatTheyUse() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        try (CudaStream stream = device.createStream(); CudaGraph graph = CudaGraph.create()) {
            DeviceBuffer y = device.allocateFloats(N);
            try (StreamCapture capture = StreamCapture.beginInto(graph, stream, CaptureMode.GLOBAL)) {
                y.memsetAsync(0, stream);
            }
            y.close();
            assertEquals(before.deviceBuffers() + 1, Cuda.liveResources().deviceBuffers(),
                    "the memset node left in the graph keeps y allocated");
            assertEquals(List.of(GraphNodeType.MEMSET), graph.nodes().stream().map(GraphNode::type).toList());
        }
        assertEquals(before, Cuda.liveResources());
    }

    @Test
    void aCaptureIntoAGraphIsRefusedWhereItCannotWork() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream(); CudaGraph graph = CudaGraph.create();
                CudaGraph other = CudaGraph.create()) {
            GraphNode foreign = other.addEmpty();
            IllegalArgumentException dependency = assertThrows(IllegalArgumentException.class,
                    () -> StreamCapture.beginInto(graph, stream, CaptureMode.GLOBAL, foreign));
            assertTrue(dependency.getMessage().contains("belongs to another graph"), dependency.getMessage());
            assertEquals(CaptureStatusOf.NONE, CaptureStatusOf.of(stream), "a refused capture did not begin");
            CudaGraph closed = CudaGraph.create();
            closed.close();
            assertThrows(IllegalStateException.class, () -> StreamCapture.beginInto(closed, stream,
                    CaptureMode.GLOBAL));
            try (StreamCapture capture = StreamCapture.beginInto(graph, stream, CaptureMode.GLOBAL)) {
                IllegalStateException twice = assertThrows(IllegalStateException.class,
                        () -> StreamCapture.beginInto(other, stream, CaptureMode.GLOBAL));
                assertTrue(twice.getMessage().contains("already capturing"), twice.getMessage());
                graph.close(); // the capture keeps the native graph until it is over
                capture.end();
            }
            assertThrows(IllegalStateException.class, graph::nodes);
        }
    }

    /** The stream's capture status, through the public API. */
    private enum CaptureStatusOf {
        NONE, CAPTURING;

        static CaptureStatusOf of(CudaStream stream) {
            return stream.captureStatus() == org.cudagraph4j.CaptureStatus.NONE ? NONE : CAPTURING;
        }
    }
}
