package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The GEMV-like instances: B stored [N, K], K a multiple of 4, A and B 16-byte aligned. */
@GpuTest
class GemvTest {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    private static List<GemmConfig> gemvConfigs() {
        List<GemmConfig> configs = gpu.kernels().gemmConfigs().stream()
                .filter(c -> c.mainloop() == GemmConfig.Mainloop.GEMV).toList();
        assertEquals(6, configs.size(), "8x4 and 8x8 on 4 warps and 8x4 on 16 (4 to a column), each with both "
                + "epilogues: " + configs);
        return configs;
    }

    /** Partial row blocks and column tiles, K of one float4 per lane or less, and the inference shapes. */
    static Stream<Arguments> shapes() {
        int[][] shapes = {{1, 1, 4}, {1, 512, 512}, {3, 5, 132}, {8, 1000, 16}, {9, 63, 516}, {31, 257, 1028},
                {32, 512, 512}, {33, 97, 4096}, {77, 13, 260}};
        int[][] sanitized = {{1, 1, 4}, {9, 63, 516}, {33, 97, 260}};
        return Stream.of(TestData.underSanitizer() ? sanitized : shapes).map(s -> Arguments.of(s[0], s[1], s[2]));
    }

    @ParameterizedTest(name = "m={0} n={1} k={2}")
    @MethodSource("shapes")
    void everyGemvInstanceMatchesTheDoubleReference(int m, int n, int k) {
        try (GemmCase problem = new GemmCase(gpu.device(), m, n, k, true)) {
            for (GemmConfig config : gemvConfigs()) {
                problem.check(gpu.kernels(), gpu.stream(), config, null);
            }
        }
    }

    @Test
    void aGemvResultIsTheSameBitsEveryRunAndWithProgrammaticDependentLaunch() {
        int m = 32;
        int n = 512;
        int k = 4096;
        long seed = TestData.newSeed();
        try (DeviceBuffer a = gpu.upload(TestData.randomFloats(m * k, seed));
                DeviceBuffer b = gpu.upload(TestData.randomFloats(n * k, seed + 1));
                DeviceBuffer bias = gpu.upload(TestData.randomFloats(n, seed + 2));
                DeviceBuffer d = gpu.allocateFloats(m * n)) {
            for (GemmConfig config : gemvConfigs()) {
                if (config.epilogue() != GemmConfig.Epilogue.BIAS_RELU) {
                    continue;
                }
                int[] first = null;
                for (Sgemm sgemm : new Sgemm[] {gpu.sgemm(), gpu.sgemm().withProgrammaticDependentLaunch()}) {
                    for (int run = 0; run < (TestData.underSanitizer() ? 2 : 20); run++) {
                        d.memset(0xFF);
                        sgemm.multiply(gpu.stream(), config, GemmOperands.biasRelu(m, n, k, a, b, true, bias, d), null);
                        gpu.stream().synchronize();
                        int[] bits = bits(d.toFloatArray());
                        if (first == null) {
                            first = bits;
                        }
                        assertArrayEquals(first, bits, config.kernelName() + " run " + run + " PDL "
                                + sgemm.programmaticDependentLaunch() + " " + TestData.seedDescription(seed));
                    }
                }
            }
        }
    }

    @Test
    void operandsAGemvInstanceCannotLoadFourFloatsAtATimeAreRefused() {
        GemmConfig gemv = gemvConfigs().getFirst();
        try (DeviceBuffer a = gpu.allocateFloats(8 * 132); DeviceBuffer b = gpu.allocateFloats(64 * 132);
                DeviceBuffer bias = gpu.allocateFloats(64); DeviceBuffer c = gpu.allocateFloats(8 * 64)) {
            DeviceBuffer biasOrNull = gemv.epilogue() == GemmConfig.Epilogue.BIAS_RELU ? bias : null;
            IllegalArgumentException oddK = assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                    .multiply(gpu.stream(), gemv, operands(130, a, b, c, biasOrNull), null));
            assertTrue(oddK.getMessage().contains("needs B's leading dimension (130) and address to be multiples of 4"),
                    oddK.getMessage());
            DeviceBuffer shiftedA = a.slice(1, 8 * 128);
            IllegalArgumentException misalignedA = assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                    .multiply(gpu.stream(), gemv, operands(128, shiftedA, b, c, biasOrNull), null));
            assertEquals(gemv.kernelName() + " reads A 4 floats at a time: it needs K (128) to be a multiple of 4 and "
                    + "A to start 16-byte aligned", misalignedA.getMessage());
            DeviceBuffer shiftedB = b.slice(2, 64 * 128);
            assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                    .multiply(gpu.stream(), gemv, operands(128, a, shiftedB, c, biasOrNull), null));
        }
    }

    /** An 8 x 64 output of depth {@code k}, B stored [n, k], with a bias or none. */
    private static GemmOperands operands(int k, DeviceBuffer a, DeviceBuffer b, DeviceBuffer c, DeviceBuffer bias) {
        return new GemmOperands(8, 64, k, 1f, a, b, true, 0f, c, bias);
    }

    @Test
    void theHeuristicTakesTheGemvInstanceWhereTheTableSaysItWonAndOperandsAllowIt() {
        try (DeviceBuffer b = gpu.allocateFloats(512 * 512);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), 32, 512, 32)) {
            GemmConfig chosen = gpu.sgemm().choose(32, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU, b, workspace);
            assertEquals(GemmConfig.Mainloop.GEMV, chosen.mainloop(), chosen.toString());
            assertEquals(chosen, gpu.sgemm().choose(32, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU, b),
                    "a GEMV instance needs no workspace");
            GemmConfig oddK = gpu.sgemm().choose(32, 512, 511, true, GemmConfig.Epilogue.BIAS_RELU, b, workspace);
            assertEquals(GemmConfig.Mainloop.TILED, oddK.mainloop(), "K = 511 cannot be read 4 floats at a time");
            GemmConfig notTransposed = gpu.sgemm().choose(32, 512, 512, false, GemmConfig.Epilogue.BIAS_RELU, b,
                    workspace);
            assertEquals(GemmConfig.Mainloop.TILED, notTransposed.mainloop(), "GEMV instances take B as [N, K] only");
            assertFalse(gpu.sgemm().choose(256, 512, 512, true, GemmConfig.Epilogue.BIAS_RELU, b, workspace)
                    .mainloop() == GemmConfig.Mainloop.GEMV, "batch 256 is not a GEMV shape");
        }
    }

    /** A Linear at batch 32 takes the GEMV instance, or a tiled one when its input starts unaligned: same answer. */
    @Test
    void aLinearWhoseInputIsAnUnalignedSliceFallsBackToATiledInstanceAndIsRight() {
        int batch = 32;
        int width = 512;
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(batch * width + 1, seed);
        float[] w = TestData.randomFloats(width * width, seed + 1);
        float[] bias = TestData.randomFloats(width, seed + 2);
        float[] shifted = java.util.Arrays.copyOfRange(x, 1, x.length);
        double[] expected = Reference.biasRelu(Reference.gemm(batch, width, width, 1, shifted, w, true, 0, null),
                batch, width, bias);
        try (DeviceBuffer dx = gpu.upload(x); DeviceBuffer dw = gpu.upload(w);
                DeviceBuffer db = gpu.upload(bias); DeviceBuffer dy = gpu.allocateFloats(batch * width);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), batch, width, 32)) {
            Linear layer = new Linear(gpu.kernels(), dw, db, width, width).withWorkspace(workspace);
            dy.memset(0xFF);
            layer.forward(gpu.stream(), batch, dx.slice(1, batch * width), dy, Linear.Mode.FUSED);
            gpu.stream().synchronize();
            Reference.assertClose(expected, dy.toFloatArray(), "unaligned input " + TestData.seedDescription(seed));
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
