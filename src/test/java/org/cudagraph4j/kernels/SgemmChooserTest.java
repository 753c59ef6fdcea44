package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rule that picks an unsplit tiled instance, on the shipped manifest and without a GPU: an
 * instance with 16-byte loads of B only where B's leading dimension and address allow them and it
 * measured faster than its align1 twin, which is taken otherwise.
 */
class SgemmChooserTest {
    private static final List<GemmConfig> CONFIGS = KernelManifest.load().gemmConfigs();
    private static final int H200_MULTIPROCESSORS = 132;
    /** A device address as cudaMalloc returns them: 256-byte aligned. */
    private static final long ALLOCATION = 0x7f3a_0000_0000L;

    private static String choose(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue,
            long bAddress) {
        return Sgemm.chooseTiled(CONFIGS, H200_MULTIPROCESSORS, m, n, bTransposed ? k : n, bTransposed, epilogue,
                bAddress).kernelName();
    }

    private static String suffix(GemmConfig.Epilogue epilogue) {
        return epilogue == GemmConfig.Epilogue.BIAS_RELU ? "bias_f32_relu" : "lincomb";
    }

    @Test
    void sixteenByteLoadsNeedTheLeadingDimensionAndTheAddressAlignedTo16Bytes() {
        assertTrue(Sgemm.alignmentAllows(4, 4096, ALLOCATION));
        assertTrue(Sgemm.alignmentAllows(4, 4, ALLOCATION + 16), "a slice 4 floats in");
        assertFalse(Sgemm.alignmentAllows(4, 4095, ALLOCATION), "odd leading dimension");
        assertFalse(Sgemm.alignmentAllows(4, 4094, ALLOCATION), "even, not a multiple of 4");
        assertFalse(Sgemm.alignmentAllows(4, 4096, ALLOCATION + 4), "a slice 1 float in");
        assertFalse(Sgemm.alignmentAllows(4, 4096, ALLOCATION + 8), "a slice 2 floats in");
        assertTrue(Sgemm.alignmentAllows(1, 4095, ALLOCATION + 4), "align1 takes anything");
    }

    @Test
    void theLinearLayoutsLargeTileKeepsItsAlign1LoaderWhichMeasuredFasterThanTheSixteenByteOne() {
        for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
            String align1 = "cg4j_simt_sgemm_f32_128x128x16_3_tnt_align1_" + suffix(epilogue);
            assertEquals(align1, choose(4096, 4096, 4096, true, epilogue, ALLOCATION), "16-byte loads legal");
            assertEquals(align1, choose(4096, 4096, 4095, true, epilogue, ALLOCATION), "odd K");
            assertEquals(align1, choose(4096, 4096, 4096, true, epilogue, ALLOCATION + 4), "B a slice 1 float in");
        }
    }

    @Test
    void theSeedTileTooWhereTheLargeTilesGridWouldNotFillTheGpu() {
        // 2048 x 640: 16 x 5 = 80 large tiles on 132 multiprocessors.
        for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
            assertEquals("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align4_" + suffix(epilogue),
                    choose(2048, 640, 512, true, epilogue, ALLOCATION));
            assertEquals("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_" + suffix(epilogue),
                    choose(2048, 640, 511, true, epilogue, ALLOCATION));
            assertEquals("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_" + suffix(epilogue),
                    choose(2048, 640, 512, true, epilogue, ALLOCATION + 4));
        }
    }

    @Test
    void bAsStoredKeepsItsRuleWithTheLeadingDimensionN() {
        assertEquals("cg4j_simt_sgemm_f32_128x128x16_3_ttt_align4_lincomb",
                choose(4096, 4096, 4095, false, GemmConfig.Epilogue.LINEAR_COMBINATION, ALLOCATION),
                "K does not matter for B [k, n]");
        assertEquals("cg4j_simt_sgemm_f32_128x128x16_3_ttt_align1_lincomb",
                choose(4096, 4095, 4096, false, GemmConfig.Epilogue.LINEAR_COMBINATION, ALLOCATION));
        assertEquals("cg4j_simt_sgemm_f32_64x32x16_3_ttt_align1_bias_f32_relu",
                choose(2048, 640, 512, false, GemmConfig.Epilogue.BIAS_RELU, ALLOCATION), "no align4 seed tile for ttt");
    }

    @Test
    void everyAlign4TiledInstanceHasAnAlign1TwinToFallBackTo() {
        List<GemmConfig> align4 = CONFIGS.stream()
                .filter(c -> c.mainloop() == GemmConfig.Mainloop.TILED && c.alignment() == 4).toList();
        assertEquals(6, align4.size(), "large tile ttt and tnt, seed tile tnt, both epilogues: " + align4);
        for (GemmConfig config : align4) {
            String twin = config.kernelName().replace("_align4_", "_align1_");
            GemmConfig fallback = CONFIGS.stream().filter(c -> c.kernelName().equals(twin)).findFirst().orElseThrow(
                    () -> new AssertionError(config.kernelName() + " has no align1 twin"));
            assertEquals(new GemmConfig(twin, config.epilogue(), config.tileM(), config.tileN(), config.tileK(),
                    config.stages(), config.threads(), config.sharedMemBytes(), config.bTransposed(), 1,
                    config.splitK(), 1, config.reductionBatch()), fallback, "same tile, launch and shared memory");
        }
    }
}
