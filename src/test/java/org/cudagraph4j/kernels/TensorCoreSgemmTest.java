package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The tensor-core instances (3xTF32 and TF32): every one against float64 on odd shapes, its output
 * poisoned or reset first, split-K ones at several slice counts, each bit-identical from run to
 * run; 3xTF32 as accurate as the SIMT kernel on the same data; infinities and NaN as FP32 gives
 * them; the alignment a 16-byte instance needs named when it is missing; and the math modes of
 * {@link Sgemm}, {@link Linear} and {@link Mlp} taking them.
 */
@GpuTest
class TensorCoreSgemmTest {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    private static List<GemmConfig> tensorCoreConfigs() {
        List<GemmConfig> configs = gpu.kernels().gemmConfigs().stream().filter(c -> c.math().tensorCores()).toList();
        assertFalse(configs.isEmpty(), "the kernels ship tensor-core instances");
        return configs;
    }

    /** M, N, K from 1 to 4097, primes and multiples of 4 (for the 16-byte instances) among them. */
    static Stream<Arguments> shapes() {
        int[][] shapes = {{1, 1, 1}, {1, 7, 5}, {3, 130, 33}, {17, 1, 64}, {31, 67, 129}, {64, 64, 32}, {97, 131, 256},
                {129, 257, 127}, {250, 97, 1000}, {1, 4097, 60}, {4097, 3, 28}, {257, 129, 4097}};
        int[][] sanitized = {{1, 7, 5}, {31, 67, 132}, {129, 65, 64}};
        return Reference.withBothLayouts(TestData.underSanitizer() ? sanitized : shapes);
    }

    @ParameterizedTest(name = "m={0} n={1} k={2} bTransposed={3}")
    @MethodSource("shapes")
    void everyInstanceMatchesTheDoubleReferenceAndItselfRunToRun(int m, int n, int k, boolean bTransposed) {
        try (GemmCase problem = new GemmCase(gpu.device(), m, n, k, bTransposed);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), m, n, 3)) {
            int checked = 0;
            for (GemmConfig config : tensorCoreConfigs()) {
                if (config.bTransposed() != bTransposed || !legal(config, m, n, k)) {
                    continue;
                }
                int[] slices = config.splitK() ? IntStream.of(1, 2, 3).filter(s -> s <= config.maxSlices(k)).toArray()
                        : new int[] {1};
                for (int s : slices) {
                    GemmConfig launch = config.withSlices(s);
                    float[] first = problem.run(gpu.kernels(), gpu.stream(), launch, workspace);
                    problem.assertClose(config.epilogue(), first, problem.describe(launch),
                            Reference.tolerance(config));
                    assertArrayEquals(bits(first), bits(problem.run(gpu.kernels(), gpu.stream(), launch, workspace)),
                            problem.describe(launch) + " second run");
                    checked++;
                }
            }
            assertTrue(checked >= 4, "the align1 split-K instances take every shape, both modes and epilogues");
        }
    }

    /** Whether the 16-byte instances may run: K and B's leading dimension multiples of 4 (allocations are aligned). */
    private static boolean legal(GemmConfig config, int m, int n, int k) {
        return config.alignment() == 1 || (k % 4 == 0 && (config.bTransposed() ? k : n) % 4 == 0);
    }

    /**
     * On the same random data at K = 2048 (where {@link MathMode#FP32} may take 3xTF32), 3xTF32's
     * error is no worse than the SIMT kernel's, and TF32's is the size of its 10-bit operands.
     */
    @Test
    void threeTf32IsAsAccurateAsSimtAndTf32IsNamedForWhatItIs() {
        int m = 128;
        int n = 128;
        int k = 2048;
        try (GemmCase problem = new GemmCase(gpu.device(), m, n, k, true)) {
            double simt = error(problem, "cg4j_simt_sgemm_f32_128x128x16_3_tnt_align1_bias_f32_relu");
            double threeTf32 = error(problem, "cg4j_tensorop_3xtf32_sgemm_f32_64x64x32_4_tnt_align4_bias_f32_relu_splitk");
            double tf32 = error(problem, "cg4j_tensorop_tf32_sgemm_f32_64x64x32_4_tnt_align1_bias_f32_relu_splitk");
            assertTrue(threeTf32 <= simt * 1.5, "3xTF32 " + threeTf32 + " against SIMT " + simt);
            assertTrue(tf32 > 10 * threeTf32 && tf32 < Reference.TF32_TOLERANCE, "TF32 " + tf32);
            if (hasWgmma()) {
                double wgmma = error(problem, "cg4j_wgmma_3xtf32_sgemm_f32_128x128x32_3_tnt_align4_bias_f32_relu");
                assertTrue(wgmma <= simt * 1.5, "3xTF32 on wgmma " + wgmma + " against SIMT " + simt);
                double wgmmaTf32 = error(problem, "cg4j_wgmma_tf32_sgemm_f32_128x128x32_4_tnt_align4_bias_f32_relu");
                assertTrue(wgmmaTf32 > 10 * wgmma && wgmmaTf32 < Reference.TF32_TOLERANCE, "TF32 on wgmma " + wgmmaTf32);
            }
        }
    }

    /** Whether this device loaded the sm_90 cubin and with it the wgmma instances. */
    private static boolean hasWgmma() {
        return gpu.kernels().gemmConfigs().stream().anyMatch(c -> c.mainloop() == GemmConfig.Mainloop.WGMMA);
    }

    @Test
    void aDeviceOfComputeCapability9TakesTheWgmmaInstancesForLargeProblemsWithBTransposed() {
        boolean sm90 = gpu.device().properties().major() == 9;
        assertEquals(sm90, hasWgmma(), gpu.kernels().image());
        try (DeviceBuffer b = gpu.allocateFloats(4096L * 4096)) {
            for (MathMode mode : new MathMode[] {MathMode.FP32, MathMode.TF32X3, MathMode.TF32}) {
                GemmConfig large = gpu.sgemm().withMathMode(mode).choose(4096, 4096, 4096, true,
                        GemmConfig.Epilogue.BIAS_RELU, b);
                assertEquals(sm90 ? GemmConfig.Mainloop.WGMMA : GemmConfig.Mainloop.TILED, large.mainloop(),
                        mode + ": " + large.kernelName());
                assertEquals(GemmConfig.Mainloop.TILED, gpu.sgemm().withMathMode(mode).choose(4096, 4096, 4096, false,
                        GemmConfig.Epilogue.BIAS_RELU, b).mainloop(), "wgmma takes B stored [n, k] only");
            }
        }
    }

    private static double error(GemmCase problem, String kernelName) {
        GemmConfig config = gpu.kernels().gemmConfigs().stream().filter(c -> c.kernelName().equals(kernelName))
                .findFirst().orElseThrow(() -> new AssertionError(kernelName + " is not shipped"));
        return Reference.relativeError(problem.expected(config.epilogue()),
                problem.run(gpu.kernels(), gpu.stream(), config, null));
    }

    /** inf * b stays inf (the split of an infinite operand leaves no inf - inf), inf * 0 and NaN give NaN. */
    @Test
    void infinitiesAndNanComeOutAsFp32GivesThem() {
        int m = 2;
        int n = 64;
        int k = 32;
        float[] a = new float[m * k];
        float[] b = new float[k * n];
        java.util.Arrays.fill(b, 0.5f);
        a[0] = Float.POSITIVE_INFINITY; // row 0: inf * 0.5 + 31 zeros * 0.5
        a[k] = Float.NaN; // row 1
        try (DeviceBuffer da = gpu.upload(a); DeviceBuffer db = gpu.upload(b); DeviceBuffer dc = gpu.allocateFloats(m * n)) {
            for (GemmConfig config : tensorCoreConfigs()) {
                if (config.epilogue() != GemmConfig.Epilogue.LINEAR_COMBINATION) {
                    continue;
                }
                dc.memset(0);
                // Every element of B is 0.5, so that it reads the same stored [k, n] or [n, k].
                gpu.sgemm().multiply(gpu.stream(), config,
                        GemmOperands.linearCombination(m, n, k, 1f, da, db, config.bTransposed(), 0f, dc), null);
                gpu.stream().synchronize();
                float[] c = dc.toFloatArray();
                for (int j = 0; j < n; j++) {
                    assertEquals(Float.POSITIVE_INFINITY, c[j], config.kernelName() + " column " + j);
                    assertTrue(Float.isNaN(c[n + j]), config.kernelName() + " column " + j + ": " + c[n + j]);
                }
            }
        }
    }

    @Test
    void aSixteenByteInstanceNamesTheAlignmentOfAItNeeds() {
        GemmConfig config = gpu.kernels().gemmConfigs().stream()
                .filter(c -> c.math() == MathMode.TF32X3 && c.alignment() == 4 && c.bTransposed()
                        && c.epilogue() == GemmConfig.Epilogue.LINEAR_COMBINATION)
                .findFirst().orElseThrow();
        try (DeviceBuffer a = gpu.allocateFloats(8 * 132 + 1); DeviceBuffer b = gpu.allocateFloats(64 * 132);
                DeviceBuffer c = gpu.allocateFloats(8 * 64)) {
            IllegalArgumentException oddK = assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                    .multiply(gpu.stream(), config, new GemmOperands(8, 64, 130, 1f, a, b, true, 0f, c, null), null));
            assertTrue(oddK.getMessage().contains("130"), oddK.getMessage());
            DeviceBuffer shifted = a.slice(1, 8 * 128);
            IllegalArgumentException misaligned = assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                    .multiply(gpu.stream(), config, new GemmOperands(8, 64, 128, 1f, shifted, b, true, 0f, c, null),
                            null));
            assertEquals(config.kernelName() + " reads A 4 floats at a time: it needs K (128) to be a multiple of 4"
                    + " and A to start 16-byte aligned", misaligned.getMessage());
        }
    }

    @Test
    void eachMathModeChoosesItsOwnInstancesAndFp32TakesTensorCoresOnlyWhereTheyWon() {
        try (DeviceBuffer b = gpu.allocateFloats(4096L * 4096)) {
            for (MathMode mode : new MathMode[] {MathMode.TF32X3, MathMode.TF32}) {
                Sgemm sgemm = gpu.sgemm().withMathMode(mode);
                assertEquals(mode, sgemm.mathMode());
                assertEquals(mode, sgemm.choose(1, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU, b).math());
                assertEquals(mode, sgemm.choose(4096, 4096, 4096, false, GemmConfig.Epilogue.LINEAR_COMBINATION, b)
                        .math());
                assertEquals(mode, sgemm.choose(33, 97, 4093, true, GemmConfig.Epilogue.BIAS_RELU, b).math(),
                        "an odd K takes the 4-byte twin");
            }
            Sgemm fp32 = gpu.sgemm();
            assertEquals(MathMode.FP32, fp32.mathMode());
            assertEquals(MathMode.TF32X3, fp32.choose(4096, 4096, 4096, true, GemmConfig.Epilogue.BIAS_RELU, b).math());
            assertEquals(MathMode.SIMT_FP32, fp32.choose(4096, 4096, 512, true, GemmConfig.Epilogue.BIAS_RELU, b).math(),
                    "K below 1024");
            assertEquals(MathMode.SIMT_FP32, fp32.choose(32, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU, b).math());
            assertEquals(MathMode.SIMT_FP32, gpu.sgemm().withMathMode(MathMode.SIMT_FP32)
                    .choose(4096, 4096, 4096, true, GemmConfig.Epilogue.BIAS_RELU, b).math());
        }
    }

    /** A 3xTF32 layer and stack against float64, through the choosing entry points (split K included). */
    @Test
    void linearAndMlpInThreeTf32MatchTheDoubleReference() {
        int batch = 96;
        int width = 1024;
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(batch * width, seed);
        float[] w0 = TestData.randomFloats(width * width, seed + 1);
        float[] b0 = TestData.randomFloats(width, seed + 2);
        float[] w1 = TestData.randomFloats(width * width, seed + 3);
        float[] b1 = TestData.randomFloats(width, seed + 4);
        double[] hidden = Reference.biasRelu(Reference.gemm(batch, width, width, 1, x, w0, true, 0, null), batch, width,
                b0);
        float[] hiddenFloats = new float[hidden.length];
        for (int i = 0; i < hidden.length; i++) {
            hiddenFloats[i] = (float) hidden[i];
        }
        double[] expected = Reference.biasRelu(Reference.gemm(batch, width, width, 1, hiddenFloats, w1, true, 0, null),
                batch, width, b1);
        try (DeviceBuffer dx = gpu.upload(x); DeviceBuffer dw0 = gpu.upload(w0); DeviceBuffer db0 = gpu.upload(b0);
                DeviceBuffer dw1 = gpu.upload(w1); DeviceBuffer db1 = gpu.upload(b1);
                DeviceBuffer hiddenOut = gpu.allocateFloats(batch * width);
                DeviceBuffer y = gpu.allocateFloats(batch * width)) {
            Linear first = new Linear(gpu.kernels(), dw0, db0, width, width).withMathMode(MathMode.TF32X3);
            Linear second = new Linear(gpu.kernels(), dw1, db1, width, width).withMathMode(MathMode.TF32X3);
            assertEquals(MathMode.TF32X3, first.mathMode());
            hiddenOut.memset(0xFF);
            first.forward(gpu.stream(), batch, dx, hiddenOut, Linear.Mode.FUSED);
            gpu.stream().synchronize();
            Reference.assertClose(hidden, hiddenOut.toFloatArray(), "3xTF32 Linear " + TestData.seedDescription(seed));
            try (Mlp mlp = new Mlp(gpu.kernels(), List.of(first, second), batch)) {
                y.memset(0xFF);
                mlp.forward(gpu.stream(), batch, dx, y, Linear.Mode.FUSED);
                gpu.stream().synchronize();
                float[] out = y.toFloatArray();
                Reference.assertClose(expected, out, "3xTF32 Mlp " + TestData.seedDescription(seed));
                mlp.forward(gpu.stream(), batch, dx, y, Linear.Mode.FUSED);
                gpu.stream().synchronize();
                assertArrayEquals(bits(out), bits(y.toFloatArray()), "the same bits on a second pass");
            }
        }
    }

    private static int[] bits(float[] values) {
        int[] bits = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = Float.floatToRawIntBits(values[i]);
        }
        return bits;
    }
}
