package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The split-K instances, the workspace they reduce through, and {@link Mlp}, which runs on them. */
@GpuTest
class SplitKTest {
    /** Runs a determinism check compares: fewer under a sanitizer, which checks every run anyway. */
    private static final int REPEATS = TestData.underSanitizer() ? 3 : 20;

    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    private static List<GemmConfig> splitConfigs() {
        // The tensor-core split-K instances have a test of their own (TensorCoreSgemmTest).
        List<GemmConfig> configs = gpu.kernels().gemmConfigs().stream()
                .filter(c -> c.splitK() && c.math() == MathMode.SIMT_FP32).toList();
        assertFalse(configs.isEmpty(), "the kernels ship split-K instances");
        return configs;
    }

    /** Skinny and odd shapes, primes included, K up to 4097; B both ways. */
    static Stream<Arguments> shapes() {
        int[][] shapes = {{1, 1, 1}, {1, 512, 512}, {3, 5, 4097}, {8, 1000, 17}, {13, 257, 1031}, {32, 512, 512},
                {33, 97, 4093}, {64, 129, 300}, {127, 61, 2048}, {256, 1024, 1024}, {2, 4097, 33}};
        // Under a sanitizer: odd edges, a partial tile in every dimension, and one inference shape.
        int[][] sanitized = {{1, 1, 1}, {13, 257, 1031}, {33, 97, 300}, {32, 512, 512}};
        return Reference.withBothLayouts(TestData.underSanitizer() ? sanitized : shapes);
    }

    @ParameterizedTest(name = "m={0} n={1} k={2} bTransposed={3}")
    @MethodSource("shapes")
    void everySplitMatchesTheDoubleReference(int m, int n, int k, boolean bTransposed) {
        int kTiles = (k + 15) / 16;
        int[] slices = IntStream.of(1, 2, 3, 7, 16, kTiles).filter(s -> s <= kTiles).distinct().toArray();
        try (GemmCase problem = new GemmCase(gpu.device(), m, n, k, bTransposed);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), m, n, kTiles)) {
            int checked = 0;
            for (GemmConfig instance : splitConfigs()) {
                if (instance.bTransposed() != bTransposed) {
                    continue;
                }
                for (int s : slices) {
                    problem.check(gpu.kernels(), gpu.stream(), instance.withSlices(s), workspace);
                    checked++;
                }
            }
            assertEquals(12 * slices.length, checked,
                    "three tiles, each with both reductions and both epilogues, every slice count");
        }
    }

    @Test
    void aSplitResultIsTheSameBitsEveryRunAndInAGraphReplay() {
        int m = 32;
        int n = 512;
        int k = 4093;
        long seed = TestData.newSeed();
        float[] bias = TestData.randomFloats(n, seed + 2);
        List<GemmConfig> configs = gpu.kernels().gemmConfigs().stream()
                .filter(c -> c.splitK() && c.math() == MathMode.SIMT_FP32 && c.bTransposed()
                        && c.epilogue() == GemmConfig.Epilogue.BIAS_RELU && c.tileM() == 32)
                .map(c -> c.withSlices(16)).toList();
        assertEquals(2, configs.size(), "the 32x32 tile with each reduction: " + configs);
        for (GemmConfig config : configs) {
            assertSameBitsEveryRun(config, m, n, k, seed, bias);
        }
    }

    private static void assertSameBitsEveryRun(GemmConfig config, int m, int n, int k, long seed, float[] bias) {
        try (DeviceBuffer a = gpu.upload(TestData.randomFloats(m * k, seed));
                DeviceBuffer b = gpu.upload(TestData.randomFloats(n * k, seed + 1));
                DeviceBuffer dbias = gpu.upload(bias);
                DeviceBuffer d = gpu.allocateFloats(m * n);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), m, n, 16)) {
            GemmOperands operands = GemmOperands.biasRelu(m, n, k, a, b, true, dbias, d);
            d.memset(0xFF);
            gpu.sgemm().multiply(gpu.stream(), config, operands, workspace);
            gpu.stream().synchronize();
            int[] first = bits(d.toFloatArray());
            for (int run = 0; run < REPEATS; run++) {
                d.memset(0xFF);
                gpu.sgemm().multiply(gpu.stream(), config, operands, workspace);
                gpu.stream().synchronize();
                assertArrayEquals(first, bits(d.toFloatArray()),
                        config.kernelName() + " run " + run + " " + TestData.seedDescription(seed));
            }
            assertGraphReplaysGive(first, () -> {
                for (int launch = 0; launch < 4; launch++) {
                    gpu.sgemm().multiply(gpu.stream(), config, operands, workspace);
                }
            }, d, 5, "4 launches");
        }
    }

    @Test
    void theHeuristicSplitsSkinnyProblemsAndLeavesLargeOnesWhole() {
        try (DeviceBuffer b = gpu.allocateFloats(1);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), 256, 4096, 32)) {
            // The tuning table's batch-1 entry at width 512: the 16x64 tile, K split in 16 on 132 SMs. (K = 511: at
            // 512 a GEMV instance won, which needs K a multiple of 4; GemvTest covers it.)
            GemmConfig skinny = gpu.sgemm().choose(1, 512, 511, true, GemmConfig.Epilogue.BIAS_RELU, b, workspace);
            assertTrue(skinny.splitK() && skinny.tileM() == 16 && skinny.tileN() == 64, skinny.toString());
            assertTrue(skinny.slices() > 1, skinny.toString());
            GemmConfig large = gpu.sgemm().choose(4096, 4096, 4096, true, GemmConfig.Epilogue.BIAS_RELU, b,
                    workspace);
            assertFalse(large.splitK(), large.toString());
            GemmConfig noWorkspace = gpu.sgemm().choose(1, 512, 511, true, GemmConfig.Epilogue.BIAS_RELU, b);
            assertFalse(noWorkspace.splitK(), "without a workspace nothing splits");
            // Where the table measured one slice fastest, that instance is chosen even without a workspace.
            GemmConfig unsplitBest = gpu.sgemm().tuned(128, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU);
            if (unsplitBest.slices() == 1) {
                assertEquals(unsplitBest,
                        gpu.sgemm().choose(128, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU, b));
            }
            try (GemmWorkspace tiny = GemmWorkspace.allocate(gpu.device(), 1, 512, 1)) {
                assertEquals(1, gpu.sgemm().choose(1, 512, 511, true, GemmConfig.Epilogue.BIAS_RELU, b, tiny)
                        .slices(), "a workspace too small for partials gets one slice");
            }
        }
    }

    @Test
    void misuseIsRefusedBeforeAnythingRuns() {
        GemmConfig split = splitConfigs().stream().filter(c -> c.epilogue() == GemmConfig.Epilogue.LINEAR_COMBINATION)
                .findFirst().orElseThrow();
        try (DeviceBuffer a = gpu.allocateFloats(64 * 64); DeviceBuffer b = gpu.allocateFloats(64 * 64);
                DeviceBuffer c = gpu.allocateFloats(64 * 64);
                GemmWorkspace small = GemmWorkspace.allocate(gpu.device(), 8, 8, 2)) {
            GemmOperands operands = GemmOperands.linearCombination(64, 64, 64, 1f, a, b, split.bTransposed(), 0f, c);
            IllegalArgumentException noWorkspace = assertThrows(IllegalArgumentException.class,
                    () -> gpu.sgemm().multiply(gpu.stream(), split.withSlices(2), operands, null));
            assertTrue(noWorkspace.getMessage().contains("with 2 slices needs a GemmWorkspace"), noWorkspace.getMessage());
            IllegalArgumentException tooMany = assertThrows(IllegalArgumentException.class,
                    () -> gpu.sgemm().multiply(gpu.stream(), split.withSlices(5), operands, small));
            assertTrue(tooMany.getMessage().contains("more than k=64 has k-tiles (4)"), tooMany.getMessage());
            IllegalArgumentException tooSmall = assertThrows(IllegalArgumentException.class,
                    () -> gpu.sgemm().multiply(gpu.stream(), split.withSlices(2), operands, small));
            assertTrue(tooSmall.getMessage().contains("workspace is too small"), tooSmall.getMessage());
        }
        // One slice needs no workspace, so every shipped instance runs through the plain overload.
        try (DeviceBuffer a = gpu.upload(ones(64 * 64)); DeviceBuffer b = gpu.upload(ones(64 * 64));
                DeviceBuffer c = gpu.allocateFloats(64 * 64)) {
            c.memset(0xFF);
            gpu.sgemm().multiply(gpu.stream(), split,
                    GemmOperands.linearCombination(64, 64, 64, 1f, a, b, split.bTransposed(), 0f, c), null);
            gpu.stream().synchronize();
            assertEquals(64f, c.toFloatArray()[4095]);
        }
        GemmWorkspace closed = GemmWorkspace.allocate(gpu.device(), 64, 64, 2);
        closed.close();
        try (DeviceBuffer a = gpu.allocateFloats(64 * 64); DeviceBuffer b = gpu.allocateFloats(64 * 64);
                DeviceBuffer c = gpu.allocateFloats(64 * 64)) {
            GemmOperands operands = GemmOperands.linearCombination(64, 64, 64, 1f, a, b, split.bTransposed(), 0f, c);
            assertThrows(IllegalStateException.class,
                    () -> gpu.sgemm().multiply(gpu.stream(), split.withSlices(2), operands, closed));
            // The device and the kernels are still healthy.
            float[] ones = new float[64 * 64];
            java.util.Arrays.fill(ones, 1f);
            a.copyFrom(ones);
            b.copyFrom(ones);
            try (GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), 64, 64, 2)) {
                gpu.sgemm().multiply(gpu.stream(), split.withSlices(2), operands, workspace);
            }
            gpu.stream().synchronize();
            assertEquals(64f, c.toFloatArray()[4095]);
        }
    }

    @ParameterizedTest(name = "batch={0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 7, 32, 100})
    void anMlpMatchesTheDoubleReferenceFusedAndUnfusedAndInAGraph(int batch) {
        int[] widths = {96, 512, 257, 512, 64};
        long seed = TestData.newSeed();
        List<DeviceBuffer> owned = new ArrayList<>();
        List<Linear> layers = new ArrayList<>();
        List<float[]> weights = new ArrayList<>();
        List<float[]> biases = new ArrayList<>();
        try {
            for (int i = 0; i + 1 < widths.length; i++) {
                // Scaled so that activations stay near 1 through the stack.
                float[] w = scale(TestData.randomFloats(widths[i + 1] * widths[i], seed + 2 * i),
                        (float) (1 / Math.sqrt(widths[i])));
                float[] bias = TestData.randomFloats(widths[i + 1], seed + 2 * i + 1);
                DeviceBuffer dw = gpu.upload(w);
                owned.add(dw);
                DeviceBuffer dbias = gpu.upload(bias);
                owned.add(dbias);
                weights.add(w);
                biases.add(bias);
                layers.add(new Linear(gpu.kernels(), dw, dbias, widths[i], widths[i + 1]));
            }
            float[] x = TestData.randomFloats(batch * widths[0], seed + 100);
            double[] expected = toDouble(x);
            for (int i = 0; i < layers.size(); i++) {
                float[] input = toFloat(expected);
                expected = Reference.biasRelu(Reference.gemm(batch, widths[i + 1], widths[i], 1, input,
                        weights.get(i), true, 0, null), batch, widths[i + 1], biases.get(i));
            }
            int out = widths[widths.length - 1];
            try (Mlp mlp = new Mlp(gpu.kernels(), layers, 128); DeviceBuffer dx = gpu.upload(x);
                    DeviceBuffer dy = gpu.allocateFloats(batch * out)) {
                for (Linear.Mode mode : Linear.Mode.values()) {
                    dy.memset(0xFF);
                    mlp.forward(gpu.stream(), batch, dx, dy, mode);
                    gpu.stream().synchronize();
                    Reference.assertClose(expected, dy.toFloatArray(), mode + " " + TestData.seedDescription(seed));
                }
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL)) {
                    mlp.forward(gpu.stream(), batch, dx, dy, Linear.Mode.FUSED);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    assertEquals(layers.size(), graph.nodes().size(), "one kernel per fused layer");
                    dy.memset(0xFF);
                    exec.launch(gpu.stream());
                    gpu.stream().synchronize();
                    Reference.assertClose(expected, dy.toFloatArray(), "graph " + TestData.seedDescription(seed));
                }
            }
        } finally {
            owned.forEach(DeviceBuffer::close);
        }
    }

    /**
     * Each layer reads what the one before wrote: a layer launched early that did not wait for its
     * predecessor would read stale activations and change the bits.
     */
    @Test
    void programmaticDependentLaunchGivesTheSameBitsEagerAndInAGraph() {
        int width = 512;
        int batch = 32;
        long seed = TestData.newSeed();
        List<DeviceBuffer> owned = new ArrayList<>();
        List<Linear> layers = new ArrayList<>();
        try {
            for (int i = 0; i < 16; i++) {
                DeviceBuffer w = gpu.upload(scale(TestData.randomFloats(width * width, seed + 2 * i),
                        (float) (1 / Math.sqrt(width))));
                DeviceBuffer bias = gpu.upload(TestData.randomFloats(width, seed + 2 * i + 1));
                owned.add(w);
                owned.add(bias);
                layers.add(new Linear(gpu.kernels(), w, bias, width, width));
            }
            List<Linear> programmatic = layers.stream().map(Linear::withProgrammaticDependentLaunch).toList();
            try (Mlp ordered = new Mlp(gpu.kernels(), layers, batch);
                    Mlp overlapped = new Mlp(gpu.kernels(), programmatic, batch);
                    DeviceBuffer x = gpu.upload(TestData.randomFloats(batch * width, seed + 99));
                    DeviceBuffer y = gpu.allocateFloats(batch * width)) {
                for (Linear.Mode mode : Linear.Mode.values()) {
                    y.memset(0xFF);
                    ordered.forward(gpu.stream(), batch, x, y, mode);
                    gpu.stream().synchronize();
                    int[] expected = bits(y.toFloatArray());
                    for (int run = 0; run < REPEATS; run++) {
                        y.memset(0xFF);
                        overlapped.forward(gpu.stream(), batch, x, y, mode);
                        gpu.stream().synchronize();
                        assertArrayEquals(expected, bits(y.toFloatArray()), mode + " run " + run + " "
                                + TestData.seedDescription(seed));
                    }
                    assertGraphReplaysGive(expected, () -> overlapped.forward(gpu.stream(), batch, x, y, mode), y, 20,
                            mode.toString());
                }
            }
        } finally {
            owned.forEach(DeviceBuffer::close);
        }
    }

    /**
     * The owned workspace is sized from the tuning table's plans, so every planned split fits; where
     * the table says a GEMV instance won, the layers run that instead.
     */
    @Test
    void anMlpRunsWhatTheTuningTablePlansAtEveryBatch() {
        int width = 512;
        try (DeviceBuffer w = gpu.allocateFloats(width * width); DeviceBuffer bias = gpu.allocateFloats(width);
                DeviceBuffer x = gpu.allocateFloats(256 * width); DeviceBuffer y = gpu.allocateFloats(256 * width)) {
            Linear layer = new Linear(gpu.kernels(), w, bias, width, width);
            try (Mlp mlp = new Mlp(gpu.kernels(), List.of(layer, layer), 256)) {
                for (int batch : new int[] {1, 8, 32, 256}) {
                    GemmConfig gemv = gpu.sgemm().gemv(batch, width, width, true, GemmConfig.Epilogue.BIAS_RELU,
                            x, w);
                    GemmConfig planned = gemv != null ? gemv
                            : gpu.sgemm().tuned(batch, width, width, true, GemmConfig.Epilogue.BIAS_RELU);
                    CudaGraph graph;
                    try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL)) {
                        mlp.forward(gpu.stream(), batch, x, y, Linear.Mode.FUSED);
                        graph = capture.end();
                    }
                    try (graph) {
                        for (var node : graph.nodes()) {
                            assertEquals(planned.grid(batch, width), node.kernelParams().orElseThrow().config().grid(),
                                    "batch " + batch + ": " + planned);
                        }
                    }
                }
            }
        }
    }

    /** A PDL capture records programmatic edges; introspection reads them instead of failing on a lossy query. */
    @Test
    void aCaptureWithProgrammaticDependentLaunchHasProgrammaticEdgesThatIntrospectionShows() {
        int width = 512;
        try (DeviceBuffer w = gpu.upload(scale(TestData.randomFloats(width * width, 1), 0.04f));
                DeviceBuffer bias = gpu.upload(TestData.randomFloats(width, 2));
                DeviceBuffer x = gpu.upload(TestData.randomFloats(8 * width, 3));
                DeviceBuffer y = gpu.allocateFloats(8 * width);
                Mlp mlp = new Mlp(gpu.kernels(), List.of(new Linear(gpu.kernels(), w, bias, width, width)
                        .withProgrammaticDependentLaunch(), new Linear(gpu.kernels(), w, bias, width, width)
                        .withProgrammaticDependentLaunch(), new Linear(gpu.kernels(), w, bias, width, width)
                        .withProgrammaticDependentLaunch()), 8)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL)) {
                mlp.forward(gpu.stream(), 8, x, y, Linear.Mode.FUSED);
                graph = capture.end();
            }
            try (graph) {
                List<org.cudagraph4j.graph.GraphEdge> edges = graph.edges();
                assertEquals(2, edges.size(), edges.toString());
                assertTrue(edges.stream().allMatch(org.cudagraph4j.graph.GraphEdge::programmatic), edges.toString());
                assertEquals(3, graph.topologicalOrder().size());
                assertTrue(graph.toDot().contains("NODE 2: KERNEL"), graph.toDot());
                assertEquals(List.of(graph.nodes().get(0)), graph.nodes().get(1).dependencies());
                for (var node : graph.nodes()) {
                    assertFalse(node.kernelParams().orElseThrow().config().programmaticDependentLaunch(),
                            "the programmatic edge holds it, not the node's launch: " + node);
                }
            }
        }
    }

    /** Two layers joined by a programmatic edge built by hand give the bits of the same layers in order. */
    @Test
    void anExplicitProgrammaticEdgeGivesTheSameBitsAsAnOrdinaryOne() {
        int width = 512;
        int batch = 8;
        long seed = TestData.newSeed();
        GemmConfig config = splitConfigs().stream()
                .filter(c -> c.bTransposed() && c.epilogue() == GemmConfig.Epilogue.BIAS_RELU && c.tileM() == 16)
                .findFirst().orElseThrow().withSlices(8);
        try (DeviceBuffer w = gpu.upload(scale(TestData.randomFloats(width * width, seed), 0.04f));
                DeviceBuffer bias = gpu.upload(TestData.randomFloats(width, seed + 1));
                DeviceBuffer x = gpu.upload(TestData.randomFloats(batch * width, seed + 2));
                DeviceBuffer h = gpu.allocateFloats(batch * width); DeviceBuffer y = gpu.allocateFloats(batch * width);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), batch, width, 8)) {
            Sgemm sgemm = gpu.sgemm();
            CudaStream stream = gpu.stream();
            sgemm.multiply(stream, config, GemmOperands.biasRelu(batch, width, width, x, w, true, bias, h), workspace);
            sgemm.multiply(stream, config, GemmOperands.biasRelu(batch, width, width, h, w, true, bias, y), workspace);
            gpu.stream().synchronize();
            int[] expected = bits(y.toFloatArray());

            org.cudagraph4j.CudaKernel kernel = gpu.kernels().library().kernel(config.kernelName());
            org.cudagraph4j.LaunchConfig shape = org.cudagraph4j.LaunchConfig.of(config.grid(batch, width),
                    org.cudagraph4j.Dim3.of(config.threads()), config.sharedMemBytes());
            try (CudaGraph graph = CudaGraph.create()) {
                var first = graph.addKernel(org.cudagraph4j.KernelLaunch.of(kernel, shape, batch, width, width, x,
                        width, w, width, bias, h, width, workspace.partials(), workspace.tickets()));
                var second = graph.addKernel(org.cudagraph4j.KernelLaunch.of(kernel, shape, batch, width, width, h,
                        width, w, width, bias, y, width, workspace.partials(), workspace.tickets()));
                var edge = graph.addProgrammaticDependency(first, second);
                assertTrue(edge.programmatic());
                assertEquals(List.of(edge), graph.edges());
                IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                        () -> graph.addProgrammaticDependency(first, second));
                assertTrue(twice.getMessage().contains("already depends on"), twice.getMessage());
                var memset = graph.addMemset(h, 0);
                IllegalArgumentException notKernel = assertThrows(IllegalArgumentException.class,
                        () -> graph.addProgrammaticDependency(memset, second));
                assertTrue(notKernel.getMessage().contains("is a MEMSET node"), notKernel.getMessage());
            }
            try (CudaGraph graph = CudaGraph.create()) {
                var first = graph.addKernel(org.cudagraph4j.KernelLaunch.of(kernel, shape, batch, width, width, x,
                        width, w, width, bias, h, width, workspace.partials(), workspace.tickets()));
                var second = graph.addKernel(org.cudagraph4j.KernelLaunch.of(kernel, shape, batch, width, width, h,
                        width, w, width, bias, y, width, workspace.partials(), workspace.tickets()));
                graph.addProgrammaticDependency(first, second);
                try (GraphExec exec = graph.instantiate()) {
                    for (int replay = 0; replay < 10; replay++) {
                        y.memset(0xFF);
                        exec.launch(gpu.stream());
                        gpu.stream().synchronize();
                        assertArrayEquals(expected, bits(y.toFloatArray()), "replay " + replay + " "
                                + TestData.seedDescription(seed));
                    }
                }
            }
        }
    }

    @Test
    void anMlpRefusesLayersThatDoNotChainAndBatchesItCannotHold() {
        try (DeviceBuffer w = gpu.allocateFloats(64 * 64); DeviceBuffer bias = gpu.allocateFloats(64)) {
            Linear square = new Linear(gpu.kernels(), w, bias, 64, 64);
            Linear narrow = new Linear(gpu.kernels(), w, bias, 32, 64);
            IllegalArgumentException chain = assertThrows(IllegalArgumentException.class,
                    () -> new Mlp(gpu.kernels(), List.of(square, narrow), 8));
            assertEquals("layer 1 takes 32 features but layer 0 gives 64", chain.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new Mlp(gpu.kernels(), List.of(), 8));
            try (Mlp mlp = new Mlp(gpu.kernels(), List.of(square, square), 8);
                    DeviceBuffer x = gpu.allocateFloats(16 * 64); DeviceBuffer y = gpu.allocateFloats(16 * 64)) {
                IllegalArgumentException batch = assertThrows(IllegalArgumentException.class,
                        () -> mlp.forward(gpu.stream(), 9, x, y, Linear.Mode.FUSED));
                assertEquals("batch must be 1 to 8, got 9", batch.getMessage());
                assertThrows(IllegalArgumentException.class,
                        () -> mlp.forward(gpu.stream(), 8, x, x, Linear.Mode.FUSED));
            }
        }
    }

    /**
     * Captures {@code work} from the stream, then replays the graph {@code replays} times with
     * {@code output} poisoned before each: every replay must give {@code expected}'s bits.
     */
    private static void assertGraphReplaysGive(int[] expected, Runnable work, DeviceBuffer output, int replays,
            String what) {
        CudaGraph graph;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL)) {
            work.run();
            graph = capture.end();
        }
        try (graph; GraphExec exec = graph.instantiate()) {
            for (int replay = 0; replay < replays; replay++) {
                output.memset(0xFF);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                assertArrayEquals(expected, bits(output.toFloatArray()), what + ", replay " + replay);
            }
        }
    }

    private static float[] ones(int length) {
        float[] values = new float[length];
        java.util.Arrays.fill(values, 1f);
        return values;
    }

    private static int[] bits(float[] values) {
        int[] bits = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = Float.floatToRawIntBits(values[i]);
        }
        return bits;
    }

    private static float[] scale(float[] values, float factor) {
        for (int i = 0; i < values.length; i++) {
            values[i] *= factor;
        }
        return values;
    }

    private static double[] toDouble(float[] values) {
        double[] result = new double[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = values[i];
        }
        return result;
    }

    private static float[] toFloat(double[] values) {
        float[] result = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = (float) values[i];
        }
        return result;
    }
}
