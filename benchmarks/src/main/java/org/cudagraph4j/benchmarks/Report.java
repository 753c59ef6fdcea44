package org.cudagraph4j.benchmarks;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.zip.GZIPInputStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * Turns one run's JMH JSON and native JSON into {@code results.md} (medians side by side, with
 * the ratios graph/eager, Java/native and Java/JNI, and the targets met or missed) and
 * {@code chart.svg} ({@link ResultsChart}, where this runtime has {@code java.desktop}: see {@link Charts}).
 *
 * <p>Usage: {@code Report jmh.json native.json outputDir}; either file may be gzipped ({@code .gz}) or
 * absent (no nvcc, or a run of some parts only), and only the tables with results are written. Where
 * {@code outputDir} holds the MLP logs ({@code mlp-native.log}, {@code mlp-torch.log},
 * {@code mlp-cublaslt.log}), their comparison is added
 * ({@link MlpResults}).
 */
public final class Report {
    private static final int[] LAUNCH_N = {1, 2, 8, 32, 128};
    private static final int[] LAYERS = {1, 16};
    private static final int[] NODES = {10, 100, 1000};
    private static final String[] CALLS = {"cudaLaunchKernel", "cudaGraphLaunch", "cudaStreamQuery", "cudaGetLastError"};
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Median per canonical name, in the native harness's unit for that name (µs or ns). */
    private final Map<String, Double> java = new LinkedHashMap<>();
    private final Map<String, Double> nativeResults = new LinkedHashMap<>();
    /** The GPU the native harness named; null until its JSON is read. */
    private String device;
    private String driver = "";
    private final MlpResults mlp = new MlpResults();
    private JsonNode servingLoad;
    private JsonNode sameProcess;

    public static void main(String[] args) {
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line: the raw results in, the report out. */
    @Command(name = "Report", mixinStandardHelpOptions = true,
            description = "Writes results.md (and chart.svg on a full JDK) from a benchmark run's raw results.")
    static final class Main implements Callable<Integer> {
        @Parameters(index = "0", description = "JMH's JSON results")
        Path jmhFile;

        @Parameters(index = "1", description = "the native harness's JSON results")
        Path nativeFile;

        @Parameters(index = "2", description = "the run's folder, where the report goes")
        Path out;

        @Override
        public Integer call() throws IOException {
            write(jmhFile, nativeFile, out);
            return 0;
        }
    }

    private static void write(Path jmhFile, Path nativeFile, Path out) throws IOException {
        Report report = new Report();
        if (Files.exists(jmhFile)) {
            report.readJmh(text(jmhFile));
        }
        if (Files.exists(nativeFile)) {
            report.readNative(text(nativeFile));
        }
        for (String log : new String[] {"mlp-native.log", "mlp-torch.log", "mlp-cublaslt.log"}) {
            if (Files.exists(out.resolve(log))) {
                report.mlp.read(Files.readString(out.resolve(log)));
            }
        }
        if (Files.exists(out.resolve("same-process.json"))) {
            report.readSameProcess(Files.readString(out.resolve("same-process.json")));
        }
        if (Files.exists(out.resolve("serving-load.json"))) {
            report.readServingLoad(Files.readString(out.resolve("serving-load.json")));
        }
        Files.createDirectories(out);
        Files.writeString(out.resolve("results.md"), report.markdown());
        // A run of the lifecycle, same-process or serving parts alone has nothing the chart draws.
        if (!report.chartRows().isEmpty()) {
            Path folder = out.toAbsolutePath();
            Charts.write(out.resolve("chart.svg"), () -> ResultsChart.svg(report.chartRows()), Report.class,
                    folder.relativize(jmhFile.toAbsolutePath()).toString(),
                    folder.relativize(nativeFile.toAbsolutePath()).toString(), ".");
        }
        System.out.print(report.markdown());
    }

    /** A file's text; gunzipped where its name ends in {@code .gz}, as committed runs keep JMH's JSON. */
    static String text(Path file) throws IOException {
        if (!file.getFileName().toString().endsWith(".gz")) {
            return Files.readString(file);
        }
        try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** JMH's JSON result format: an array of runs, each with its parameters and primary metric. */
    void readJmh(String json) throws JsonProcessingException {
        for (JsonNode result : JSON.readTree(json)) {
            String benchmark = result.get("benchmark").asText();
            String method = benchmark.substring(benchmark.lastIndexOf('.') + 1);
            String type = benchmark.substring(0, benchmark.lastIndexOf('.'));
            type = type.substring(type.lastIndexOf('.') + 1);
            Map<String, Object> params = new LinkedHashMap<>();
            result.path("params").properties().forEach(p -> params.put(p.getKey(), p.getValue().asText()));
            JsonNode metric = result.get("primaryMetric");
            JsonNode p50 = metric.path("scorePercentiles").path("50.0");
            double median = p50.isNumber() ? p50.asDouble() : metric.get("score").asDouble();
            String unit = metric.get("scoreUnit").asText();
            String key = canonicalName(type, method, params);
            if (key != null) {
                java.put(key, inUnit(median, unit, key));
            }
        }
    }

    /** {@code ServingLoad}'s JSON: the engine under open-loop load, per capture policy and offered rate. */
    void readServingLoad(String json) throws JsonProcessingException {
        servingLoad = JSON.readTree(json);
    }

    /** {@code SameProcess}'s JSON: Java and C loops alternating round by round in one JVM. */
    void readSameProcess(String json) throws JsonProcessingException {
        sameProcess = JSON.readTree(json);
    }

    /** The native harness's JSON: the device, the driver and runtime, and a median per benchmark. */
    void readNative(String json) throws JsonProcessingException {
        JsonNode root = JSON.readTree(json);
        device = root.path("device").isTextual() ? root.path("device").asText() : device;
        driver = root.path("driver_release").asText("") + " (CUDA " + root.path("runtime").asText("?") + ")";
        for (JsonNode result : root.get("benchmarks")) {
            nativeResults.put(result.get("name").asText(), result.get("median").asDouble());
        }
    }

    /** The native harness's name for a JMH result; binding results carry their path in brackets. */
    static String canonicalName(String type, String method, Map<String, Object> params) {
        return switch (type) {
            case "LaunchOverhead" -> "launch_overhead/" + method + "/" + params.get("n");
            case "SeedLinear" -> "seed_linear/" + snake(method) + "/" + params.get("layers");
            case "SeedShapeEmpty" -> "seed_shape_empty/" + method + "/" + params.get("layers");
            case "GraphLifecycle" -> "graph_lifecycle/" + snake(method) + "/" + params.get("nodes");
            case "BindingOverhead" -> "binding/" + method + " [" + params.get("binding") + "]";
            case "MlpForward" -> MlpResults.javaKey(snake(method), params.get("width"), params.get("batch"),
                    params.get("pdl"));
            default -> null;
        };
    }

    private static String snake(String camel) {
        return camel.replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
    }

    /** Binding results are in ns, everything else in µs, as the native harness reports them. */
    private static double inUnit(double value, String jmhUnit, String key) {
        double nanos = switch (jmhUnit) {
            case "ns/op" -> value;
            case "us/op" -> value * 1e3;
            case "ms/op" -> value * 1e6;
            case "s/op" -> value * 1e9;
            default -> throw new IllegalArgumentException("unexpected JMH unit " + jmhUnit);
        };
        return key.startsWith("binding/") ? nanos : nanos / 1e3;
    }

    String markdown() {
        StringBuilder md = new StringBuilder();
        if (launches()) {
            launchSections(md);
        } else {
            md.append("# Benchmarks on ").append(device()).append("\n");
        }
        if (sameProcess != null) {
            sameProcessSection(md);
        }
        if (!mlp.isEmpty()) {
            md.append(mlp.markdown(java));
        }
        if (servingLoad != null) {
            md.append("\n## Serving engine under open-loop load (").append(servingLoad.path("layers").asInt())
                    .append("-layer width-").append(servingLoad.path("width").asInt()).append(" MLP, ")
                    .append(servingLoad.path("rowsPerRequest").asInt()).append(" row(s) per request)\n\n");
            md.append("Latency from each request's intended (Poisson) arrival, µs. `EAGER`: every bucket a graph; "
                    + "`NONE`: the same engine without graphs.\n\n");
            md.append("| policy | offered /s | served /s | p50 | p99 | p99.9 | max | rejected | failed |\n");
            md.append("|---|---|---|---|---|---|---|---|---|\n");
            for (JsonNode p : servingLoad.path("points")) {
                md.append(String.format(Locale.ROOT, "| %s | %d | %.0f | %.1f | %.1f | %.1f | %.1f | %d | %d |%n",
                        p.path("policy").asText(), p.path("offeredPerSecond").asInt(),
                        p.path("completedPerSecond").asDouble(), p.path("p50Micros").asDouble(),
                        p.path("p99Micros").asDouble(), p.path("p999Micros").asDouble(),
                        p.path("maxMicros").asDouble(), p.path("rejected").asLong(), p.path("failed").asLong()));
            }
        }
        return md.toString();
    }

    /**
     * The same-process baseline: each loop's median Java/C ratio over alternating rounds, which drift
     * between processes cannot enter, and the capture and update targets read from it.
     */
    private void sameProcessSection(StringBuilder md) {
        md.append("\n## Same-process baseline (Java and C loops alternating in one JVM)\n\n");
        md.append("Per repetition, medians over ").append(sameProcess.path("rows").path(0).path("rounds").asInt())
                .append(" rounds; the ratio is the median of the rounds' Java/C ratios, with its quartiles.\n\n");
        md.append("| loop | N | Java µs | C µs | Java/C | quartiles |\n|---|---|---|---|---|---|\n");
        Map<String, Double> ratios = new LinkedHashMap<>();
        for (JsonNode row : sameProcess.path("rows")) {
            String loop = row.path("loop").asText();
            int n = row.path("n").asInt();
            ratios.put(loop + "/" + n, row.path("ratio").asDouble());
            md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %.3f | %.3f - %.3f |%n", loop, n,
                    f(row.path("javaMicros").asDouble()), f(row.path("nativeMicros").asDouble()),
                    row.path("ratio").asDouble(), row.path("ratioP25").asDouble(), row.path("ratioP75").asDouble()));
        }
        md.append("\n");
        target(md, "capture of 1000 nodes at most 1.2x native", ratios.get("capture/1000"), 1.0, 1.2);
        target(md, "single-node update on a 1000-node executable at most 1.2x native",
                ratios.get("update-node/1000"), 1.0, 1.2);
    }

    /** For the MLP logs, read from elsewhere than the output folder (tests). */
    MlpResults mlp() {
        return mlp;
    }

    private void seedRow(StringBuilder md, int layers, String variant, String eagerPrefix, String graphPrefix) {
        String eager = eagerPrefix + layers;
        String graph = graphPrefix + layers;
        md.append("| ").append(layers).append(" | ").append(variant).append(" | ").append(f(java.get(eager)))
                .append(" | ").append(f(java.get(graph))).append(" | ").append(ratio(java.get(eager), java.get(graph)))
                .append(" | ").append(f(nativeResults.get(eager))).append(" | ").append(f(nativeResults.get(graph)))
                .append(" | ").append(ratio(nativeResults.get(eager), nativeResults.get(graph))).append(" |\n");
    }

    private static Double speedup(Map<String, Double> results, String prefix, int layers) {
        Double eager = results.get(prefix + "/eager/" + layers);
        Double graph = results.get(prefix + "/graph/" + layers);
        return eager == null || graph == null ? null : eager / graph;
    }

    /** Met when {@code value / reference <= limit}. */
    private static void target(StringBuilder md, String label, Double value, Double reference, double limit) {
        String verdict;
        if (value == null || reference == null) {
            verdict = "not measured";
        } else {
            double ratio = value / reference;
            verdict = (ratio <= limit ? "met" : "missed") + String.format(Locale.ROOT, " (ratio %.3f)", ratio);
        }
        md.append("- ").append(label).append(": **").append(verdict).append("**\n");
    }

    private static String f(Double value) {
        if (value == null) {
            return "n/a";
        }
        return value >= 100 ? String.format(Locale.ROOT, "%.0f", value) : String.format(Locale.ROOT, "%.2f", value);
    }

    private static String ratio(Double a, Double b) {
        return a == null || b == null ? "n/a" : String.format(Locale.ROOT, "%.3f", a / b);
    }

    /** One bar chart: a bar per series in each group, on a log scale; NaN where a value is missing. */
    record BarPanel(String title, String axis, List<String> groups, List<String> series, List<String> colors,
            List<double[]> values) {
        /** Whether it has a bar to draw: without one it says it was not measured, rather than draw an empty scale. */
        boolean measured() {
            return values.stream().flatMapToDouble(Arrays::stream).anyMatch(v -> v > 0);
        }
    }

    /** Panels side by side under a heading, in a row with room for {@code columns}. */
    record PanelRow(String heading, int columns, List<BarPanel> panels) {}

    /**
     * What {@code chart.svg} shows: the launch-overhead row (eager vs graph for each N, and the four
     * calls through each binding) and, with MLP results, a row of one panel per measured width. A run
     * of some parts only (the MLP alone, say) leaves out the rows it has nothing for, and may have none.
     */
    List<PanelRow> chartRows() {
        List<PanelRow> rows = new ArrayList<>();
        if (measured("launch_overhead/") || measured("binding/")) {
            rows.add(new PanelRow("Launch overhead on " + device() + " (medians of one run)", 2,
                    List.of(launchPanel(), bindingPanel())));
        }
        if (!mlp.isEmpty()) {
            List<BarPanel> panels = new ArrayList<>();
            for (int width : new int[] {512, 1024, 4096}) {
                if (!mlp.groups(width).isEmpty()) {
                    panels.add(new BarPanel("width " + width, "µs per forward (log scale)", mlp.groups(width),
                            List.of("cudagraph4j graph (PDL)", "PyTorch graph replay", "cuBLASLt graph"),
                            List.of("#d62728", "#7f7f7f", "#2ca02c"), mlp.values(width)));
                }
            }
            rows.add(new PanelRow("16-layer MLP on " + device() + ", µs per forward synchronising each", 3, panels));
        }
        return rows;
    }

    /** Whether any launch-overhead result was read, or nothing else was: a run of the MLP alone has none. */
    private boolean launches() {
        return !java.isEmpty() || !nativeResults.isEmpty() || (mlp.isEmpty() && servingLoad == null
                && sameProcess == null);
    }

    /** The launch-overhead tables and their targets, each only where the run measured something for it. */
    private void launchSections(StringBuilder md) {
        md.append("# Launch overhead on ").append(device()).append("\n\n");
        md.append("Medians from one run: JMH (Java, `SampleTime`) and the native C++ harness, side by side. ");
        md.append("Driver ").append(driver).append(". Ratios below 1 favour the numerator's alternative.\n");
        List<Runnable> targets = new ArrayList<>();
        if (measured("launch_overhead/")) {
            eagerAndGraphTable(md);
        }
        if (measured("binding/")) {
            bindingTable(md);
            targets.add(() -> bindingTargets(md));
        }
        if (measured("seed_linear/") || measured("seed_shape_empty/")) {
            seedTable(md);
            targets.add(() -> seedTargets(md));
        }
        if (measured("graph_lifecycle/")) {
            lifecycleTable(md);
        }
        if (!targets.isEmpty()) {
            md.append("\n## Targets\n\n");
            targets.forEach(Runnable::run);
        }
    }

    /** Whether the Java or the native results hold a name starting with {@code prefix}. */
    private boolean measured(String prefix) {
        return java.keySet().stream().anyMatch(k -> k.startsWith(prefix))
                || nativeResults.keySet().stream().anyMatch(k -> k.startsWith(prefix));
    }

    private void eagerAndGraphTable(StringBuilder md) {
        md.append("\n## Eager launches vs one graph launch (µs per iteration, including the sync)\n\n");
        md.append("| N | Java eager | Java graph | Java eager/graph | native eager | native graph | native eager/graph | Java/native eager | Java/native graph |\n");
        md.append("|---|---|---|---|---|---|---|---|---|\n");
        for (int n : LAUNCH_N) {
            String eager = "launch_overhead/eager/" + n;
            String graph = "launch_overhead/graph/" + n;
            md.append("| ").append(n).append(" | ").append(f(java.get(eager))).append(" | ").append(f(java.get(graph)))
                    .append(" | ").append(ratio(java.get(eager), java.get(graph))).append(" | ")
                    .append(f(nativeResults.get(eager))).append(" | ").append(f(nativeResults.get(graph))).append(" | ")
                    .append(ratio(nativeResults.get(eager), nativeResults.get(graph))).append(" | ")
                    .append(ratio(java.get(eager), nativeResults.get(eager))).append(" | ")
                    .append(ratio(java.get(graph), nativeResults.get(graph))).append(" |\n");
        }
    }

    private void bindingTable(StringBuilder md) {
        md.append("\n## One call, three Java bindings and native (ns per call)\n\n");
        md.append("`cudaLaunchKernel` and `cudaGraphLaunch` are host-only enqueue costs, bursts of 256 with an untimed sync.\n\n");
        md.append("| call | Java API | raw bindings | JNI (JavaCPP) | native | API/native | raw/native | JNI/native | API/JNI |\n");
        md.append("|---|---|---|---|---|---|---|---|---|\n");
        for (String call : CALLS) {
            Double api = java.get("binding/" + call + " [api]");
            Double raw = java.get("binding/" + call + " [raw]");
            Double jni = java.get("binding/" + call + " [jni]");
            Double cpp = nativeResults.get("binding/" + call);
            md.append("| `").append(call).append("` | ").append(f(api)).append(" | ").append(f(raw)).append(" | ")
                    .append(f(jni)).append(" | ").append(f(cpp)).append(" | ").append(ratio(api, cpp)).append(" | ")
                    .append(ratio(raw, cpp)).append(" | ").append(ratio(jni, cpp)).append(" | ").append(ratio(api, jni))
                    .append(" |\n");
        }
    }

    private void seedTable(StringBuilder md) {
        md.append("\n## The seed's Linear layer, L layers of 2048 x 640 x 640 (µs per forward, including the sync)\n\n");
        md.append("| L | variant | Java eager | Java graph | Java eager/graph | native eager | native graph | native eager/graph |\n");
        md.append("|---|---|---|---|---|---|---|---|\n");
        for (int layers : LAYERS) {
            seedRow(md, layers, "unfused (2 kernels)", "seed_linear/eager/", "seed_linear/graph/");
            seedRow(md, layers, "fused (1 kernel)", "seed_linear/fused_eager/", "seed_linear/fused_graph/");
            seedRow(md, layers, "empty kernels at the seed's shapes", "seed_shape_empty/eager/", "seed_shape_empty/graph/");
        }
    }

    private void lifecycleTable(StringBuilder md) {
        md.append("\n## Graph lifecycle (µs per operation)\n\n");
        md.append("| operation | nodes | Java | native | Java/native |\n|---|---|---|---|---|\n");
        for (String operation : new String[] {"capture", "instantiate", "update_whole", "update_node"}) {
            for (int nodes : NODES) {
                String key = "graph_lifecycle/" + operation + "/" + nodes;
                md.append("| ").append(operation).append(" | ").append(nodes).append(" | ").append(f(java.get(key)))
                        .append(" | ").append(f(nativeResults.get(key))).append(" | ")
                        .append(ratio(java.get(key), nativeResults.get(key))).append(" |\n");
            }
        }
    }

    private void bindingTargets(StringBuilder md) {
        for (String call : new String[] {"cudaLaunchKernel", "cudaGraphLaunch"}) {
            target(md, "Java API/native for `" + call + "` at most 1.02",
                    java.get("binding/" + call + " [api]"), nativeResults.get("binding/" + call), 1.02);
        }
        for (String call : CALLS) {
            target(md, "Java API at most JNI for `" + call + "`", java.get("binding/" + call + " [api]"),
                    java.get("binding/" + call + " [jni]"), 1.0);
        }
    }

    private void seedTargets(StringBuilder md) {
        for (int layers : LAYERS) {
            for (String prefix : new String[] {"seed_linear", "seed_shape_empty"}) {
                Double javaSpeedup = speedup(java, prefix, layers);
                Double nativeSpeedup = speedup(nativeResults, prefix, layers);
                String label = "Java graph speedup at least native's, " + prefix + " L=" + layers + " (Java "
                        + f(javaSpeedup) + "x, native " + f(nativeSpeedup) + "x)";
                target(md, label, nativeSpeedup, javaSpeedup, 1.0);
            }
        }
    }

    /** The GPU the native harness named, else the MLP harnesses, ServingLoad or SameProcess, else "unknown GPU". */
    private String device() {
        if (device != null) {
            return device;
        }
        if (mlp.device() != null) {
            return mlp.device();
        }
        for (JsonNode log : new JsonNode[] {servingLoad, sameProcess}) {
            if (log != null && log.path("device").isTextual()) {
                return log.path("device").asText();
            }
        }
        return "unknown GPU";
    }

    /** Eager vs graph for each N. */
    private BarPanel launchPanel() {
        List<String> groups = new ArrayList<>();
        List<double[]> values = new ArrayList<>();
        for (int n : LAUNCH_N) {
            groups.add("N=" + n);
            String eager = "launch_overhead/eager/" + n;
            String graph = "launch_overhead/graph/" + n;
            values.add(new double[] {value(java, eager), value(java, graph), value(nativeResults, eager),
                    value(nativeResults, graph)});
        }
        return new BarPanel("Eager launches vs one graph launch", "µs per iteration (log scale)", groups,
                List.of("Java eager", "Java graph", "native eager", "native graph"),
                List.of("#d62728", "#1f77b4", "#ff9896", "#aec7e8"), values);
    }

    /** The four calls through each binding. */
    private BarPanel bindingPanel() {
        List<double[]> values = new ArrayList<>();
        for (String call : CALLS) {
            String key = "binding/" + call;
            values.add(new double[] {value(java, key + " [api]"), value(java, key + " [raw]"), value(java, key + " [jni]"),
                    value(nativeResults, key)});
        }
        return new BarPanel("One call through each binding", "ns per call (log scale)", List.of(CALLS),
                List.of("Java API", "raw bindings", "JNI (JavaCPP)", "native C++"),
                List.of("#d62728", "#ff7f0e", "#2ca02c", "#7f7f7f"), values);
    }

    private static double value(Map<String, Double> results, String key) {
        Double value = results.get(key);
        return value == null ? Double.NaN : value;
    }
}
