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

/**
 * The {@code tnt_align4} instances (B stored [n, k], read 16 bytes at a time and transposed through
 * registers): against float64 where they are legal, bit for bit against their align1 twins (the
 * loader changes how B reaches shared memory, not the arithmetic) and run to run, and the fallback
 * to align1 where K or B's address rules them out.
 */
@GpuTest
class SgemmAlign4Test {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    private static List<GemmConfig> transposedAlign4() {
        List<GemmConfig> configs = gpu.kernels().gemmConfigs().stream()
                .filter(c -> c.math() == MathMode.SIMT_FP32 && c.mainloop() == GemmConfig.Mainloop.TILED
                        && c.bTransposed() && c.alignment() == 4)
                .toList();
        assertEquals(4, configs.size(), "the 128x128 and 64x32 tiles, both epilogues: " + configs);
        return configs;
    }

    private static GemmConfig twin(GemmConfig config) {
        String name = config.kernelName().replace("_align4_", "_align1_");
        return gpu.kernels().gemmConfigs().stream().filter(c -> c.kernelName().equals(name)).findFirst().orElseThrow();
    }

    /**
     * K a multiple of 4 (B's leading dimension is K), M and N not multiples of any tile, and K ending
     * 4, 8, 12 or 0 floats into its last 16-deep k-tile; under a sanitizer the small ones only.
     */
    static Stream<Arguments> legalShapes() {
        int[][] shapes = {{1, 1, 4}, {7, 9, 8}, {63, 65, 12}, {129, 127, 20}, {127, 129, 132}, {65, 257, 48},
                {300, 200, 1000}, {1000, 1023, 1024}, {2048, 640, 512}};
        int[][] sanitized = {{1, 1, 4}, {63, 65, 12}, {129, 127, 20}};
        return Stream.of(TestData.underSanitizer() ? sanitized : shapes).map(s -> Arguments.of(s[0], s[1], s[2]));
    }

    @ParameterizedTest(name = "m={0} n={1} k={2}")
    @MethodSource("legalShapes")
    void matchesTheDoubleReferenceItsAlign1TwinAndItselfRunToRun(int m, int n, int k) {
        try (GemmCase problem = new GemmCase(gpu.device(), m, n, k, true)) {
            for (GemmConfig config : transposedAlign4()) {
                String what = problem.describe(config);
                float[] first = problem.run(gpu.kernels(), gpu.stream(), config, null);
                problem.assertClose(config.epilogue(), first, what, Reference.TOLERANCE);
                for (int run = 1; run < 3; run++) {
                    assertArrayEquals(bits(first), bits(problem.run(gpu.kernels(), gpu.stream(), config, null)),
                            what + " run " + run);
                }
                assertArrayEquals(bits(first), bits(problem.run(gpu.kernels(), gpu.stream(), twin(config), null)),
                        what + " against " + twin(config).kernelName());
            }
        }
    }

    @Test
    void betaZeroDoesNotReadThePoisonedOutput() {
        for (GemmConfig config : transposedAlign4()) {
            if (config.epilogue() == GemmConfig.Epilogue.LINEAR_COMBINATION) {
                GemmCase.assertBetaZeroIgnoresThePoisonedOutput(gpu, true, config);
            }
        }
    }

    @Test
    void thePinnedInstanceRefusesAnOddKAndAMisalignedB() {
        for (GemmConfig config : transposedAlign4()) {
            long seed = TestData.newSeed();
            // Random operands: the one launch that is legal reads them (initcheck flags unwritten memory).
            try (DeviceBuffer a = gpu.upload(TestData.randomFloats(8 * 132, seed));
                    DeviceBuffer b = gpu.upload(TestData.randomFloats(64 * 132 + 4, seed + 1));
                    DeviceBuffer bias = gpu.upload(TestData.randomFloats(64, seed + 2));
                    DeviceBuffer c = gpu.allocateFloats(8 * 64)) {
                DeviceBuffer biasOrNull = config.epilogue() == GemmConfig.Epilogue.BIAS_RELU ? bias : null;
                IllegalArgumentException oddK = assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                        .multiply(gpu.stream(), config, operands(131, a, b, c, biasOrNull), null));
                assertEquals(config.kernelName() + " needs B's leading dimension (131) and address to be multiples of 4"
                        + " floats", oddK.getMessage());
                assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                        .multiply(gpu.stream(), config, operands(130, a, b, c, biasOrNull), null), "K = 2 mod 4");
                DeviceBuffer shifted = b.slice(1, 64 * 128);
                assertThrows(IllegalArgumentException.class, () -> gpu.sgemm()
                        .multiply(gpu.stream(), config, operands(128, a, shifted, c, biasOrNull), null),
                        "B 4 bytes in");
                DeviceBuffer shiftedByFour = b.slice(4, 64 * 128);
                gpu.sgemm().multiply(gpu.stream(), config, operands(128, a, shiftedByFour, c, biasOrNull), null);
                gpu.stream().synchronize();
            }
        }
    }

    /** An 8 x 64 output of depth {@code k}, B stored [n, k], with a bias or none. */
    private static GemmOperands operands(int k, DeviceBuffer a, DeviceBuffer b, DeviceBuffer c, DeviceBuffer bias) {
        return new GemmOperands(8, 64, k, 1f, a, b, true, 0f, c, bias);
    }

    @Test
    void theChooserTakesAlign4OnlyWhereBAllowsIt() {
        assertTrue(gpu.device().properties().multiprocessorCount() > 16 * 5,
                "the large tile's 80 blocks leave SMs idle");
        try (DeviceBuffer b = gpu.allocateFloats(640L * 512 + 4)) {
            for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
                GemmConfig legal = gpu.sgemm().choose(2048, 640, 512, true, epilogue, b);
                assertEquals(4, legal.alignment(), legal.toString());
                assertEquals(64 * 32, legal.tileM() * legal.tileN(), legal.toString());
                assertEquals(4, gpu.sgemm().choose(2048, 640, 512, true, epilogue, b.slice(4, 640L * 512))
                        .alignment(), "a slice 16 bytes in");
                GemmConfig misaligned = gpu.sgemm().choose(2048, 640, 512, true, epilogue, b.slice(1, 640L * 512));
                assertEquals(twin(legal), misaligned, "a slice 4 bytes in");
                assertEquals(twin(legal), gpu.sgemm().choose(2048, 640, 511, true, epilogue, b), "odd K");
                assertEquals(1, gpu.sgemm().withMathMode(MathMode.SIMT_FP32).choose(4096, 4096, 4096, true, epilogue, b)
                        .alignment(), "the large SIMT tile keeps the loader that measured faster");
            }
        }
    }

    /**
     * Through the choosing entry points, at the seed's size, which takes the seed tile (the large
     * tile's grid would leave multiprocessors idle): K a multiple of 4 on an aligned B takes align4;
     * an odd K, or B a slice one float into its allocation, takes align1; every one against float64,
     * its output poisoned, and bit-identical from run to run.
     */
    @Test
    void fusedLinearsFallBackToAlign1ForAnOddKOrAMisalignedSliceOfBAndAreRight() {
        int m = 2048;
        int n = 640;
        assertTrue(gpu.device().properties().multiprocessorCount() > 16 * 5,
                "the large tile's 80 blocks leave SMs idle");
        record Case(int k, int bOffset, int alignment) {}
        for (Case c : List.of(new Case(132, 0, 4), new Case(131, 0, 1), new Case(132, 1, 1), new Case(129, 1, 1))) {
            try (GemmCase problem = new GemmCase(gpu.device(), m, n, c.k(), true, c.bOffset())) {
                GemmConfig chosen = gpu.sgemm().choose(m, n, c.k(), true, GemmConfig.Epilogue.BIAS_RELU,
                        problem.b());
                assertEquals(c.alignment(), chosen.alignment(), c + " " + chosen);
                assertEquals(64, chosen.tileM(), chosen.toString());
                float[] first = problem.run(gpu.kernels(), gpu.stream(), chosen, null);
                problem.assertClose(GemmConfig.Epilogue.BIAS_RELU, first, problem.describe(chosen),
                        Reference.TOLERANCE);
                assertArrayEquals(bits(first), bits(problem.run(gpu.kernels(), gpu.stream(), chosen, null)),
                        problem.describe(chosen) + " second run");
            }
        }
    }

    @Test
    void theChoosingMultiplyMatchesThePinnedInstanceBitForBit() {
        int m = 2048;
        int n = 640;
        int k = 132;
        long seed = TestData.newSeed();
        float[] a = TestData.randomFloats(m * k, seed);
        float[] b = TestData.randomFloats(k * n, seed + 1);
        float[] bias = TestData.randomFloats(n, seed + 2);
        try (DeviceBuffer da = gpu.upload(a); DeviceBuffer db = gpu.upload(b);
                DeviceBuffer dbias = gpu.upload(bias); DeviceBuffer chosen = gpu.allocateFloats(m * n);
                DeviceBuffer pinned = gpu.allocateFloats(m * n)) {
            GemmConfig config = gpu.sgemm().choose(m, n, k, true, GemmConfig.Epilogue.BIAS_RELU, db);
            assertEquals("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align4_bias_f32_relu", config.kernelName());
            chosen.memset(0xFF);
            pinned.memset(0xFF);
            gpu.sgemm().multiply(gpu.stream(), GemmOperands.biasRelu(m, n, k, da, db, true, dbias, chosen), null);
            gpu.sgemm().multiply(gpu.stream(), config, GemmOperands.biasRelu(m, n, k, da, db, true, dbias, pinned),
                    null);
            gpu.stream().synchronize();
            float[] out = chosen.toFloatArray();
            assertFalse(Float.isNaN(out[out.length - 1]), "the last element was written");
            assertArrayEquals(bits(pinned.toFloatArray()), bits(out), TestData.seedDescription(seed));
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
