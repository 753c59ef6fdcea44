package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The workspace an {@link Mlp} allocates, planned on the shipped manifest and tuning table without
 * a GPU: it holds the split-K launch the chooser plans for every layer at every batch up to the
 * stack's largest (so {@link Sgemm#choose} never cuts slices to fit), and no more than the largest
 * of those launches needs.
 */
class MlpWorkspaceTest {
    private static final List<GemmConfig> CONFIGS = KernelManifest.load().gemmConfigs(KernelManifestTest.H200_IMAGE);
    private static final SgemmTuning TUNING = SgemmTuning.load();
    private static final int[][] STACKS = {{512, 512, 512}, {1024, 1024}, {96, 512, 257, 512, 64}, {640, 2048, 640},
            {4096, 16, 4096}, {384, 384, 384, 384, 384, 384, 384}};
    /** An A100's, an H200's and a B200-sized multiprocessor count: the table's slices scale with it. */
    private static final int[] MULTIPROCESSORS = {108, 132, 148};
    private static final int[] MAX_BATCHES = {1, 7, 32, 100, 256};

    @Test
    void theWorkspaceHoldsEverySplitTheChooserPlansForEachLayerAndBatch() {
        for (int[] widths : STACKS) {
            for (int sms : MULTIPROCESSORS) {
                for (int maxBatch : MAX_BATCHES) {
                    GemmWorkspace.Size size = Mlp.workspaceSize(CONFIGS, TUNING, sms, widths, fp32(widths), maxBatch);
                    GemmWorkspace.Size largest = GemmWorkspace.Size.NONE;
                    int splits = 0;
                    for (int layer = 0; layer + 1 < widths.length; layer++) {
                        for (int batch = 1; batch <= maxBatch; batch++) {
                            for (GemmConfig split : plans(sms, batch, widths[layer + 1], widths[layer])) {
                                String what = Arrays.toString(widths) + " on " + sms + " SMs, layer " + layer + " batch "
                                        + batch + ": " + split.kernelName() + " x" + split.slices() + " in " + size;
                                assertTrue(size.holds(split, batch, widths[layer + 1]), what);
                                largest = largest.max(GemmWorkspace.Size.of(split, batch, widths[layer + 1]));
                                splits += split.slices() > 1 ? 1 : 0;
                            }
                        }
                    }
                    assertEquals(largest, size, "no larger than the largest planned launch needs");
                    assertTrue(splits > 0, Arrays.toString(widths) + " splits at some batch up to " + maxBatch);
                }
            }
        }
    }

    @Test
    void batchOneAtWidth512TakesTheTablesSixteenSlicesOfTheSixteenBy64Tile() {
        GemmConfig split = planned(132, 1, 512, 512);
        assertEquals(16, split.tileM());
        assertEquals(64, split.tileN());
        assertEquals(16, split.slices());
        // 16 partial rows of 512, and one ticket for each of the 8 column tiles.
        assertEquals(new GemmWorkspace.Size(16 * 512, 8),
                Mlp.workspaceSize(CONFIGS, TUNING, 132, new int[] {512, 512}, fp32(new int[] {512, 512}), 1));
    }

    @Test
    void batchesAboveTheTablesLargestAddNothing() {
        for (int[] widths : STACKS) {
            assertEquals(Mlp.workspaceSize(CONFIGS, TUNING, 132, widths, fp32(widths), 256),
                    Mlp.workspaceSize(CONFIGS, TUNING, 132, widths, fp32(widths), 4096), Arrays.toString(widths));
        }
    }

    @Test
    void aSizeHoldsWhatFitsAndOneSliceNeedsNothing() {
        GemmConfig split = planned(132, 1, 512, 512);
        GemmWorkspace.Size needed = GemmWorkspace.Size.of(split, 1, 512);
        assertTrue(needed.holds(split, 1, 512));
        assertFalse(new GemmWorkspace.Size(needed.partialFloats() - 1, needed.tickets()).holds(split, 1, 512));
        assertFalse(new GemmWorkspace.Size(needed.partialFloats(), needed.tickets() - 1).holds(split, 1, 512));
        assertTrue(GemmWorkspace.Size.NONE.holds(split.withSlices(1), 256, 4096));
    }

    @Test
    void a3xTf32StackHoldsItsTensorCoreSplitsAtEveryBatch() {
        int[] widths = {1024, 1024, 1024};
        List<MathMode> modes = List.of(MathMode.TF32X3, MathMode.TF32X3);
        GemmWorkspace.Size size = Mlp.workspaceSize(CONFIGS, TUNING, 132, widths, modes, 300);
        for (int batch = 1; batch <= 300; batch++) {
            GemmConfig plan = Sgemm.tensorCorePlan(CONFIGS, TUNING, 132, MathMode.TF32X3,
                    TUNING.nearest(batch, 1024, 1024), batch, 1024, 1024, true, GemmConfig.Epilogue.BIAS_RELU, 0, 0);
            assertEquals(MathMode.TF32X3, plan.math(), plan.kernelName());
            assertTrue(size.holds(plan, batch, 1024), batch + ": " + plan.kernelName() + " x" + plan.slices());
        }
    }

    private static List<MathMode> fp32(int[] widths) {
        return Collections.nCopies(widths.length - 1, MathMode.FP32);
    }

    /**
     * The split-K launches the chooser may take for an FP32 fused layer where a workspace is given:
     * the tensor-core plan for aligned operands where it has one, and the SIMT table's launch.
     */
    private static List<GemmConfig> plans(int sms, int batch, int out, int in) {
        SgemmTuning.Entry entry = TUNING.nearest(batch, out, in);
        List<GemmConfig> plans = new ArrayList<>();
        GemmConfig tensor = Sgemm.tensorCorePlan(CONFIGS, TUNING, sms, MathMode.FP32, entry, batch, out, in, true,
                GemmConfig.Epilogue.BIAS_RELU, 0, 0);
        if (tensor != null) {
            plans.add(tensor);
        }
        GemmConfig simt = planned(sms, batch, out, in);
        if (simt != null) {
            plans.add(simt);
        }
        return plans;
    }

    /** The SIMT split-K launch the chooser takes for a fused layer where a workspace is given. */
    private static GemmConfig planned(int sms, int batch, int out, int in) {
        return Sgemm.tuned(CONFIGS, TUNING, sms, TUNING.nearest(batch, out, in), in, true,
                GemmConfig.Epilogue.BIAS_RELU);
    }
}
