package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.junit.jupiter.api.Test;

class KernelManifestTest {
    /** The image an H200 (compute capability 9.0) loads. */
    static final String H200_IMAGE = "cg4j_kernels.sm_90.cubin";

    private final KernelManifest manifest = KernelManifest.load();

    @Test
    void picksTheCubinOfTheDeviceArchitectureOrTheNearestLowerMinor() {
        assertEquals("cg4j_kernels.sm_80.cubin", manifest.imageFor(8, 0));
        assertEquals("cg4j_kernels.sm_80.cubin", manifest.imageFor(8, 6), "an sm_80 cubin runs on every 8.x GPU");
        assertEquals("cg4j_kernels.sm_80.cubin", manifest.imageFor(8, 9));
        assertEquals("cg4j_kernels.sm_90.cubin", manifest.imageFor(9, 0));
        assertEquals("cg4j_kernels.sm_100.cubin", manifest.imageFor(10, 3));
        assertEquals("cg4j_kernels.sm_120.cubin", manifest.imageFor(12, 1));
    }

    @Test
    void newerArchitecturesWithoutACubinGetThePtx() {
        assertEquals("cg4j_kernels.compute_120.ptx", manifest.imageFor(13, 0));
    }

    @Test
    void olderArchitecturesAreRefusedWithWhatIsShipped() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> manifest.imageFor(7, 5));
        assertTrue(e.getMessage().startsWith("no shipped cubin or PTX runs on compute capability 7.5; cudagraph4j ships sm_80,"),
                e.getMessage());
    }

    @Test
    void everyShippedImageIsInTheJar() {
        for (String image : List.of("cg4j_kernels.sm_80.cubin", "cg4j_kernels.sm_90.cubin", "cg4j_kernels.sm_100.cubin",
                "cg4j_kernels.sm_120.cubin", "cg4j_kernels.compute_120.ptx")) {
            assertTrue(KernelManifest.class.getResource(KernelManifest.RESOURCE_DIR + image) != null, image);
        }
    }

    @Test
    void seedConfigurationLaunchesExactlyAsTheSeedDiagramShows() {
        GemmConfig seed = manifest.gemmConfigs(H200_IMAGE).stream()
                .filter(c -> c.tileM() == 64 && c.tileN() == 32 && c.tileK() == 16 && c.bTransposed()
                        && c.epilogue() == GemmConfig.Epilogue.BIAS_RELU)
                .findFirst().orElseThrow();

        assertEquals(3, seed.stages());
        assertEquals(64, seed.threads());
        assertEquals(19200, seed.sharedMemBytes());
        assertEquals(Dim3.of(32, 20), seed.grid(2048, 640));
        assertTrue(seed.kernelName().startsWith("cg4j_simt_sgemm_f32_64x32x16_3_"), seed.kernelName());
    }

    @Test
    void shipsALargeTileInstanceForEveryEpilogueAndLayout() {
        for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
            for (boolean transposed : new boolean[] {false, true}) {
                assertTrue(manifest.gemmConfigs(H200_IMAGE).stream().anyMatch(c -> c.epilogue() == epilogue
                        && c.bTransposed() == transposed && c.tileM() * c.tileN() >= 128 * 128),
                        epilogue + (transposed ? " B transposed" : ""));
            }
        }
        assertTrue(manifest.epilogueKernel().contains("bias"), manifest.epilogueKernel());
    }

    @Test
    void shipsTheStandaloneEpilogueInEachFloatingPointFormat() {
        assertEquals("cg4j_epilogue_f32_bias_f32_relu", manifest.epilogueKernel(ElementType.FLOAT32));
        assertEquals("cg4j_epilogue_f16_bias_f16_relu", manifest.epilogueKernel(ElementType.FLOAT16));
        assertEquals("cg4j_epilogue_bf16_bias_bf16_relu", manifest.epilogueKernel(ElementType.BFLOAT16));
        assertEquals("the bias+ReLU epilogue takes FLOAT32, FLOAT16 or BFLOAT16 matrices, not INT8",
                assertThrows(IllegalArgumentException.class,
                        () -> manifest.epilogueKernel(ElementType.INT8)).getMessage());
    }

    @Test
    void shipsHalfPrecisionGemvsOfOneAndUpToEightRowsForEachHalfFormat() {
        assertEquals(List.of(new KernelManifest.HalfGemvKernel("cg4j_gemv_bf16_1x4_bias_bf16_relu", 1, 128, 4, 8),
                new KernelManifest.HalfGemvKernel("cg4j_gemv_bf16_8x4_bias_bf16_relu", 8, 128, 4, 8)),
                manifest.halfGemvKernels(ElementType.BFLOAT16));
        assertEquals(List.of("cg4j_gemv_f16_1x4_bias_f16_relu", "cg4j_gemv_f16_8x4_bias_f16_relu"),
                manifest.halfGemvKernels(ElementType.FLOAT16).stream().map(KernelManifest.HalfGemvKernel::name).toList());
        assertThrows(IllegalArgumentException.class, () -> manifest.halfGemvKernels(ElementType.FLOAT32));
    }

    @Test
    void theTransposedLayoutsTilesReadBSixteenBytesAtATimeInTheSameSharedMemory() {
        for (String tile : new String[] {"64x32x16", "128x128x16"}) {
            for (String epilogue : new String[] {"lincomb", "bias_f32_relu"}) {
                String prefix = "cg4j_simt_sgemm_f32_" + tile + "_3_tnt_align";
                GemmConfig align4 = config(prefix + "4_" + epilogue);
                GemmConfig align1 = config(prefix + "1_" + epilogue);
                assertTrue(align4.bTransposed() && align4.alignment() == 4 && !align4.splitK(), align4.toString());
                assertEquals(align1.sharedMemBytes(), align4.sharedMemBytes(), tile);
                assertEquals(align1.threads(), align4.threads(), tile);
            }
        }
        assertEquals(50688, config("cg4j_simt_sgemm_f32_128x128x16_3_tnt_align4_lincomb").sharedMemBytes());
    }

    @Test
    void tensorCoreInstancesCarryTheirMathAndReadAAsTheyReadB() {
        GemmConfig large = config("cg4j_tensorop_3xtf32_sgemm_f32_128x128x32_3_tnt_align4_bias_f32_relu");
        assertEquals(MathMode.TF32X3, large.math());
        assertEquals(4, large.alignmentA());
        assertEquals(110592, large.sharedMemBytes(), "above the 99 KB a block of sm_86, sm_89 or sm_120 may have");
        GemmConfig split = config("cg4j_tensorop_tf32_sgemm_f32_64x64x32_4_ttt_align1_lincomb_splitk");
        assertEquals(MathMode.TF32, split.math());
        assertEquals(1, split.alignmentA());
        assertTrue(split.splitK());
        assertEquals(MathMode.SIMT_FP32, config("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_lincomb").math());
        assertEquals(20, manifest.gemmConfigs("cg4j_kernels.sm_80.cubin").stream()
                .filter(c -> c.math().tensorCores()).count());
    }

    @Test
    void theWgmmaInstancesAreInTheSm90CubinAlone() {
        List<GemmConfig> wgmma = manifest.gemmConfigs(H200_IMAGE).stream()
                .filter(c -> c.mainloop() == GemmConfig.Mainloop.WGMMA).toList();
        assertEquals(14, wgmma.size(), wgmma.toString());
        assertEquals(4, wgmma.stream().filter(GemmConfig::splitK).count());
        for (GemmConfig c : wgmma) {
            assertTrue(c.math().tensorCores() && c.bTransposed(), c.toString());
            assertTrue(c.kernelName().startsWith("cg4j_wgmma_"), c.kernelName());
            assertEquals(c.tileM() / 64 * 128, c.threads(), "a warpgroup per 64 rows: " + c.kernelName());
        }
        for (String image : new String[] {"cg4j_kernels.sm_80.cubin", "cg4j_kernels.sm_100.cubin",
                "cg4j_kernels.sm_120.cubin", "cg4j_kernels.compute_120.ptx"}) {
            assertTrue(manifest.gemmConfigs(image).stream().noneMatch(c -> c.mainloop() == GemmConfig.Mainloop.WGMMA),
                    image);
            assertEquals(manifest.gemmConfigs(H200_IMAGE).size() - wgmma.size(), manifest.gemmConfigs(image).size(),
                    image + " has every other instance");
        }
    }

    @Test
    void anUnknownMainloopIsRefusedByName() {
        java.util.Properties properties = oneInstance("tnt", "3xtf32");
        properties.setProperty("kernel.k.mainloop", "tcgen05");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new KernelManifest(properties).gemmConfigs(H200_IMAGE));
        assertEquals("kernels manifest: k has an unknown mainloop tcgen05", e.getMessage());
    }

    @Test
    void anUnknownMathIsRefusedByName() {
        java.util.Properties properties = oneInstance("ttt", "fp8");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new KernelManifest(properties).gemmConfigs(H200_IMAGE));
        assertEquals("kernels manifest: k has an unknown math fp8", e.getMessage());
    }

    /** A manifest of one lincomb instance "k" of this layout and math, its numbers all 1. */
    private static java.util.Properties oneInstance(String layout, String math) {
        java.util.Properties properties = new java.util.Properties();
        properties.setProperty("kernels", "k");
        for (String key : new String[] {"tileM", "tileN", "tileK", "stages", "threads", "sharedMemBytes", "alignment"}) {
            properties.setProperty("kernel.k." + key, "1");
        }
        properties.setProperty("kernel.k.family", "sgemm_lincomb");
        properties.setProperty("kernel.k.layout", layout);
        properties.setProperty("kernel.k.math", math);
        return properties;
    }

    private GemmConfig config(String name) {
        return manifest.gemmConfigs(H200_IMAGE).stream().filter(c -> c.kernelName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError(name + " is not in the manifest"));
    }
}
