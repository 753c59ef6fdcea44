package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rules that pick an instance, on the shipped manifest and tuning table and without a GPU: an
 * unsplit SIMT instance with 16-byte loads of B only where B's leading dimension and address allow
 * them and it measured faster than its align1 twin, which is taken otherwise; and the tensor-core
 * plan of each math mode.
 */
class SgemmChooserTest {
    private static final List<GemmConfig> CONFIGS = KernelManifest.load().gemmConfigs(KernelManifestTest.H200_IMAGE);
    private static final List<GemmConfig> SM80_CONFIGS = KernelManifest.load().gemmConfigs("cg4j_kernels.sm_80.cubin");
    private static final SgemmTuning TUNING = SgemmTuning.load();
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
    void everyAlign4SimtTiledInstanceHasAnAlign1TwinToFallBackTo() {
        List<GemmConfig> align4 = CONFIGS.stream().filter(c -> c.math() == MathMode.SIMT_FP32
                && c.mainloop() == GemmConfig.Mainloop.TILED && c.alignment() == 4).toList();
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

    @Test
    void everyTensorCoreModeLayoutAndEpilogueHasASplitKInstanceForAnyOperands() {
        for (MathMode mode : new MathMode[] {MathMode.TF32X3, MathMode.TF32}) {
            for (boolean bTransposed : new boolean[] {false, true}) {
                for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
                    assertTrue(CONFIGS.stream().anyMatch(c -> c.math() == mode && c.bTransposed() == bTransposed
                            && c.epilogue() == epilogue && c.splitK() && c.alignment() == 1 && c.alignmentA() == 1),
                            mode + " " + epilogue + (bTransposed ? " tnt" : " ttt"));
                }
            }
        }
    }

    @Test
    void fp32TakesTheLargeTensorCoreTileOnlyFromK1024WithAlignedOperandsThatFillTheGpu() {
        GemmConfig large = tensor(MathMode.FP32, 4096, 4096, 4096, ALLOCATION, ALLOCATION);
        assertEquals("cg4j_wgmma_3xtf32_sgemm_f32_128x128x32_3_tnt_align4_bias_f32_relu", large.kernelName());
        assertEquals("cg4j_tensorop_3xtf32_sgemm_f32_128x128x32_3_tnt_align4_bias_f32_relu",
                Sgemm.tensorCorePlan(SM80_CONFIGS, TUNING, 108, MathMode.FP32, null, 4096, 4096, 4096, true,
                        GemmConfig.Epilogue.BIAS_RELU, ALLOCATION, ALLOCATION).kernelName(), "an A100: mma.sync");
        assertNull(tensor(MathMode.FP32, 4096, 4096, 512, ALLOCATION, ALLOCATION), "K below 1024: SIMT");
        assertEquals("cg4j_tensorop_3xtf32_sgemm_f32_128x128x32_3_tnt_align4_bias_f32_relu",
                tensor(MathMode.FP32, 4096, 4096, 1024, ALLOCATION, ALLOCATION).kernelName(),
                "K below 2048: mma.sync, whose tensor cores sum fewer products before each FP32 add");
        assertEquals(GemmConfig.Mainloop.WGMMA, tensor(MathMode.TF32X3, 4096, 4096, 1024, ALLOCATION, ALLOCATION)
                .mainloop(), "TF32X3 asks for 3xTF32 at any K");
        assertNull(tensor(MathMode.FP32, 4096, 4096, 4096, ALLOCATION + 4, ALLOCATION), "A not 16-byte aligned");
        assertNull(tensor(MathMode.FP32, 4096, 4096, 4098, ALLOCATION, ALLOCATION), "lda not a multiple of 4");
        assertNull(tensor(MathMode.FP32, 1024, 1024, 4096, ALLOCATION, ALLOCATION), "64 tiles leave SMs idle");
        assertNull(tensor(MathMode.SIMT_FP32, 4096, 4096, 4096, ALLOCATION, ALLOCATION));
    }

    @Test
    void fp32TakesTheTablesTensorCoreTileOnlyNearTheShapeWhereItWon() {
        GemmConfig wgmma = tensor(MathMode.FP32, 128, 4096, 4096, ALLOCATION, ALLOCATION);
        assertEquals("cg4j_wgmma_3xtf32_sgemm_f32_128x64x32_4_tnt_align4_bias_f32_relu_splitk", wgmma.kernelName());
        assertEquals(2, wgmma.slices());
        GemmConfig unsplit = tensor(MathMode.FP32, 256, 4096, 4096, ALLOCATION, ALLOCATION);
        assertEquals("cg4j_wgmma_3xtf32_sgemm_f32_128x64x32_4_tnt_align4_bias_f32_relu", unsplit.kernelName());
        assertEquals(1, unsplit.slices());
        GemmConfig four = tensor(MathMode.FP32, 32, 4096, 4096, ALLOCATION, ALLOCATION);
        assertEquals("cg4j_wgmma_3xtf32_sgemm_f32_64x64x32_4_tnt_align4_bias_f32_relu_splitk", four.kernelName());
        assertEquals(4, four.slices());
        // Without wgmma (the sm_80 image) the entries say nothing: FP32 takes SIMT, TF32X3 its split-K tile
        // with the slices of a shape not measured.
        SgemmTuning.Entry entry = TUNING.nearest(128, 4096, 4096);
        assertNull(Sgemm.tensorCorePlan(SM80_CONFIGS, TUNING, H200_MULTIPROCESSORS, MathMode.FP32, entry, 128, 4096,
                4096, true, GemmConfig.Epilogue.BIAS_RELU, ALLOCATION, ALLOCATION));
        GemmConfig split = Sgemm.tensorCorePlan(SM80_CONFIGS, TUNING, H200_MULTIPROCESSORS, MathMode.TF32X3, entry,
                128, 4096, 4096, true, GemmConfig.Epilogue.BIAS_RELU, ALLOCATION, ALLOCATION);
        assertEquals("cg4j_tensorop_3xtf32_sgemm_f32_64x64x32_4_tnt_align4_bias_f32_relu_splitk", split.kernelName());
        assertEquals(2, split.slices(), "128 tiles leave SMs idle");
        assertNull(tensor(MathMode.FP32, 128, 1024, 1024, ALLOCATION, ALLOCATION), "SIMT won at width 1024");
        assertNull(tensor(MathMode.FP32, 8, 4096, 4096, ALLOCATION, ALLOCATION), "not measured at 8 rows");
    }

    @Test
    void tensorCoreModesAlwaysTakeTheirOwnInstancesAndAlign1ForUnalignedOperands() {
        for (MathMode mode : new MathMode[] {MathMode.TF32X3, MathMode.TF32}) {
            GemmConfig large = tensor(mode, 4096, 4096, 4096, ALLOCATION, ALLOCATION);
            assertEquals(mode, large.math());
            assertEquals(128, large.tileM());
            assertEquals(GemmConfig.Mainloop.WGMMA, large.mainloop(), "the H200 has the wgmma tile");
            GemmConfig skinny = tensor(mode, 1, 512, 512, ALLOCATION, ALLOCATION);
            assertEquals(mode, skinny.math());
            assertEquals(2, skinny.slices(), "8 tiles of 64 columns leave the SMs idle");
            GemmConfig odd = tensor(mode, 4096, 4096, 4095, ALLOCATION, ALLOCATION);
            assertEquals(1, odd.alignment(), "K = 4095: A's rows are not 16-byte aligned");
            assertEquals(1, odd.slices(), "4096 tiles fill the SMs");
            assertEquals(1, tensor(mode, 7, 9, 3, ALLOCATION, ALLOCATION).slices(), "K of one k-tile");
            assertEquals(1, Sgemm.tensorCorePlan(CONFIGS, TUNING, H200_MULTIPROCESSORS, mode, null, 7, 9, 0, true,
                    GemmConfig.Epilogue.BIAS_RELU, ALLOCATION, ALLOCATION).slices(), "K = 0, no k-tile at all");
        }
    }

    @Test
    void aTensorCoreModeWithoutItsInstancesOnThisDeviceNamesWhatIsMissing() {
        List<GemmConfig> simtOnly = CONFIGS.stream().filter(c -> c.math() == MathMode.SIMT_FP32).toList();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Sgemm.tensorCorePlan(simtOnly, TUNING,
                H200_MULTIPROCESSORS, MathMode.TF32X3, null, 64, 64, 64, true, GemmConfig.Epilogue.BIAS_RELU, 0, 0));
        assertTrue(e.getMessage().contains("TF32X3"), e.getMessage());
    }

    @Test
    void theSmallSharedMemoryOfSm86LeavesTheLargeTensorCoreTileOut() {
        // ShippedKernels drops instances above the device's opt-in shared memory (99 KB on sm_86).
        List<GemmConfig> sm86 = SM80_CONFIGS.stream().filter(c -> c.sharedMemBytes() <= 99 * 1024).toList();
        GemmConfig config = Sgemm.tensorCorePlan(sm86, TUNING, 84, MathMode.TF32X3, null, 4096, 4096, 4096, true,
                GemmConfig.Epilogue.BIAS_RELU, 0, 0);
        assertEquals(64, config.tileM());
        assertEquals(1, config.slices());
    }

    private static GemmConfig tensor(MathMode mode, int m, int n, int k, long a, long b) {
        return Sgemm.tensorCorePlan(CONFIGS, TUNING, H200_MULTIPROCESSORS, mode, TUNING.nearest(m, n, k), m, n, k, true,
                GemmConfig.Epilogue.BIAS_RELU, a, b);
    }
}
