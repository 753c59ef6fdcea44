package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.graph.GraphDiagram;
import org.cudagraph4j.graph.GraphNodeType;
import org.cudagraph4j.graph.GraphSnapshot;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The seed graph's diagram, as the README and the graphs guide print it, is what {@code describe()}
 * draws for the README's first example on an H200: the unfused {@link Linear} layer at the seed's
 * shape (x [2048, 512], W [640, 512], so C is 2048 x 640 and K is 512) with the seed's epilogue grid
 * {@code {256,2}}. The sgemm instance comes from the rules {@link Sgemm#choose} applies, on the
 * shipped manifest and tuning table with the H200's 132 multiprocessors, so no GPU is needed;
 * {@link ReadmeSeedDiagramGpuTest} checks on a device that {@code describe()} of the captured layer
 * draws this model. Node and function handles differ from run to run: both sides compare them as
 * one placeholder of the same width. Tagged {@code build}: it reads the checkout's documents.
 */
@Tag("build")
class ReadmeSeedDiagramTest {
    /** The seed's rows (M), input features (K) and output features (N). */
    static final int BATCH = 2048;
    static final int IN_FEATURES = 512;
    static final int OUT_FEATURES = 640;
    /** The seed's launch shape of its second node. */
    static final Dim3 EPILOGUE_GRID = Dim3.of(256, 2);

    private static final int H200_MULTIPROCESSORS = 132;
    /** A device address as cudaMalloc returns them: 256-byte aligned. */
    private static final long ALLOCATION = 0x7f3a_0000_0000L;
    private static final String HANDLE = "0x" + "?".repeat(16);
    private static final Pattern HANDLE_VALUE = Pattern.compile("0x[0-9A-F]{16}");
    /** A fenced block without a language whose first line is the diagram's frame. */
    private static final Pattern DIAGRAM = Pattern.compile("```\\n(┌.*?)```", Pattern.DOTALL);

    /**
     * The seed graph as {@code describe()} draws it: the sgemm node of {@code gemm}, an arrow, the
     * bias+ReLU node at {@link #EPILOGUE_GRID}, handles as the placeholder.
     */
    static String seedDiagram(GemmConfig gemm, String epilogueKernel) {
        GraphSnapshot graph = new GraphSnapshot(List.of(
                new GraphSnapshot.Node(0, 0, GraphNodeType.KERNEL, List.of(
                        new GraphSnapshot.Field("Kernel", gemm.kernelName()),
                        new GraphSnapshot.Field("", LaunchConfig.shape(gemm.grid(BATCH, OUT_FEATURES),
                                Dim3.of(gemm.threads()), gemm.sharedMemBytes())),
                        new GraphSnapshot.Field("Node handle", HANDLE),
                        new GraphSnapshot.Field("Func handle", HANDLE))),
                new GraphSnapshot.Node(1, 1, GraphNodeType.KERNEL, List.of(
                        new GraphSnapshot.Field("Kernel", epilogueKernel),
                        new GraphSnapshot.Field("", LaunchConfig.shape(EPILOGUE_GRID, BiasRelu.BLOCK, 0)),
                        new GraphSnapshot.Field("Node handle", HANDLE),
                        new GraphSnapshot.Field("Func handle", HANDLE)))),
                List.of(new GraphSnapshot.Edge(0, 1)));
        return GraphDiagram.draw(graph);
    }

    /** {@code diagram} with every handle replaced by the placeholder. */
    static String masked(String diagram) {
        return HANDLE_VALUE.matcher(diagram).replaceAll(HANDLE);
    }

    /** The sgemm instance the seed's first node takes on an H200, by the rules of {@link Sgemm#choose}. */
    private static GemmConfig h200SeedGemm() {
        KernelManifest manifest = KernelManifest.load();
        List<GemmConfig> configs = manifest.gemmConfigs(KernelManifestTest.H200_IMAGE);
        SgemmTuning tuning = SgemmTuning.load();
        SgemmTuning.Entry entry = tuning.nearest(BATCH, OUT_FEATURES, IN_FEATURES);
        assertNull(entry, "the seed is not skinny: no GEMV or split-K instance from the tuning table");
        assertNull(Sgemm.tensorCorePlan(configs, tuning, H200_MULTIPROCESSORS, MathMode.FP32, entry, BATCH,
                OUT_FEATURES, IN_FEATURES, true, GemmConfig.Epilogue.LINEAR_COMBINATION, ALLOCATION, ALLOCATION),
                "K = 512 is below the K from which FP32 takes the tensor cores");
        return Sgemm.chooseTiled(configs, H200_MULTIPROCESSORS, BATCH, OUT_FEATURES, IN_FEATURES, true,
                GemmConfig.Epilogue.LINEAR_COMBINATION, ALLOCATION);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"README.md", "src/site/markdown/graphs.md"})
    void theDocumentsSeedDiagramIsWhatDescribeDrawsForTheFirstExampleOnAnH200(String document) throws IOException {
        Matcher block = DIAGRAM.matcher(Files.readString(Path.of(document)));
        assertTrue(block.find(), document + " shows the seed graph's diagram");
        String shown = block.group(1);
        assertFalse(block.find(), document + " shows one diagram");

        GemmConfig gemm = h200SeedGemm();
        assertEquals("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align4_lincomb", gemm.kernelName(),
                "the seed tile, reading B [n, k] 16 bytes at a time, since K = 512 is a multiple of 4");
        assertEquals(seedDiagram(gemm, KernelManifest.load().epilogueKernel()), masked(shown),
                document + " draws the seed graph as describe() does");
    }
}
