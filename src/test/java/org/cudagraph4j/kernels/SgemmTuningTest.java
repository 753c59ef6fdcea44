package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SgemmTuningTest {
    private static final SgemmTuning TABLE = SgemmTuning.parse("""
            # a comment
            sms\t132
            1\t512\t512\t16x64\t8
            32\t512\t512\t32x32\t16\t9.4\t22.7\tgemv_8x8_w4\t4.9
            128\t512\t512\t32x32_r4\t4
            256\t4096\t4096\t64x64_r2\t2\t254.4\t289.9\t-\t-\t3xtf32_64x64\t1\t189.8
            512\t4096\t4096\t64x64_r2\t2\t510.0\t560.0\t-\t-\t3xtf32_wgmma_128x64\t1\t250.0
            """);

    @Test
    void theNearestShapeIsFoundByRatiosAndLargeProblemsAreNotSkinny() {
        assertEquals(new SgemmTuning.Entry(32, 512, 512, 32, 32, 0, 16, 8, 8, 4, 0, 0, 0, false),
                TABLE.nearest(30, 600, 480));
        assertEquals(new SgemmTuning.Entry(1, 512, 512, 16, 64, 0, 8), TABLE.nearest(2, 512, 512));
        assertEquals(new SgemmTuning.Entry(128, 512, 512, 32, 32, 4, 4), TABLE.nearest(100, 512, 512));
        assertEquals(new SgemmTuning.Entry(256, 4096, 4096, 64, 64, 2, 2, 0, 0, 0, 64, 64, 1, false),
                TABLE.nearest(200, 3000, 5000));
        assertNull(TABLE.nearest(513, 512, 512), "above the table's largest m nothing is split");
    }

    @Test
    void a3xTf32ColumnNamesTheTensorCoreTileAndSlicesAndCountsOnlyNearItsShape() {
        SgemmTuning.Entry entry = TABLE.nearest(256, 4096, 4096);
        assertTrue(entry.tensorCoresWin());
        assertEquals(1, TABLE.tensorCoreSlicesFor(entry, 132));
        assertEquals(2, TABLE.tensorCoreSlicesFor(entry, 264), "slices scale with the multiprocessors");
        assertTrue(entry.tensorCoresWinNear(128, 2048, 8192));
        assertFalse(entry.tensorCoresWinNear(256, 1024, 4096), "a quarter of the measured width is too far");
        assertFalse(TABLE.nearest(1, 512, 512).tensorCoresWin());
        for (String row : new String[] {"-\t-\t64x64\t1\t9.0", "-\t-\t3xtf32_64\t1\t9.0", "-\t-\t3xtf32_64x64\t1"}) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> SgemmTuning.parse("sms\t132\n1\t512\t512\t16x64\t8\t5.5\t22.3\t" + row + "\n"), row);
            assertTrue(e.getMessage().contains("line 2 is malformed"), e.getMessage());
        }
    }

    @Test
    void aGemvColumnNamesTheGemvTileAndWarpsWhereOneWon() {
        SgemmTuning.Entry entry = TABLE.nearest(32, 512, 512);
        assertTrue(entry.gemvWins());
        assertEquals(8, entry.gemvTileN());
        assertEquals(4, entry.gemvWarps());
        GemmConfig fourWarps = gemv(8, 8, 128);
        assertTrue(entry.isWinningGemv(fourWarps));
        assertFalse(entry.isWinningGemv(gemv(8, 8, 512)), "the same tile on 16 warps is another instance");
        assertFalse(TABLE.nearest(1, 512, 512).isWinningGemv(fourWarps), "no gemv column: the split-K launch won");
        assertTrue(!TABLE.nearest(1, 512, 512).gemvWins(), "no gemv column: the split-K launch won");
        for (String gemv : new String[] {"8x8", "gemv_8", "gemv_8x8x128", "split_8x8", "gemv_8x8", "gemv_8x8_w",
                "gemv_8x8_w4_w4"}) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> SgemmTuning.parse("sms\t132\n1\t512\t512\t16x64\t8\t5.5\t22.3\t" + gemv + "\t2.6\n"), gemv);
            assertTrue(e.getMessage().contains("line 2 is malformed"), e.getMessage());
        }
    }

    @Test
    void everyGemvTileOfTheShippedTableIsAShippedGemvInstanceForBothEpilogues() {
        var configs = KernelManifest.load().gemmConfigs(KernelManifestTest.H200_IMAGE);
        List<SgemmTuning.Entry> gemv = entriesOf(SgemmTuning.load()).stream().filter(SgemmTuning.Entry::gemvWins)
                .toList();
        assertTrue(gemv.size() >= 3, "the shipped table has GEMV rows at batch 1 to 32: " + gemv);
        for (SgemmTuning.Entry entry : gemv) {
            assertTrue(entry.m() <= 32, entry + ": GEMV instances are measured at batch 1 to 32 only");
            for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
                assertEquals(1, configs.stream().filter(c -> entry.isWinningGemv(c) && c.epilogue() == epilogue)
                        .count(), entry + " " + epilogue);
            }
        }
    }

    @Test
    void aGemvInstanceReadsBTransposedFourFloatsAtATimeAndNeverSplits() {
        var gemv = KernelManifest.load().gemmConfigs(KernelManifestTest.H200_IMAGE).stream()
                .filter(c -> c.mainloop() == GemmConfig.Mainloop.GEMV).toList();
        assertEquals(6, gemv.size(), "8x4 and 8x8 on 4 warps and 8x4 on 16, each with both epilogues: " + gemv);
        for (GemmConfig c : gemv) {
            assertTrue(c.bTransposed() && c.alignment() == 4 && !c.splitK() && c.sharedMemBytes() == 0, c.toString());
            assertTrue(c.kernelName().startsWith("cg4j_simt_gemv_f32_" + c.tileM() + "x" + c.tileN() + "x128_"), c.kernelName());
        }
        IllegalArgumentException split = assertThrows(IllegalArgumentException.class, () -> new GemmConfig("g",
                GemmConfig.Epilogue.BIAS_RELU, 8, 8, 128, 1, 128, 0, true, 4, true, 1, 0, GemmConfig.Mainloop.GEMV, MathMode.SIMT_FP32));
        assertEquals("g: a GEMV instance reads B stored [N, K] 4 floats at a time and does not split K",
                split.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new GemmConfig("g", GemmConfig.Epilogue.BIAS_RELU, 8, 8,
                128, 1, 128, 0, false, 4, false, 1, 0, GemmConfig.Mainloop.GEMV, MathMode.SIMT_FP32));
        assertThrows(IllegalArgumentException.class, () -> new GemmConfig("g", GemmConfig.Epilogue.BIAS_RELU, 8, 8,
                128, 1, 128, 0, true, 1, false, 1, 0, GemmConfig.Mainloop.GEMV, MathMode.SIMT_FP32));
    }

    @Test
    void a3xTf32WgmmaColumnNamesATileOfTheWgmmaMainloopSplitWhereItHasSlices() {
        SgemmTuning.Entry entry = TABLE.nearest(512, 4096, 4096);
        assertTrue(entry.tensorCoreWgmma() && entry.tensorCoreTileM() == 128 && entry.tensorCoreTileN() == 64);
        assertFalse(TABLE.nearest(256, 4096, 4096).tensorCoreWgmma());
        GemmConfig wgmma = new GemmConfig("w", GemmConfig.Epilogue.BIAS_RELU, 128, 64, 32, 4, 256, 0, true, 4, false,
                1, 0, GemmConfig.Mainloop.WGMMA, MathMode.TF32X3);
        assertTrue(entry.isWinningWgmma(wgmma));
        assertFalse(entry.isWinningWgmma(new GemmConfig("t", GemmConfig.Epilogue.BIAS_RELU, 128, 64, 32, 4, 256, 0,
                true, 4, false, 1, 0, GemmConfig.Mainloop.TILED, MathMode.TF32X3)), "same tile, not wgmma");
        assertFalse(entry.isWinningWgmma(new GemmConfig("s", GemmConfig.Epilogue.BIAS_RELU, 128, 64, 32, 4, 256, 0,
                true, 4, true, 1, 0, GemmConfig.Mainloop.WGMMA, MathMode.TF32X3)), "one slice: the unsplit instance");
        SgemmTuning.Entry split = SgemmTuning.parse(
                "sms\t132\n128\t4096\t4096\t64x64_r2\t4\t136.5\t191.6\t-\t-\t3xtf32_wgmma_128x64\t2\t83.3\n")
                .nearest(128, 4096, 4096);
        assertTrue(split.isWinningWgmma(new GemmConfig("s", GemmConfig.Epilogue.BIAS_RELU, 128, 64, 32, 4, 256, 0,
                true, 4, true, 1, 0, GemmConfig.Mainloop.WGMMA, MathMode.TF32X3)), "two slices: the split-K instance");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SgemmTuning.parse(
                "sms\t132\n256\t4096\t4096\t64x64_r2\t2\t254.4\t289.9\t-\t-\t3xtf32_wgmma_128x64\t0\t189.8\n"));
        assertTrue(e.getMessage().contains("line 2 is malformed"), e.getMessage());
        IllegalArgumentException simt = assertThrows(IllegalArgumentException.class, () -> new GemmConfig("w",
                GemmConfig.Epilogue.BIAS_RELU, 128, 64, 32, 4, 256, 0, true, 4, false, 1, 0, GemmConfig.Mainloop.WGMMA,
                MathMode.SIMT_FP32));
        assertEquals("w: a WGMMA instance computes on the tensor cores and reads B stored [N, K]", simt.getMessage());
    }

    @Test
    void slicesScaleWithTheMultiprocessorCount() {
        SgemmTuning.Entry entry = TABLE.nearest(32, 512, 512);
        assertEquals(16, TABLE.slicesFor(entry, 132));
        assertEquals(5, TABLE.slicesFor(entry, 40));
        assertEquals(1, TABLE.slicesFor(TABLE.nearest(256, 4096, 4096), 20), "never below one slice");
    }

    @Test
    void aMalformedLineIsNamed() {
        for (String tile : new String[] {"16by64", "16x64_r", "16x64_r4_r4", "16x64x16", "16x64_b4"}) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> SgemmTuning.parse("sms\t132\n1\t512\t512\t" + tile + "\t8\n"), tile);
            assertTrue(e.getMessage().contains("line 2 is malformed"), e.getMessage());
        }
    }

    @Test
    void everyShippedEntryNamesAShippedSplitKInstanceForBothLayoutsAndEpilogues() {
        var configs = KernelManifest.load().gemmConfigs(KernelManifestTest.H200_IMAGE);
        for (SgemmTuning.Entry entry : entriesOf(SgemmTuning.load())) {
            for (boolean bTransposed : new boolean[] {false, true}) {
                for (GemmConfig.Epilogue epilogue : GemmConfig.Epilogue.values()) {
                    assertEquals(1, configs.stream()
                            .filter(c -> c.splitK() && c.bTransposed() == bTransposed && c.epilogue() == epilogue)
                            .filter(c -> c.tileM() == entry.tileM() && c.tileN() == entry.tileN()
                                    && c.reductionBatch() == entry.reductionBatch())
                            .count(), entry + " " + epilogue + (bTransposed ? " tnt" : " ttt"));
                }
            }
        }
    }

    @Test
    void theShippedInstancesIncludeBatchedReductionsAndOnlySplitKOnesHaveOne() {
        var configs = KernelManifest.load().gemmConfigs(KernelManifestTest.H200_IMAGE);
        assertTrue(configs.stream().anyMatch(c -> c.reductionBatch() == 4 && c.tileM() == 32 && c.tileN() == 32));
        assertTrue(configs.stream().anyMatch(c -> c.reductionBatch() == 2 && c.tileM() == 64 && c.tileN() == 64));
        assertTrue(configs.stream().filter(c -> !c.splitK()).allMatch(c -> c.reductionBatch() == 0));
        assertTrue(configs.stream().filter(c -> c.reductionBatch() > 0)
                .allMatch(c -> c.kernelName().endsWith("_splitk_r" + c.reductionBatch())), "the name says the batch");
    }

    private static GemmConfig gemv(int tileM, int tileN, int threads) {
        return new GemmConfig("g", GemmConfig.Epilogue.BIAS_RELU, tileM, tileN, 128, 1, threads, 0, true, 4, false, 1,
                0, GemmConfig.Mainloop.GEMV, MathMode.SIMT_FP32);
    }

    private static List<SgemmTuning.Entry> entriesOf(SgemmTuning table) {
        List<SgemmTuning.Entry> entries = new ArrayList<>();
        for (int width : new int[] {512, 1024, 4096}) {
            for (int batch : new int[] {1, 8, 32, 128, 256}) {
                entries.add(table.nearest(batch, width, width));
            }
        }
        return entries;
    }

    @Test
    void theShippedTableLoadsAndCoversTheInferenceShapes() {
        SgemmTuning shipped = SgemmTuning.load();
        for (int width : new int[] {512, 1024, 4096}) {
            for (int batch : new int[] {1, 8, 32, 128, 256}) {
                SgemmTuning.Entry entry = shipped.nearest(batch, width, width);
                assertEquals(batch, entry.m(), "batch " + batch + " width " + width);
                assertEquals(width, entry.n());
            }
        }
    }

    @Test
    void onlySplitKInstancesTakeSlices() {
        GemmConfig plain = new GemmConfig("plain", GemmConfig.Epilogue.BIAS_RELU, 64, 32, 16, 3, 64, 19200, true, 1,
                false, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> plain.withSlices(2));
        assertEquals("plain cannot run with 2 slices: it does not split K", e.getMessage());
        GemmConfig split = new GemmConfig("split", GemmConfig.Epilogue.BIAS_RELU, 32, 32, 16, 4, 64, 18432, true, 1,
                true, 1);
        assertEquals(8, split.withSlices(8).grid(33, 64).z());
        assertEquals(3, split.maxSlices(33));
        assertThrows(IllegalArgumentException.class, () -> split.withSlices(0));
        assertEquals(4, new GemmConfig("batched", GemmConfig.Epilogue.BIAS_RELU, 32, 32, 16, 4, 64, 18432, true, 1,
                true, 1, 4).withSlices(8).reductionBatch(), "withSlices keeps the reduction batch");
        IllegalArgumentException batch = assertThrows(IllegalArgumentException.class,
                () -> new GemmConfig("plain", GemmConfig.Epilogue.BIAS_RELU, 64, 32, 16, 3, 64, 19200, true, 1,
                        false, 1, 4));
        assertEquals("plain cannot have a reduction batch of 4: it does not split K", batch.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new GemmConfig("split", GemmConfig.Epilogue.BIAS_RELU, 32,
                32, 16, 4, 64, 18432, true, 1, true, 1, -1));
    }
}
