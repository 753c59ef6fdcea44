package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.ChildJvm;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuFixture;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.ArchiveModel.KernelNode;
import org.cudagraph4j.graph.ArchiveModel.Param;
import org.cudagraph4j.graph.GraphArchiveException.Reason;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.ShippedKernels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Graphs saved as {@link GraphArchive}s and rebuilt with new buffers, in this JVM and in a fresh
 * one, give the same bits as the original; every mismatch is refused before anything is built.
 */
@GpuTest
class GraphArchiveTest {
    private static final int N = 4099;
    private static final LaunchConfig CONFIG = LaunchConfig.of(Dim3.of(17), Dim3.of(256));
    private static final LaunchConfig ONE_WARP = LaunchConfig.of(Dim3.of(1), Dim3.of(32));

    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void theSeedLinearGraphLoadsWithNewBuffersAndGivesTheSameBits() {
        int batch = 32;
        int features = 512;
        long seed = TestData.newSeed();
        float[] w = TestData.randomFloats(features * features, seed);
        float[] b = TestData.randomFloats(features, seed + 1);
        float[] x = TestData.randomFloats(batch * features, seed + 2);
        try (ShippedKernels kernels = ShippedKernels.load(gpu.device());
                DeviceBuffer dw = TestData.upload(gpu.device(), w); DeviceBuffer db = TestData.upload(gpu.device(), b);
                DeviceBuffer dx = TestData.upload(gpu.device(), x);
                DeviceBuffer dy = gpu.device().allocateFloats(batch * features);
                DeviceBuffer w2 = TestData.upload(gpu.device(), w); DeviceBuffer b2 = TestData.upload(gpu.device(), b);
                DeviceBuffer x2 = TestData.upload(gpu.device(), x);
                DeviceBuffer y2 = gpu.device().allocateFloats(batch * features)) {
            Linear layer = new Linear(kernels, dw, db, features, features);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                layer.forward(gpu.stream(), batch, dx, dy, Linear.Mode.UNFUSED);
                graph = capture.end();
            }
            byte[] archive;
            try (graph) {
                archive = GraphArchive.of(graph, layer.bindParameters(new GraphBindings(), "")
                        .buffer("x", dx).buffer("y", dy)).toBytes();
                try (GraphExec exec = graph.instantiate()) {
                    dy.memset(0xFF);
                    exec.launch(gpu.stream());
                    gpu.stream().synchronize();
                }
                GraphBindings fresh = new GraphBindings().buffer("weight", w2).buffer("bias", b2).buffer("x", x2)
                        .buffer("y", y2);
                try (CudaGraph loaded = GraphArchive.fromBytes(archive).build(List.of(kernels.library()), fresh);
                        GraphExec exec = loaded.instantiate()) {
                    assertEquals(withoutHandles(graph.describe()), withoutHandles(loaded.describe()));
                    y2.memset(0xFF);
                    exec.launch(gpu.stream());
                    gpu.stream().synchronize();
                }
            }
            assertArrayEquals(dy.toFloatArray(), y2.toFloatArray(), TestData.seedDescription(seed));
        }
    }

    @Test
    void aSixteenLayerMlpCapturedHereRunsInAFreshJvmWithTheSameBits(@TempDir Path dir) throws Exception {
        long seed = TestData.newSeed();
        Path archive = dir.resolve("mlp.cg4j");
        Path output = dir.resolve("y.bin");
        float[] here;
        try (ArchivedMlp model = new ArchivedMlp(gpu.device(), seed)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                model.mlp.forward(gpu.stream(), ArchivedMlp.BATCH, model.x, model.y, Linear.Mode.FUSED);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                GraphArchive.save(graph, model.bindings(), archive);
                model.y.memset(0xFF);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                here = model.y.toFloatArray();
            }
        }
        ChildJvm.Result child = ChildJvm.run(List.of("--enable-native-access=ALL-UNNAMED"), ArchivedMlp.class,
                List.of(archive.toString(), Long.toString(seed), output.toString()), 120);
        assertEquals(0, child.exitCode(), child.output());
        assertTrue(child.output().contains("ARCHIVED MLP OK"), child.output());
        float[] there = new float[here.length];
        ByteBuffer.wrap(Files.readAllBytes(output)).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(there);
        assertArrayEquals(here, there, TestData.seedDescription(seed));
        for (float value : here) {
            assertTrue(Float.isFinite(value), "the replay overwrote the poisoned output");
        }
    }

    @Test
    void copiesMemsetsEventsAndProgrammaticEdgesSurviveTheTrip() {
        try (DeviceBuffer a = gpu.device().allocateFloats(N); DeviceBuffer b = gpu.device().allocateFloats(N);
                DeviceBuffer c = gpu.device().allocateFloats(N); DeviceBuffer a2 = gpu.device().allocateFloats(N);
                DeviceBuffer b2 = gpu.device().allocateFloats(N); DeviceBuffer c2 = gpu.device().allocateFloats(N);
                CudaEvent done = gpu.device().createEvent(); CudaEvent done2 = gpu.device().createEvent();
                CudaGraph graph = CudaGraph.create()) {
            GraphNode clear = graph.addMemset(b, 0);
            GraphNode write = graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, a, N, 0.5f, 1f), clear);
            GraphNode add = graph.addKernel(KernelLaunch.of(gpu.saxpy(), CONFIG, N, 2f, a, b), write);
            // A programmatic edge to a kernel that touches nothing the first one does, so the result
            // does not depend on how far they overlap.
            GraphNode mark = graph.addKernel(KernelLaunch.of(gpu.writePattern(), CONFIG, c, N, -1f, 7f));
            graph.addProgrammaticDependency(add, mark);
            GraphNode half = graph.addMemcpy(a.slice(0, N / 2), b.slice(N / 2, N / 2), add);
            graph.addEventRecord(done, graph.addEmpty(half, mark));
            GraphArchive archive = GraphArchive.fromBytes(GraphArchive.of(graph,
                    new GraphBindings().buffer("a", a).buffer("b", b).buffer("c", c).event("done", done)).toBytes());
            assertEquals(List.of("done"), archive.eventSlots());
            try (CudaGraph loaded = archive.build(List.of(gpu.library()),
                    new GraphBindings().buffer("a", a2).buffer("b", b2).buffer("c", c2).event("done", done2))) {
                assertEquals(graph.edges().stream().map(GraphEdge::programmatic).sorted().toList(),
                        loaded.edges().stream().map(GraphEdge::programmatic).sorted().toList());
                assertEquals(withoutHandles(graph.describe()), withoutHandles(loaded.describe()));
                float[] original = runTwice(graph, a, b, c);
                float[] rebuilt = runTwice(loaded, a2, b2, c2);
                assertArrayEquals(original, rebuilt);
                assertTrue(done2.isComplete());
            }
        }
    }

    private float[] runTwice(CudaGraph graph, DeviceBuffer... buffers) {
        try (GraphExec exec = graph.instantiate()) {
            for (DeviceBuffer buffer : buffers) {
                buffer.memset(0xFF);
            }
            exec.launch(gpu.stream());
            exec.launch(gpu.stream());
            gpu.stream().synchronize();
            float[] all = new float[buffers.length * N];
            for (int i = 0; i < buffers.length; i++) {
                System.arraycopy(buffers[i].toFloatArray(), 0, all, i * N, N);
            }
            return all;
        }
    }

    @Test
    void saveRefusesWhatItCannotRepresentNamingTheNodeAndParameter() {
        try (DeviceBuffer bound = gpu.device().allocateFloats(N); DeviceBuffer loose = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create(); CudaGraph child = CudaGraph.create()) {
            graph.addKernel(KernelLaunch.of(gpu.saxpy(), ONE_WARP, N, 1f, bound, loose));
            GraphArchiveException unbound = assertThrows(GraphArchiveException.class,
                    () -> GraphArchive.of(graph, new GraphBindings().buffer("x", bound)));
            assertEquals(Reason.UNBOUND_POINTER, unbound.reason());
            assertTrue(unbound.getMessage().contains(": parameter 3 of kernel saxpy, 0x"), unbound.getMessage());
            assertTrue(unbound.getMessage().endsWith("(1 bytes), lies in no bound buffer"), unbound.getMessage());

            child.addEmpty();
            try (CudaGraph nested = CudaGraph.create()) {
                nested.addChildGraph(child);
                GraphArchiveException node = assertThrows(GraphArchiveException.class,
                        () -> GraphArchive.of(nested, new GraphBindings()));
                assertEquals(Reason.UNSUPPORTED, node.reason());
                assertTrue(node.getMessage().contains("is a GRAPH node, which a graph archive does not hold"),
                        node.getMessage());
            }
            try (CudaGraph raw = CudaGraph.create()) {
                raw.addKernel(KernelLaunch.of(gpu.saxpy(), ONE_WARP, N, 1f, bound.address(), bound));
                GraphArchiveException address = assertThrows(GraphArchiveException.class,
                        () -> GraphArchive.of(raw, new GraphBindings().buffer("x", bound)));
                assertEquals(Reason.UNSUPPORTED, address.reason());
                assertTrue(address.getMessage().endsWith("inside slot 'x', given as a long: pass the DeviceBuffer, so "
                        + "that it is saved as a slot"), address.getMessage());
            }
        }
    }

    @Test
    void loadRefusesEveryMismatchBeforeBuildingAnything() {
        try (DeviceBuffer x = gpu.device().allocateFloats(N); DeviceBuffer y = gpu.device().allocateFloats(N);
                DeviceBuffer small = gpu.device().allocateFloats(N - 1); CudaGraph graph = CudaGraph.create();
                ShippedKernels shipped = ShippedKernels.load(gpu.device())) {
            CudaLibrary other = shipped.library();
            graph.addKernel(KernelLaunch.of(gpu.saxpy(), CONFIG, N, 3f, x, y));
            GraphArchive archive = GraphArchive.fromBytes(GraphArchive.save(graph,
                    GraphBindings.of(Map.of("x", x, "y", y))));
            GraphBindings both = new GraphBindings().buffer("x", x).buffer("y", y);
            LiveResources before = Cuda.liveResources();

            GraphArchiveException missing = refused(Reason.LIBRARY_MISSING, () -> archive.build(List.of(other), both));
            assertTrue(missing.getMessage().startsWith(
                    "no library given has content hash " + gpu.library().contentHash()), missing.getMessage());
            GraphArchiveException slot = refused(Reason.SLOT_MISSING,
                    () -> archive.build(List.of(gpu.library()), new GraphBindings().buffer("x", x)));
            assertEquals("buffer slot 'y' (" + 4L * N + " bytes) is not bound; bound: [x]", slot.getMessage());
            GraphArchiveException tooSmall = refused(Reason.SLOT_TOO_SMALL,
                    () -> archive.build(List.of(gpu.library()), new GraphBindings().buffer("x", x).buffer("y", small)));
            assertTrue(tooSmall.getMessage().startsWith("buffer slot 'y' held " + 4L * N + " bytes at save, but "),
                    tooSmall.getMessage());

            GraphArchive elsewhere = new GraphArchive(new ArchiveModel(archive.libraryVersion(), 12, 0,
                    "NVIDIA B200-to-be", List.of(new ArchiveModel.Library(gpu.library().contentHash(), "t")),
                    List.of(new ArchiveModel.Slot("x", 4L * N), new ArchiveModel.Slot("y", 4L * N)), List.of(),
                    archive.nodes(), archive.edges()));
            GraphArchiveException arch = refused(Reason.ARCHITECTURE,
                    () -> elsewhere.build(List.of(gpu.library()), both));
            assertTrue(arch.getMessage().startsWith("the archive was saved on NVIDIA B200-to-be (sm_120), but this is "),
                    arch.getMessage());

            KernelNode recorded = (KernelNode) archive.nodes().get(0);
            List<Param> shifted = new ArrayList<>(recorded.params());
            shifted.set(1, new Param(8, 4));
            GraphArchive relaid = new GraphArchive(new ArchiveModel(archive.libraryVersion(),
                    gpu.device().properties().major(), gpu.device().properties().minor(), "here",
                    List.of(new ArchiveModel.Library(gpu.library().contentHash(), "t")),
                    List.of(new ArchiveModel.Slot("x", 4L * N), new ArchiveModel.Slot("y", 4L * N)), List.of(),
                    List.of(new KernelNode(0, recorded.symbol(), shifted, recorded.grid(), recorded.block(),
                            recorded.sharedMemBytes(), recorded.arguments())), List.of()));
            GraphArchiveException layout = refused(Reason.PARAMETER_LAYOUT,
                    () -> relaid.build(List.of(gpu.library()), both));
            assertTrue(layout.getMessage().startsWith("node 0: kernel saxpy takes parameters [4@0, 4@4, 8@8, 8@16], the "
                    + "archive recorded [4@0, 4@8, 8@8, 8@16]"), layout.getMessage());

            assertEquals(before, Cuda.liveResources(), "a refused load leaves no graph behind");
            try (CudaGraph loaded = GraphArchive.load(archive.toBytes(), List.of(other, gpu.library()), both)) {
                assertEquals(1, loaded.nodes().size());
            }
        }
    }

    private static GraphArchiveException refused(Reason reason, org.junit.jupiter.api.function.Executable load) {
        GraphArchiveException e = assertThrows(GraphArchiveException.class, load);
        assertEquals(reason, e.reason(), e.getMessage());
        return e;
    }

    private static String withoutHandles(String drawing) {
        return drawing.replaceAll("0x[0-9A-F]{16}", "0x…");
    }
}
