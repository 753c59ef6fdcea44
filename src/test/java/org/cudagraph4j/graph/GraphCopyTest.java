package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuFixture;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link CudaGraph#copy()}: a copy runs what its original runs, changes apart from it, keeps alive
 * what its nodes use after the original and those resources are closed, and carries each kernel
 * node's launch over; what CUDA does not clone is refused by name.
 */
@GpuTest
class GraphCopyTest {
    private static final int N = 4099;
    private static final LaunchConfig CONFIG = LaunchConfig.of(Dim3.of(17), Dim3.of(256));

    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    /** y = a*x + y with x[i] = i*scale + offset, as a write_pattern then saxpy pair computes it. */
    private static float[] expected(float scale, float offset, float a, float[] y) {
        float[] result = new float[y.length];
        for (int i = 0; i < y.length; i++) {
            result[i] = a * (i * scale + offset) + y[i];
        }
        return result;
    }

    /** out[i] = i*scale + offset. */
    private static float[] pattern(float scale, float offset) {
        float[] result = new float[N];
        for (int i = 0; i < N; i++) {
            result[i] = i * scale + offset;
        }
        return result;
    }

    private void run(GraphExec exec) {
        exec.launch(gpu.stream());
        gpu.stream().synchronize();
    }

    @Test
    void aCopyOfACapturedGraphRunsAfterTheOriginalAndWhatItUsesAreClosed() {
        LiveResources before = Cuda.liveResources();
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (DeviceBuffer dy = TestData.upload(gpu.device(), y)) {
            CudaGraph copy;
            try (CudaLibrary library = TestData.testKernels(); DeviceBuffer dx = gpu.device().allocateFloats(N)) {
                CudaKernel write = library.kernel("write_pattern");
                CudaKernel saxpy = library.kernel("saxpy");
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                    write.launch(gpu.stream(), CONFIG, dx, N, 0.5f, 1.25f);
                    saxpy.launch(gpu.stream(), CONFIG, N, 3.0f, dx, dy);
                    graph = capture.end();
                }
                try (graph) {
                    copy = graph.copy();
                }
                assertEquals(List.of("write_pattern", "saxpy"),
                        copy.topologicalOrder().stream().map(node -> node.kernelInfo().name()).toList());
            }
            // The original, the library and the scratch buffer are closed; the copy holds the last two.
            try (copy; GraphExec exec = copy.instantiate()) {
                assertEquals(2, copy.nodes().size());
                assertEquals(1, copy.edges().size());
                assertTrue(copy.nodes().stream().allMatch(node -> node.kernelParams().isPresent()),
                        "the captured launches carry over");
                run(exec);
                assertArrayEquals(expected(0.5f, 1.25f, 3.0f, y), dy.toFloatArray(), TestData.seedDescription(seed));
            }
        }
        assertEquals(before, Cuda.liveResources(), "the copy let go of what it held when it closed");
    }

    @Test
    void aCopyAndItsOriginalChangeApart() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            KernelLaunch launch = KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, 1f, 0f);
            GraphNode first = graph.addKernel(launch);
            GraphNode last = graph.addEmpty(first);
            try (CudaGraph copy = graph.copy()) {
                assertTrue(copy.isOpen());
                assertFalse(copy.isConditionalBody());
                assertEquals(gpu.device(), copy.device());
                assertEquals(List.of(GraphNodeType.KERNEL, GraphNodeType.EMPTY),
                        copy.topologicalOrder().stream().map(GraphNode::type).toList());
                assertEquals(1, copy.edges().size());
                GraphNode copied = copy.topologicalOrder().get(0);
                assertNotEquals(first.handle(), copied.handle(), "the copy's nodes are its own");
                assertEquals(copy, copied.graph());
                assertEquals(launch, copied.kernelParams().orElseThrow());

                graph.addMemset(out, 0, last);
                assertEquals(3, graph.nodes().size());
                assertEquals(2, copy.nodes().size(), "a node added to the original is not in the copy");
                copy.addMemset(out, 0, copied);
                copy.addEmpty();
                assertEquals(4, copy.nodes().size());
                assertEquals(3, graph.nodes().size(), "a node added to the copy is not in the original");
                try (CudaGraph again = copy.copy()) {
                    assertEquals(4, again.nodes().size());
                    GraphNode kernel = again.nodes().stream().filter(node -> node.type() == GraphNodeType.KERNEL)
                            .findFirst().orElseThrow();
                    assertEquals(launch, kernel.kernelParams().orElseThrow());
                }
            }
            assertTrue(graph.isOpen(), "closing the copy leaves the original open");
            try (GraphExec exec = graph.instantiate()) {
                out.memset(0xFF);
                run(exec);
                assertArrayEquals(new float[N], out.toFloatArray(), "the original's own memset ran last");
            }
        }
    }

    @Test
    void anExecutableOfTheCopyUpdatesItsKernelNodes() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); DeviceBuffer other = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            GraphNode original = graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, 1f, 0f));
            try (CudaGraph copy = graph.copy(); GraphExec exec = copy.instantiate()) {
                out.memset(0xFF);
                run(exec);
                assertArrayEquals(pattern(1f, 0f), out.toFloatArray());

                GraphNode copied = copy.nodes().get(0);
                exec.updateKernelNode(copied, KernelLaunch.of(gpu.writePattern(), CONFIG, other, N, 2f, 5f));
                other.memset(0xFF);
                run(exec);
                assertArrayEquals(pattern(2f, 5f), other.toFloatArray());

                IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class,
                        () -> exec.updateKernelNode(original, KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, 3f,
                                0f)));
                assertTrue(foreign.getMessage().endsWith("is not a node of the graph this executable was made from"),
                        foreign.getMessage());
            }
        }
    }

    @Test
    void everyOtherNodeKindIsCopiedAndKeptAlive() {
        LiveResources before = Cuda.liveResources();
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        AtomicInteger calls = new AtomicInteger();
        try (DeviceBuffer dy = TestData.upload(gpu.device(), y); DeviceBuffer out = gpu.device().allocateFloats(N)) {
            CudaGraph copy;
            try (CudaGraph graph = CudaGraph.create(); CudaGraph child = CudaGraph.create();
                    CudaEvent done = gpu.device().createEvent(CudaEvent.Option.DISABLE_TIMING);
                    DeviceBuffer dx = gpu.device().allocateFloats(N)) {
                child.addKernel(KernelLaunch.of(gpu.saxpy(), CONFIG, N, 2.0f, dx, dy));
                GraphNode poison = graph.addMemset(dx, 0xFF);
                GraphNode write = graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, dx, N, 0.5f, 3f), poison);
                GraphNode join = graph.addEmpty(write);
                GraphNode nested = graph.addChildGraph(child, join);
                GraphNode copied = graph.addMemcpy(out, dy, nested);
                GraphNode recorded = graph.addEventRecord(done, copied);
                graph.addHostFunction(calls::incrementAndGet, recorded);
                copy = graph.copy();
            }
            // The original, its child, the event and the scratch buffer are closed; the copy holds them.
            try (copy; GraphExec exec = copy.instantiate()) {
                assertEquals(List.of(GraphNodeType.MEMSET, GraphNodeType.KERNEL, GraphNodeType.EMPTY,
                        GraphNodeType.GRAPH, GraphNodeType.MEMCPY, GraphNodeType.EVENT_RECORD, GraphNodeType.HOST),
                        copy.topologicalOrder().stream().map(GraphNode::type).toList());
                assertEquals(6, copy.edges().size());
                out.memset(0xFF);
                run(exec);
                assertArrayEquals(expected(0.5f, 3f, 2.0f, y), out.toFloatArray(), TestData.seedDescription(seed));
                assertEquals(1, calls.get(), "the copied host node ran once");
            }
        }
        assertEquals(before, Cuda.liveResources(), "the copy let go of what it held when it closed");
    }

    @Test
    void aCopySavesAsAnArchiveAndLoadsAgain() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); DeviceBuffer other = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, out, N, 4f, -1f));
            byte[] archive;
            try (CudaGraph copy = graph.copy()) {
                archive = GraphArchive.save(copy, new GraphBindings().buffer("out", out));
            }
            assertEquals(1, GraphArchive.fromBytes(archive).nodeCount());
            try (CudaGraph loaded = GraphArchive.load(archive, List.of(gpu.library()),
                    new GraphBindings().buffer("out", other)); GraphExec exec = loaded.instantiate()) {
                other.memset(0xFF);
                run(exec);
                assertArrayEquals(pattern(4f, -1f), other.toFloatArray());
            }
        }
    }

    @Test
    void whatCudaDoesNotCloneIsRefusedByName() {
        try (CudaGraph graph = CudaGraph.create()) {
            ConditionalNode branch = graph.ifThen(graph.conditionalHandle(0, true));
            branch.body().addEmpty();
            IllegalStateException conditional = assertThrows(IllegalStateException.class, graph::copy);
            assertEquals("cannot copy " + graph + ": it holds a CONDITIONAL node, and CUDA does not clone a graph "
                    + "with conditional, memory allocation or memory free nodes; build or capture the graph again "
                    + "instead", conditional.getMessage());
            IllegalStateException body = assertThrows(IllegalStateException.class, branch.body()::copy);
            assertTrue(body.getMessage().endsWith(": a conditional node's body runs only inside the graph that holds "
                    + "its node, and CUDA does not clone a graph with conditional nodes"), body.getMessage());
        }
        try (CudaGraph graph = CudaGraph.create()) {
            GraphAllocation scratch = graph.addMemAlloc(ElementType.FLOAT32, N);
            graph.addMemFree(scratch.buffer(), graph.addMemset(scratch.buffer(), 0, scratch.node()));
            IllegalStateException memory = assertThrows(IllegalStateException.class, graph::copy);
            assertTrue(memory.getMessage().contains(": it holds a MEM_ALLOC node, and CUDA does not clone"),
                    memory.getMessage());
        }
        CudaGraph closed = CudaGraph.create();
        closed.close();
        IllegalStateException afterClose = assertThrows(IllegalStateException.class, closed::copy);
        assertTrue(afterClose.getMessage().endsWith("is closed"), afterClose.getMessage());
    }
}
