package org.cudagraph4j.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The 16-layer MLP comparison of one run: the native harness's lines ({@code mlp-native.log}, from
 * {@code kernels/test/skinny_test.cu}) against the PyTorch twin's ({@code mlp-torch.log}, from
 * {@code native/mlp_torch.py}) and cuBLASLt's ({@code mlp-cublaslt.log}, from
 * {@code native/mlp_cublaslt.cu}), as a Markdown table of µs per forward with the ratios to PyTorch's
 * graph replay and to cuBLASLt's graph, the targets, and a chart panel.
 */
final class MlpResults {
    private static final Pattern NATIVE = Pattern.compile("MLP16 native graph( PDL)?: width (\\d+) batch (\\d+): "
            + "([\\d.]+) us/forward sync each \\(median\\), ([\\d.]+) us pipelined; (\\S+) x(\\d+) slices");
    private static final Pattern TORCH = Pattern.compile(
            "MLP16 torch (eager|graph): width (\\d+) batch (\\d+): ([\\d.]+) us sync each, ([\\d.]+) us pipelined");
    private static final Pattern CUBLASLT = Pattern.compile("MLP16 cublaslt graph: width (\\d+) batch (\\d+): "
            + "([\\d.]+) us/forward sync each \\(median\\), ([\\d.]+) us pipelined");
    private static final Pattern TILE = Pattern.compile("_(\\d+x\\d+)x\\d+_");
    /** The harnesses' first line: "device: NVIDIA H200, 132 SMs". */
    private static final Pattern DEVICE = Pattern.compile("^device: ([^,]+),");

    /** Microseconds per forward, synchronising after each and pipelined. */
    record Time(double sync, double pipelined) {}

    /** One (width, batch) cell; any part may be missing (null). */
    static final class Cell {
        Time graph;
        Time graphPdl;
        Time torchEager;
        Time torchGraph;
        Time cublasLt;
        String config;
    }

    /** By width, then batch. */
    private final Map<Integer, Map<Integer, Cell>> cells = new TreeMap<>();
    private String device;

    /** Reads any of the logs; lines that are not results are skipped. A cell missing a side has ratio n/a. */
    void read(String log) {
        for (String line : log.split("\n")) {
            Matcher d = DEVICE.matcher(line);
            if (device == null && d.find()) {
                device = d.group(1);
                continue;
            }
            Matcher n = NATIVE.matcher(line);
            if (n.find()) {
                Cell cell = cell(Integer.parseInt(n.group(2)), Integer.parseInt(n.group(3)));
                Time time = new Time(Double.parseDouble(n.group(4)), Double.parseDouble(n.group(5)));
                if (n.group(1) != null) {
                    cell.graphPdl = time;
                } else {
                    cell.graph = time;
                }
                Matcher tile = TILE.matcher(n.group(6));
                String kind = n.group(6).contains("_gemv_") ? "gemv " : "";
                cell.config = kind + (tile.find() ? tile.group(1) : n.group(6)) + " x" + n.group(7);
                continue;
            }
            Matcher lt = CUBLASLT.matcher(line);
            if (lt.find()) {
                cell(Integer.parseInt(lt.group(1)), Integer.parseInt(lt.group(2))).cublasLt =
                        new Time(Double.parseDouble(lt.group(3)), Double.parseDouble(lt.group(4)));
                continue;
            }
            Matcher t = TORCH.matcher(line);
            if (t.find()) {
                Cell cell = cell(Integer.parseInt(t.group(2)), Integer.parseInt(t.group(3)));
                Time time = new Time(Double.parseDouble(t.group(4)), Double.parseDouble(t.group(5)));
                if (t.group(1).equals("graph")) {
                    cell.torchGraph = time;
                } else {
                    cell.torchEager = time;
                }
            }
        }
    }

    /** {@return the GPU the harnesses named on their first line, or null if none of the logs did} */
    String device() {
        return device;
    }

    boolean isEmpty() {
        return cells.isEmpty();
    }

    private Cell cell(int width, int batch) {
        return cells.computeIfAbsent(width, w -> new TreeMap<>()).computeIfAbsent(batch, b -> new Cell());
    }

    /** The fastest native time for a cell, PDL or not, synchronising after each forward. */
    private static Double best(Cell cell) {
        Double plain = cell.graph == null ? null : cell.graph.sync();
        Double pdl = cell.graphPdl == null ? null : cell.graphPdl.sync();
        if (plain == null) {
            return pdl;
        }
        return pdl == null ? plain : Math.min(plain, pdl);
    }

    /** The ratio to PyTorch's graph replay, synchronising after each forward, or null. */
    Double ratio(int width, int batch) {
        Cell cell = cells.getOrDefault(width, Map.of()).get(batch);
        if (cell == null || cell.torchGraph == null || best(cell) == null) {
            return null;
        }
        return best(cell) / cell.torchGraph.sync();
    }

    /** The ratio of the faster native graph to cuBLASLt's graph, synchronising after each forward, or null. */
    Double ratioToCublasLt(int width, int batch) {
        Cell cell = cells.getOrDefault(width, Map.of()).get(batch);
        if (cell == null || cell.cublasLt == null || best(cell) == null) {
            return null;
        }
        return best(cell) / cell.cublasLt.sync();
    }

    /** The name Report gives a JMH {@code MlpForward} result, e.g. {@code mlp/graph/512/32/pdl}. */
    static String javaKey(String method, Object width, Object batch, Object pdl) {
        return "mlp/" + method + "/" + width + "/" + batch + "/" + ("true".equals(String.valueOf(pdl)) ? "pdl" : "plain");
    }

    String markdown() {
        return markdown(Map.of());
    }

    /** With the JMH results (µs, by {@link #javaKey}), the library's own graph from Java is a column too. */
    String markdown(Map<String, Double> java) {
        StringBuilder md = new StringBuilder("\n## 16-layer MLP (`Linear(w, w)` + ReLU, FP32), µs per forward\n\n");
        md.append("Native graph on the shipped split-K kernels (`mlp-native.log`) against PyTorch (`mlp-torch.log`, "
                + "TF32 off) and cuBLASLt with its fused `RELU_BIAS` epilogue in a graph (`mlp-cublaslt.log`, "
                + "`CUBLAS_COMPUTE_32F`); \"sync\" synchronises after each forward, \"pipelined\" after 200. Ratios: "
                + "the faster native graph (PDL or not), \"best\", over PyTorch's graph replay and over cuBLASLt's "
                + "graph, all synchronising each forward.\n\n");
        md.append("| width | batch | config | graph sync | graph PDL sync | graph PDL pipelined | Java graph PDL sync "
                + "| PyTorch eager sync | PyTorch graph sync | PyTorch graph pipelined | ratio | cuBLASLt graph sync "
                + "| best / cuBLASLt |\n");
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        cells.forEach((width, byBatch) -> byBatch.forEach((batch, cell) -> md.append(String.format(Locale.ROOT,
                "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", width, batch,
                cell.config == null ? "n/a" : cell.config, sync(cell.graph), sync(cell.graphPdl),
                pipelined(cell.graphPdl), micros(java.get(javaKey("graph", width, batch, true))),
                sync(cell.torchEager), sync(cell.torchGraph), pipelined(cell.torchGraph),
                format(ratio(width, batch)), sync(cell.cublasLt), format(ratioToCublasLt(width, batch))))));
        md.append("\nTargets (ratio to PyTorch's graph replay):\n\n");
        target(md, "width 512, batch 32: at most 0.5", Arrays.asList(ratio(512, 32)), 0.5);
        List<Double> small = new ArrayList<>();
        for (int width : new int[] {512, 1024}) {
            cells.getOrDefault(width, Map.of()).keySet().forEach(batch -> small.add(ratio(width, batch)));
        }
        target(md, "every batch at widths 512 and 1024: at most 0.8", small, 0.8);
        target(md, "width 4096, batch 256: at most 1.0", Arrays.asList(ratio(4096, 256)), 1.0);
        return md.toString();
    }

    private static void target(StringBuilder md, String label, List<Double> ratios, double limit) {
        if (ratios.isEmpty() || ratios.contains(null)) {
            md.append("- ").append(label).append(": n/a (not measured)\n");
            return;
        }
        long met = ratios.stream().filter(r -> r <= limit).count();
        double worst = ratios.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
        md.append(String.format(Locale.ROOT, "- %s: %s (%d of %d cells, worst %.2f)%n", label,
                met == ratios.size() ? "met" : "missed", met, ratios.size(), worst));
    }

    /** Bars per batch at one width: native graph (PDL), PyTorch graph replay and cuBLASLt graph, µs synchronising each. */
    List<String> groups(int width) {
        return cells.getOrDefault(width, Map.of()).keySet().stream().map(b -> "b=" + b).toList();
    }

    List<double[]> values(int width) {
        return cells.getOrDefault(width, Map.of()).values().stream().map(c -> new double[] {
                c.graphPdl == null ? Double.NaN : c.graphPdl.sync(),
                c.torchGraph == null ? Double.NaN : c.torchGraph.sync(),
                c.cublasLt == null ? Double.NaN : c.cublasLt.sync()}).toList();
    }

    private static String sync(Time time) {
        return time == null ? "n/a" : String.format(Locale.ROOT, "%.1f", time.sync());
    }

    private static String pipelined(Time time) {
        return time == null ? "n/a" : String.format(Locale.ROOT, "%.1f", time.pipelined());
    }

    private static String micros(Double value) {
        return value == null ? "n/a" : String.format(Locale.ROOT, "%.1f", value);
    }

    private static String format(Double ratio) {
        return ratio == null ? "n/a" : String.format(Locale.ROOT, "%.2f", ratio);
    }
}
