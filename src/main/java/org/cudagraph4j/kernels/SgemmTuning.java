package org.cudagraph4j.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The split-K tuning table shipped beside the kernels ({@code kernels/tuning/sgemm-tuning.tsv}): for
 * each measured skinny shape, the split-K tile and slice count that ran fastest, and the
 * multiprocessor count it was measured with. {@code kernels/PERFORMANCE.md} says how it is measured.
 *
 * <p>Thread safety: immutable.
 */
final class SgemmTuning {
    static final String RESOURCE = "sgemm-tuning.tsv";

    /**
     * The best split-K launch measured for one (m, n, k): the instance by its tile and reduction batch;
     * the GEMV instance by its tile and warps where one ran faster still (0 x 0 where none did); and
     * the 3xTF32 tile and slices where that ran faster than both (0 x 0 where it did not, or was not
     * measured): a split-K tile of the {@code mma.sync} mainloop, or with {@code tensorCoreWgmma} an
     * sm_90 {@code wgmma} tile (its unsplit instance at one slice, its split-K one at more). GEMV and
     * tensor-core instances need aligned operands: where they are not, the SIMT split-K launch is the
     * fallback.
     */
    record Entry(int m, int n, int k, int tileM, int tileN, int reductionBatch, int slices, int gemvTileM,
            int gemvTileN, int gemvWarps, int tensorCoreTileM, int tensorCoreTileN, int tensorCoreSlices,
            boolean tensorCoreWgmma) {
        Entry(int m, int n, int k, int tileM, int tileN, int reductionBatch, int slices) {
            this(m, n, k, tileM, tileN, reductionBatch, slices, 0, 0, 0, 0, 0, 0, false);
        }

        /**
         * {@return whether {@code config} is the wgmma instance that won here: its mainloop and its tile,
         * split-K where the entry has more than one slice}
         */
        boolean isWinningWgmma(GemmConfig config) {
            return tensorCoreWgmma && config.mainloop() == GemmConfig.Mainloop.WGMMA
                    && config.tileM() == tensorCoreTileM && config.tileN() == tensorCoreTileN
                    && config.splitK() == (tensorCoreSlices > 1);
        }

        boolean gemvWins() {
            return gemvTileM > 0;
        }

        /** {@return whether {@code config} is the GEMV instance that won here: its tile and its warps} */
        boolean isWinningGemv(GemmConfig config) {
            return gemvWins() && config.mainloop() == GemmConfig.Mainloop.GEMV && config.tileM() == gemvTileM
                    && config.tileN() == gemvTileN && config.threads() == 32 * gemvWarps;
        }

        boolean tensorCoresWin() {
            return tensorCoreTileM > 0;
        }

        /**
         * Whether the 3xTF32 launch won at this entry and (m, n, k) is within a factor of 2 of it in
         * every dimension: the table's nearest entry may lie far from a problem, and the tensor-core
         * tiles were measured to win only at the shapes recorded.
         */
        boolean tensorCoresWinNear(int m, int n, int k) {
            return tensorCoresWin() && 2L * m >= this.m && 2L * n >= this.n && 2L * k >= this.k
                    && m <= 2L * this.m && n <= 2L * this.n && k <= 2L * this.k;
        }
    }

    private final int multiprocessors;
    private final List<Entry> entries;
    /** Each entry's log m, log n, log k: {@link #nearest} runs on every launch that chooses. */
    private final double[][] logs;
    private final int largestM;

    SgemmTuning(int multiprocessors, List<Entry> entries) {
        if (multiprocessors < 1 || entries.isEmpty()) {
            throw new IllegalArgumentException("a tuning table needs a multiprocessor count and at least one entry");
        }
        this.multiprocessors = multiprocessors;
        this.entries = List.copyOf(entries);
        this.logs = entries.stream().map(e -> new double[] {Math.log(e.m()), Math.log(e.n()), Math.log(e.k())})
                .toArray(double[][]::new);
        this.largestM = entries.stream().mapToInt(Entry::m).max().orElseThrow();
    }

    static SgemmTuning load() {
        try (InputStream in = SgemmTuning.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("the kernels' " + RESOURCE + " is missing from the jar");
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE, e);
        }
    }

    /**
     * Lines "sms N", then "m n k tile slices us unsplit_us [gemv us [3xtf32 slices us]]" (tab-separated),
     * where tile is "tileMxtileN" for an instance that adds partials one slice at a time and
     * "tileMxtileN_rB" for one with reduction batch B, gemv is "gemv_tileMxtileN_wW" (W warps a block)
     * or "-" for none (its time then "-" too), and 3xtf32 is "3xtf32_tileMxtileN" for a split-K tile or
     * "3xtf32_wgmma_tileMxtileN" for an sm_90 wgmma one; '#' starts a comment.
     */
    static SgemmTuning parse(String text) {
        int sms = 0;
        List<Entry> entries = new ArrayList<>();
        int number = 0;
        for (String line : text.split("\n")) {
            number++;
            String content = line.strip();
            if (content.isEmpty() || content.startsWith("#")) {
                continue;
            }
            String[] fields = content.split("\t");
            try {
                if (fields[0].equals("sms")) {
                    sms = Integer.parseInt(fields[1]);
                    continue;
                }
                String[] instance = fields[3].split("_r", -1);
                if (instance.length > 2) {
                    throw new IllegalArgumentException("tile " + fields[3]);
                }
                int[] tile = tile(instance[0], fields[3]);
                int[] gemv = {0, 0, 0};
                if (fields.length > 7 && !fields[7].equals("-")) {
                    String[] tileAndWarps = fields[7].split("_w", -1);
                    if (!fields[7].startsWith("gemv_") || tileAndWarps.length != 2) {
                        throw new IllegalArgumentException("GEMV instance " + fields[7]);
                    }
                    int[] gemvTile = tile(tileAndWarps[0].substring("gemv_".length()), fields[7]);
                    gemv = new int[] {gemvTile[0], gemvTile[1], Integer.parseInt(tileAndWarps[1])};
                }
                int[] tensor = {0, 0};
                int tensorSlices = 0;
                boolean wgmma = false;
                if (fields.length > 9) {
                    if (!fields[9].startsWith("3xtf32_") || fields.length != 12) {
                        throw new IllegalArgumentException("3xTF32 tile " + fields[9]);
                    }
                    String tensorTile = fields[9].substring("3xtf32_".length());
                    wgmma = tensorTile.startsWith("wgmma_");
                    tensor = tile(wgmma ? tensorTile.substring("wgmma_".length()) : tensorTile, fields[9]);
                    tensorSlices = Integer.parseInt(fields[10]);
                    if (tensorSlices < 1) {
                        throw new IllegalArgumentException(tensorSlices + " slices");
                    }
                }
                entries.add(new Entry(Integer.parseInt(fields[0]), Integer.parseInt(fields[1]),
                        Integer.parseInt(fields[2]), tile[0], tile[1],
                        instance.length == 2 ? Integer.parseInt(instance[1]) : 0, Integer.parseInt(fields[4]),
                        gemv[0], gemv[1], gemv[2], tensor[0], tensor[1], tensorSlices, wgmma));
            } catch (RuntimeException e) {
                throw new IllegalStateException(RESOURCE + " line " + number + " is malformed: " + line, e);
            }
        }
        return new SgemmTuning(sms, entries);
    }

    /** "MxN" as {M, N}. */
    private static int[] tile(String dimensions, String field) {
        String[] parts = dimensions.split("x", -1);
        if (parts.length != 2) {
            throw new IllegalArgumentException("tile " + field);
        }
        return new int[] {Integer.parseInt(parts[0]), Integer.parseInt(parts[1])};
    }

    /**
     * The entry nearest to (m, n, k), each dimension compared by its ratio; null when m is above the
     * table's largest (the problem is not skinny).
     */
    Entry nearest(int m, int n, int k) {
        if (m > largestM) {
            return null;
        }
        double logM = Math.log(m);
        double logN = Math.log(n);
        double logK = Math.log(k);
        Entry best = null;
        double bestDistance = Double.MAX_VALUE;
        for (int i = 0; i < logs.length; i++) {
            double distance = Math.abs(logM - logs[i][0]) + Math.abs(logN - logs[i][1]) + Math.abs(logK - logs[i][2]);
            if (distance < bestDistance) {
                best = entries.get(i);
                bestDistance = distance;
            }
        }
        return best;
    }

    /** The entry's slices for a GPU with this many multiprocessors: the table keeps blocks per multiprocessor. */
    int slicesFor(Entry entry, int gpuMultiprocessors) {
        return scaled(entry.slices(), gpuMultiprocessors);
    }

    /** The entry's 3xTF32 slices, scaled as {@link #slicesFor}. */
    int tensorCoreSlicesFor(Entry entry, int gpuMultiprocessors) {
        return scaled(entry.tensorCoreSlices(), gpuMultiprocessors);
    }

    private int scaled(int slices, int gpuMultiprocessors) {
        return Math.max(1, (int) Math.round((double) slices * gpuMultiprocessors / multiprocessors));
    }
}
