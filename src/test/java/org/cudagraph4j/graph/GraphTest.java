package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.cudagraph4j.CaptureStatus;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuFixture;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.TestData;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.StreamCaptureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@GpuTest
class GraphTest {
    private static final int N = 10_007;

    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    private static final LaunchConfig CONFIG = LaunchConfig.of(Dim3.of(40), Dim3.of(256));

    /** y = a*x + y with x[i] = i*scale + offset, as the captured pair computes it. */
    private static float[] expected(float scale, float offset, float a, float[] y) {
        float[] result = new float[y.length];
        for (int i = 0; i < y.length; i++) {
            result[i] = a * (i * scale + offset) + y[i];
        }
        return result;
    }

    @ParameterizedTest
    @EnumSource(CaptureMode.class)
    void everyCaptureModeRecordsAGraphThatComputesTheSameResult(CaptureMode mode) {
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N)) {
            dx.memset(0xFF);
            dy.copyFrom(y);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), mode)) {
                assertEquals(CaptureStatus.ACTIVE, gpu.stream().captureStatus());
                assertTrue(gpu.stream().captureId().isPresent());
                gpu.writePattern().launch(gpu.stream(), CONFIG, dx, N, 0.5f, 1.25f);
                gpu.saxpy().launch(gpu.stream(), CONFIG, N, 3.0f, dx, dy);
                graph = capture.end();
            }
            assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(2, graph.nodes().size());
                assertEquals(1, graph.edges().size());
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                assertArrayEquals(expected(0.5f, 1.25f, 3.0f, y), dy.toFloatArray(), TestData.seedDescription(seed));
            }
        }
    }

    @Test
    void synchronizingTheCapturingStreamIsATypedErrorAndTheStreamRecovers() {
        StreamCaptureException e;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            e = assertThrows(StreamCaptureException.class, gpu.stream()::synchronize);
        }
        assertTrue(e.error().isCaptureError(), e.getMessage());
        assertEquals("cudaStreamSynchronize", e.function());
        assertTrue(e.capture().contains("GLOBAL capture on CudaStream"), e.getMessage());
        assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
        assertStreamWorks();
    }

    @Test
    void allocatingDuringAGlobalCaptureIsATypedErrorAndEndReportsTheInvalidation() {
        StreamCaptureException refused;
        StreamCaptureException ended;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            refused = assertThrows(StreamCaptureException.class, () -> gpu.device().allocateFloats(16));
            ended = assertThrows(StreamCaptureException.class, capture::end);
        }
        assertEquals(CudaError.STREAM_CAPTURE_UNSUPPORTED, refused.error(), refused.getMessage());
        assertEquals("cudaMalloc", refused.function());
        assertEquals(CudaError.STREAM_CAPTURE_INVALIDATED, ended.error(), ended.getMessage());
        assertStreamWorks();
    }

    @Test
    void relaxedCaptureAllowsAllocation() {
        try (DeviceBuffer out = gpu.device().allocateFloats(16)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.RELAXED);
                    DeviceBuffer scratch = gpu.device().allocateFloats(16)) {
                gpu.writePattern().launch(gpu.stream(), CONFIG, scratch, 16, 1f, 0f);
                // out += scratch, by a kernel: initcheck checks a graph's memcpy source at launch,
                // before the kernel upstream has written it, so a copy node would be reported.
                gpu.saxpy().launch(gpu.stream(), CONFIG, 16, 1f, scratch, out);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(2, graph.nodes().size());
                out.memset(0);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                assertEquals(15f, out.toFloatArray()[15], "the graph keeps the scratch buffer it captured");
            }
        }
    }

    @Test
    void forkAndJoinAcrossStreamsInOneCapture() {
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (CudaStream side = gpu.device().createStream();
                CudaEvent fork = gpu.device().createEvent(CudaEvent.Option.DISABLE_TIMING);
                CudaEvent join = gpu.device().createEvent(CudaEvent.Option.DISABLE_TIMING);
                DeviceBuffer a = gpu.device().allocateFloats(N); DeviceBuffer b = gpu.device().allocateFloats(N);
                DeviceBuffer dy = gpu.device().allocateFloats(N)) {
            dy.copyFrom(y);
            a.memset(0xFF);
            b.memset(0xFF);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                fork.record(gpu.stream());
                side.waitFor(fork);
                assertEquals(CaptureStatus.ACTIVE, side.captureStatus());
                gpu.writePattern().launch(side, CONFIG, a, N, 1f, 0f);
                gpu.writePattern().launch(gpu.stream(), CONFIG, b, N, 2f, 0f);
                join.record(side);
                gpu.stream().waitFor(join);
                gpu.saxpy().launch(gpu.stream(), CONFIG, N, 1f, a, dy);
                gpu.saxpy().launch(gpu.stream(), CONFIG, N, 1f, b, dy);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(4, graph.nodes().size());
                List<GraphNode> roots = graph.nodes().stream().filter(n -> n.dependencies().isEmpty()).toList();
                assertEquals(2, roots.size(), "the two writes run in parallel");
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                float[] expected = new float[N];
                for (int i = 0; i < N; i++) {
                    expected[i] = y[i] + i * 1f + i * 2f;
                }
                assertArrayEquals(expected, dy.toFloatArray(), TestData.seedDescription(seed));
            }
        }
    }

    @Test
    void explicitlyBuiltGraphWithEveryNodeKind() {
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (CudaGraph graph = CudaGraph.create(); CudaGraph child = CudaGraph.create();
                CudaEvent done = gpu.device().createEvent();
                DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N);
                DeviceBuffer out = gpu.device().allocateFloats(N)) {
            dy.copyFrom(y);
            out.memset(0);
            child.addKernel(KernelLaunch.of(gpu.saxpy(), CONFIG, N, 2.0f, dx, dy));

            GraphNode poison = graph.addMemset(dx, 0xFF);
            GraphNode write = graph.addKernel(
                    KernelLaunch.of(gpu.writePattern(), CONFIG, dx, N, 0.5f, 3f), poison);
            GraphNode join = graph.addEmpty(write);
            GraphNode nested = graph.addChildGraph(child, join);
            GraphNode copy = graph.addMemcpy(out, dy, nested);
            GraphNode recorded = graph.addEventRecord(done, copy);

            assertEquals(List.of(GraphNodeType.MEMSET, GraphNodeType.KERNEL, GraphNodeType.EMPTY, GraphNodeType.GRAPH,
                    GraphNodeType.MEMCPY, GraphNodeType.EVENT_RECORD),
                    graph.nodes().stream().map(GraphNode::type).toList());
            assertEquals(List.of(copy), recorded.dependencies());
            assertEquals(List.of(write), poison.dependents());
            assertEquals(5, graph.edges().size());
            KernelNodeInfo info = write.kernelInfo();
            assertEquals("write_pattern", info.name());
            assertEquals("<<<40,256,0>>>", info.shape());
            assertEquals(1, write.topologicalIndex());

            try (GraphExec exec = graph.instantiate(gpu.stream(), InstantiateFlag.UPLOAD)) {
                exec.launch(gpu.stream());
                done.synchronize();
                assertArrayEquals(expected(0.5f, 3f, 2.0f, y), out.toFloatArray(), TestData.seedDescription(seed));
            }
        }
    }

    @Test
    void optionsInstantiateWithAnUploadAndFlagsAndTheExecutableComputesTheSame() {
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N);
                CudaGraph graph = pair(dx, dy, 2.0f)) {
            for (InstantiateOptions options : List.of(InstantiateOptions.defaults(),
                    InstantiateOptions.defaults().withUpload(gpu.stream()),
                    InstantiateOptions.defaults().withUpload(gpu.stream()).with(InstantiateFlag.USE_NODE_PRIORITY))) {
                try (GraphExec exec = graph.instantiate(options)) {
                    dy.copyFrom(y);
                    exec.launch(gpu.stream());
                    gpu.stream().synchronize();
                    assertArrayEquals(expected(1f, 0.5f, 2.0f, y), dy.toFloatArray(),
                            options + " " + TestData.seedDescription(seed));
                }
            }
        }
    }

    @Test
    void wholeGraphUpdateTakesTheNewParameters() {
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N);
                CudaGraph first = pair(dx, dy, 2.0f); CudaGraph second = pair(dx, dy, -3.0f);
                GraphExec exec = first.instantiate()) {
            exec.update(second);
            dy.copyFrom(y);
            exec.launch(gpu.stream());
            gpu.stream().synchronize();
            assertArrayEquals(expected(1f, 0.5f, -3.0f, y), dy.toFloatArray(), TestData.seedDescription(seed));
        }
    }

    @Test
    void updateWithAnotherTopologyNamesTheResultKind() {
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N);
                CudaGraph first = pair(dx, dy, 2.0f); CudaGraph bigger = pair(dx, dy, 2.0f);
                GraphExec exec = first.instantiate()) {
            bigger.addEmpty();
            GraphUpdateException e = assertThrows(GraphUpdateException.class, () -> exec.update(bigger));
            assertEquals(UpdateResult.TOPOLOGY_CHANGED, e.result(), e.getMessage());
            assertEquals(CudaError.GRAPH_EXEC_UPDATE_FAILURE, e.error());
            assertTrue(e.getMessage().contains("cudaGraphExecUpdateErrorTopologyChanged"), e.getMessage());
            // The refused update left the executable as it was. y is written first: initcheck found
            // this launch reading memory nothing had written when it went unchecked.
            long seed = TestData.newSeed();
            float[] y = TestData.randomFloats(N, seed);
            dy.copyFrom(y);
            exec.launch(gpu.stream());
            gpu.stream().synchronize();
            float[] result = dy.toFloatArray();
            for (int i = 0; i < N; i++) {
                assertEquals(2.0f * (i + 0.5f) + y[i], result[i], 1e-5f * Math.abs(2.0f * (i + 0.5f) + y[i]),
                        TestData.seedDescription(seed) + ", element " + i);
            }
        }
    }

    @Test
    void singleKernelNodeUpdateChangesTheExecutableButNotTheTemplate() {
        long seed = TestData.newSeed();
        float[] y = TestData.randomFloats(N, seed);
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N);
                CudaGraph graph = pair(dx, dy, 2.0f); GraphExec exec = graph.instantiate()) {
            GraphNode axpy = graph.nodes().get(1);
            KernelLaunch original = axpy.kernelParams().orElseThrow();
            exec.updateKernelNode(axpy, original.withArguments(N, 5.0f, dx, dy));
            GraphNode write = graph.nodes().get(0);
            exec.updateKernelNode(write,
                    write.kernelParams().orElseThrow().withConfig(LaunchConfig.of(Dim3.of(3), Dim3.of(128))));

            dy.copyFrom(y);
            exec.launch(gpu.stream());
            gpu.stream().synchronize();
            assertArrayEquals(expected(1f, 0.5f, 5.0f, y), dy.toFloatArray(), TestData.seedDescription(seed));

            try (GraphExec fresh = graph.instantiate()) {
                dy.copyFrom(y);
                fresh.launch(gpu.stream());
                gpu.stream().synchronize();
                assertArrayEquals(expected(1f, 0.5f, 2.0f, y), dy.toFloatArray(), "the template still has a = 2");
            }
            assertEquals("<<<40,256,0>>>", write.kernelInfo().shape(), "the template's shape is unchanged");
        }
    }

    @Test
    void describeDrawsACapturedTwoKernelGraph(@TempDir Path dir) throws Exception {
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL)) {
                gpu.writePattern().launch(gpu.stream(), LaunchConfig.of(Dim3.of(32, 20), Dim3.of(64), 19200), dx, N,
                        1f, 0f);
                gpu.saxpy().launch(gpu.stream(), LaunchConfig.of(Dim3.of(256, 2), Dim3.of(8, 32), 0), N, 1f, dx, dy);
                graph = capture.end();
            }
            try (graph) {
                String diagram = graph.describe();
                assertTrue(diagram.contains("NODE 0: KERNEL"), diagram);
                assertTrue(diagram.contains("NODE 1: KERNEL"), diagram);
                assertTrue(diagram.contains("Kernel:     write_pattern"), diagram);
                assertTrue(diagram.contains("<<<{32,20},64,19200>>>"), diagram);
                assertTrue(diagram.contains("<<<{256,2},{8,32},0>>>"), diagram);
                assertTrue(diagram.contains("▼"), diagram);
                assertTrue(diagram.matches("(?s).*Func handle: 0x[0-9A-F]{16}.*"), diagram);
                assertEquals(GraphDiagram.WIDTH, diagram.lines().mapToInt(String::length).max().orElseThrow());

                assertTrue(graph.toDot().contains("n0 -> n1;"), graph.toDot());
                Path dot = dir.resolve("graph.dot");
                graph.debugDotPrint(dot, true);
                String runtimeDot = Files.readString(dot);
                assertTrue(runtimeDot.startsWith("digraph"), runtimeDot);
                assertTrue(runtimeDot.contains("write_pattern"), runtimeDot);
            }
        }
    }

    @Test
    void executableKeepsItsLibraryAndBuffersAliveAfterTheyAreClosed() {
        CudaLibrary ownLibrary = TestData.testKernels();
        DeviceBuffer dx = gpu.device().allocateFloats(N);
        DeviceBuffer dy = gpu.device().allocateFloats(N);
        // Poisoned first, so the check below proves the kernel wrote dx. It also keeps initcheck
        // quiet: the sanitizer checks a graph's memcpy source when the graph is launched, before
        // the kernel node upstream of it has run, and would call a fresh dx uninitialized.
        dx.memset(0xFF);
        CudaGraph graph = CudaGraph.create();
        graph.addKernel(KernelLaunch.of(ownLibrary.kernel("write_pattern"), CONFIG, dx, N, 1f, 7f));
        graph.addMemcpy(dy, dx, graph.nodes().get(0));
        try (GraphExec exec = graph.instantiate()) {
            graph.close();
            ownLibrary.close();
            dx.close();
            assertFalse(dx.isOpen());
            exec.launch(gpu.stream());
            gpu.stream().synchronize();
            float[] result = dy.toFloatArray();
            for (int i = 0; i < N; i++) {
                assertEquals(i + 7f, result[i], "element " + i);
            }
        } finally {
            dy.close();
        }
    }

    @Test
    void misuseIsNamed() {
        try (CudaGraph a = CudaGraph.create(); CudaGraph b = CudaGraph.create()) {
            GraphNode inA = a.addEmpty();
            IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class, () -> b.addEmpty(inA));
            assertTrue(foreign.getMessage().endsWith("belongs to another graph"));
            IllegalStateException notKernel = assertThrows(IllegalStateException.class, inA::kernelInfo);
            assertEquals("node 0 is a EMPTY node, not KERNEL", notKernel.getMessage());
            StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL);
            capture.end().close();
            assertThrows(IllegalStateException.class, capture::end);
            IllegalArgumentException wrongArgs = assertThrows(IllegalArgumentException.class, () -> a.addKernel(
                    KernelLaunch.of(gpu.saxpy(), LaunchConfig.of(Dim3.of(1), Dim3.of(1)), N, 2.0)));
            assertTrue(wrongArgs.getMessage().startsWith("kernel saxpy takes 4 parameters"), wrongArgs.getMessage());
        }
    }

    /**
     * A built kernel node takes programmatic dependent launch as a programmatic edge from the kernel
     * node before it, as a capture does, and records its configuration without it, as a captured
     * node does. An executable keeps a node's launch attributes: an update that would change them is
     * refused by name. (The graph is not launched: saxpy does not wait for the node before it on the
     * device.)
     */
    @Test
    void aKernelNodeKeepsItsLaunchAttributesAndAnUpdateCannotChangeThem() {
        try (DeviceBuffer dx = gpu.device().allocateFloats(N); DeviceBuffer dy = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            KernelLaunch axpy = KernelLaunch.of(gpu.saxpy(), CONFIG, N, 2f, dx, dy);
            GraphNode node = graph.addKernel(axpy);
            GraphNode early = graph.addKernel(axpy.withConfig(CONFIG.withProgrammaticDependentLaunch()), node);
            assertEquals(List.of(new GraphEdge(node, early, true)), graph.edges());
            assertEquals(CONFIG, early.kernelParams().orElseThrow().config(), "the edge holds it, not the node");
            try (GraphExec exec = graph.instantiate()) {
                IllegalArgumentException cooperative = assertThrows(IllegalArgumentException.class,
                        () -> exec.updateKernelNode(node, axpy.withConfig(CONFIG.withCooperativeLaunch())));
                assertEquals("updateKernelNode cannot change the launch attributes of node " + node.id()
                        + " (no cluster shape, not cooperative) to cooperative launch: an executable keeps a node's"
                        + " cluster shape and cooperative launch as they were instantiated; change the graph and"
                        + " instantiate it again", cooperative.getMessage());
                exec.updateKernelNode(early, axpy.withArguments(N, 3f, dx, dy));
                exec.updateKernelNode(early, axpy.withConfig(CONFIG.withProgrammaticDependentLaunch()));
            }
            assertEquals(List.of(new GraphEdge(node, early, true)), graph.edges(), "updates leave the edges");
        }
    }

    /** write x[i] = i + 0.5; then y = a*x + y. */
    private CudaGraph pair(DeviceBuffer dx, DeviceBuffer dy, float a) {
        CudaGraph graph = CudaGraph.create();
        GraphNode write = graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, dx, N, 1f, 0.5f));
        graph.addKernel(KernelLaunch.of(gpu.saxpy(), CONFIG, N, a, dx, dy), write);
        return graph;
    }

    private void assertStreamWorks() {
        try (DeviceBuffer out = gpu.device().allocateFloats(64)) {
            out.memset(0xFF);
            gpu.writePattern().launch(gpu.stream(), LaunchConfig.of(Dim3.of(1), Dim3.of(64)), out, 64, 1f, 0f);
            gpu.stream().synchronize();
            assertEquals(63f, out.toFloatArray()[63]);
        }
    }
}
