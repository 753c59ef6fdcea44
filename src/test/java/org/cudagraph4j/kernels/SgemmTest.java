package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Stream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@GpuTest
class SgemmTest {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    /**
     * Sizes that are not multiples of any tile (1, 7, 63, 65, 127, 129, 1000, 1023), mixed; under a
     * sanitizer the small ones only, which still leave partial tiles in every dimension.
     */
    static Stream<Arguments> shapes() {
        int[][] shapes = {{1, 1, 1}, {7, 7, 7}, {63, 65, 127}, {65, 63, 129}, {127, 129, 65}, {129, 127, 63},
                {1000, 7, 129}, {1, 1000, 1023}, {1023, 1, 1000}, {1000, 1023, 1}, {1023, 1023, 1023},
                {2048, 640, 512}};
        int[][] sanitized = {{1, 1, 1}, {7, 7, 7}, {63, 65, 127}, {129, 127, 63}};
        return Reference.withBothLayouts(TestData.underSanitizer() ? sanitized : shapes);
    }

    @ParameterizedTest(name = "m={0} n={1} k={2} bTransposed={3}")
    @MethodSource("shapes")
    void everyInstanceMatchesTheDoubleReference(int m, int n, int k, boolean bTransposed) {
        try (GemmCase problem = new GemmCase(gpu.device(), m, n, k, bTransposed);
                GemmWorkspace workspace = GemmWorkspace.allocate(gpu.device(), m, n, 1)) {
            Set<GemmConfig.Epilogue> checked = EnumSet.noneOf(GemmConfig.Epilogue.class);
            for (GemmConfig config : gpu.kernels().gemmConfigs()) {
                if (config.bTransposed() != bTransposed || (config.alignment() > 1 && (bTransposed ? k : n)
                        % config.alignment() != 0) || k % config.alignmentA() != 0) {
                    continue;
                }
                checked.add(config.epilogue());
                problem.check(gpu.kernels(), gpu.stream(), config, workspace);
            }
            // The align1 instances take every shape: both epilogues must have been checked.
            assertEquals(EnumSet.allOf(GemmConfig.Epilogue.class), checked);
        }
    }

    @Test
    void betaZeroNeverReadsTheOutputSoNaNPoisonDoesNotLeak() {
        GemmCase.assertBetaZeroIgnoresThePoisonedOutput(gpu, false, null);
    }

    @Test
    void choosesTheLargeTileForLargeProblemsAndTheSeedTileForSmallOnes() {
        try (DeviceBuffer b = gpu.allocateFloats(4096L * 4096)) {
            GemmConfig large = gpu.sgemm().choose(4096, 4096, 4096, false, GemmConfig.Epilogue.LINEAR_COMBINATION, b);
            GemmConfig small = gpu.sgemm().choose(2048, 640, 640, true, GemmConfig.Epilogue.BIAS_RELU, b);
            assertTrue(large.tileM() * large.tileN() >= 128 * 128, large.toString());
            assertEquals(64, small.tileM());
            assertEquals(32, small.tileN());
        }
    }

    @Test
    void badShapesAndBuffersAreNamedBeforeLaunch() {
        try (DeviceBuffer small = gpu.allocateFloats(10); DeviceBuffer ints = gpu.device().allocate(
                org.cudagraph4j.ElementType.INT32, 100)) {
            Sgemm sgemm = gpu.sgemm();
            IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
                    () -> sgemm.multiply(gpu.stream(), linear(0, 1, 1, small, small, small), null));
            assertEquals("sgemm needs m, n, k >= 1, got m=0, n=1, k=1", zero.getMessage());
            IllegalArgumentException tooSmall = assertThrows(IllegalArgumentException.class,
                    () -> sgemm.multiply(gpu.stream(), linear(4, 4, 4, small, small, small), null));
            assertEquals("A needs 16 floats but has 10", tooSmall.getMessage());
            IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
                    () -> sgemm.multiply(gpu.stream(), linear(2, 2, 2, ints, small, small), null));
            assertEquals("A must hold FLOAT32, not INT32", type.getMessage());
            try (DeviceBuffer big = gpu.allocateFloats(100)) {
                IllegalArgumentException alias = assertThrows(IllegalArgumentException.class,
                        () -> sgemm.multiply(gpu.stream(), linear(4, 4, 4, big, big.slice(16, 16), big.slice(8, 16)),
                                null));
                assertEquals("the output of sgemm must not overlap its inputs", alias.getMessage());
            }
        }
    }

    /** {@code C = A * B} with B stored [k, n]. */
    private static GemmOperands linear(int m, int n, int k, DeviceBuffer a, DeviceBuffer b, DeviceBuffer c) {
        return GemmOperands.linearCombination(m, n, k, 1f, a, b, false, 0f, c);
    }
}
