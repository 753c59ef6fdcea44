package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SgemmTuningTest {
    private static final SgemmTuning TABLE = SgemmTuning.parse("""
            # a comment
            sms\t132
            1\t512\t512\t16x64\t8
            32\t512\t512\t32x32\t16
            256\t4096\t4096\t64x64\t2
            """);

    @Test
    void theNearestShapeIsFoundByRatiosAndLargeProblemsAreNotSkinny() {
        assertEquals(new SgemmTuning.Entry(32, 512, 512, 32, 32, 16), TABLE.nearest(30, 600, 480));
        assertEquals(new SgemmTuning.Entry(1, 512, 512, 16, 64, 8), TABLE.nearest(2, 512, 512));
        assertEquals(new SgemmTuning.Entry(256, 4096, 4096, 64, 64, 2), TABLE.nearest(200, 3000, 5000));
        assertNull(TABLE.nearest(257, 512, 512), "above the table's largest m nothing is split");
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
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> SgemmTuning.parse("sms\t132\n1\t512\t512\t16by64\t8\n"));
        assertTrue(e.getMessage().contains("line 2 is malformed"), e.getMessage());
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
    }
}
