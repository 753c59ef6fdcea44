package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.cudagraph4j.benchmarks.Charts;
import org.cudagraph4j.benchmarks.Cli;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * Turns one serving run's folder ({@code bin/run-serving-benchmark} writes it) into
 * {@code results.md} (the answers' cross-check, one table per request mix with both servers at
 * each offered load, the targets met or missed, and {@code wrk}'s closed-loop numbers) and
 * {@code chart.svg} ({@link ServingChart}: p50 and p99 latency against offered load, both servers, one panel
 * per mix; drawn where this runtime has {@code java.desktop}, see {@link Charts}).
 *
 * <p>What it reads: {@code load-SERVER-MIX.json} ({@link HttpLoad}'s {@code --json}; SERVER is
 * {@code java} or {@code torch}), {@code crosscheck.json} ({@link CrossCheck}), {@code wrk-SERVER-MIX.json}
 * (the Lua script's summary) and {@code run.properties} (the run's name and the servers' ready lines),
 * each where present.
 *
 * <pre>
 *   ServingReport DIR
 * </pre>
 */
public final class ServingReport {
    /** The latency target under load: the Java server's p99 at most this share of PyTorch's. */
    static final double P99_RATIO_TARGET = 0.5;
    /** The throughput target, at p99 under {@link #P99_LIMIT_MICROS}: at least this multiple of PyTorch's. */
    static final double THROUGHPUT_TARGET = 2.0;
    static final double P99_LIMIT_MICROS = 10_000;
    static final List<String> SERVERS = List.of("java", "torch");
    static final Map<String, String> NAMES = Map.of("java", "Java (cudagraph4j)", "torch", "PyTorch");
    private static final ObjectMapper JSON = new ObjectMapper();

    /** One server's points under one mix. */
    record Series(String server, String mix, JsonNode options, List<JsonNode> points) {}

    private final Properties run = new Properties();
    /** mix -> server -> series, mixes in the order first seen (sorted file names). */
    private final Map<String, Map<String, Series>> loads = new LinkedHashMap<>();
    private JsonNode crossCheck;
    private final List<JsonNode> wrk = new ArrayList<>();
    /** {@code ServingLoad --floor}'s results, {@link HttpLatency}'s and {@link ServingProfile}'s, where present. */
    private JsonNode floor;
    private JsonNode latency;
    private String profile;

    /**
     * Reads what {@code dir} holds.
     *
     * @param dir a serving run's folder
     * @return the report
     * @throws IOException if a file cannot be read or parsed
     */
    static ServingReport read(Path dir) throws IOException {
        ServingReport report = new ServingReport();
        Path properties = dir.resolve("run.properties");
        if (Files.exists(properties)) {
            try (Reader reader = Files.newBufferedReader(properties)) {
                report.run.load(reader);
            }
        }
        if (Files.exists(dir.resolve("crosscheck.json"))) {
            report.crossCheck = JSON.readTree(dir.resolve("crosscheck.json").toFile());
        }
        if (Files.exists(dir.resolve("floor.json"))) {
            report.floor = JSON.readTree(dir.resolve("floor.json").toFile());
        }
        if (Files.exists(dir.resolve("latency.json"))) {
            report.latency = JSON.readTree(dir.resolve("latency.json").toFile());
        }
        if (Files.exists(dir.resolve("profile.md"))) {
            report.profile = Files.readString(dir.resolve("profile.md"));
        }
        List<Path> files;
        try (Stream<Path> list = Files.list(dir)) {
            files = list.sorted().toList();
        }
        for (Path file : files) {
            String name = file.getFileName().toString();
            if (name.startsWith("load-") && name.endsWith(".json")) {
                String rest = name.substring("load-".length(), name.length() - ".json".length());
                int dash = rest.indexOf('-');
                if (dash < 0 || !SERVERS.contains(rest.substring(0, dash))) {
                    continue;
                }
                JsonNode load = JSON.readTree(file.toFile());
                List<JsonNode> points = new ArrayList<>();
                load.path("points").forEach(points::add);
                String server = rest.substring(0, dash);
                String mix = rest.substring(dash + 1);
                report.loads.computeIfAbsent(mix, m -> new LinkedHashMap<>())
                        .put(server, new Series(server, mix, load.path("options"), points));
            } else if (name.startsWith("wrk-") && name.endsWith(".json")) {
                JsonNode summary = JSON.readTree(file.toFile());
                ((com.fasterxml.jackson.databind.node.ObjectNode) summary).put("file", name);
                report.wrk.add(summary);
            }
        }
        // Single rows first, then by the largest request.
        List<Map.Entry<String, Map<String, Series>>> mixes = new ArrayList<>(report.loads.entrySet());
        mixes.sort(Comparator.comparingInt((Map.Entry<String, Map<String, Series>> e) -> e.getValue().values()
                .iterator().next().options().path("maxRows").asInt()).thenComparing(Map.Entry::getKey));
        report.loads.clear();
        mixes.forEach(e -> report.loads.put(e.getKey(), e.getValue()));
        return report;
    }

    public static void main(String[] args) {
        System.exit(Cli.execute(new Main(), args));
    }

    /** The command line: a serving run's folder. */
    @Command(name = "ServingReport", mixinStandardHelpOptions = true,
            description = "Writes a serving run's results.md (and chart.svg on a full JDK) from its raw results.")
    static final class Main implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "DIR", description = "the serving run's folder")
        Path dir;

        @Override
        public Integer call() throws IOException {
            System.out.print(write(dir));
            return 0;
        }
    }

    /**
     * Reads {@code dir} and writes its {@code results.md} and {@code chart.svg}.
     *
     * @param dir a serving run's folder
     * @return the Markdown written
     * @throws IOException if a file cannot be read, parsed or written
     */
    static String write(Path dir) throws IOException {
        ServingReport report = read(dir);
        String markdown = report.markdown();
        Files.writeString(dir.resolve("results.md"), markdown);
        Charts.write(dir.resolve("chart.svg"), () -> ServingChart.svg(report.runName(), report.loads.values()),
                ServingReport.class, ".");
        return markdown;
    }

    private String runName() {
        return run.getProperty("name", "this run");
    }

    /** A mix's title, from its options: "1 row per request, JSON". */
    static String mixTitle(JsonNode options) {
        int min = options.path("minRows").asInt(1);
        int max = options.path("maxRows").asInt(min);
        String rows = min == max ? min + (min == 1 ? " row" : " rows") : min + "–" + max + " rows (uniform)";
        return rows + " per request, " + (options.path("binary").asBoolean(false) ? "binary tensor data" : "JSON");
    }

    String markdown() {
        StringBuilder md = new StringBuilder();
        md.append("# Serving: the Java server against its PyTorch twin, ").append(runName()).append("\n\n");
        md.append("Both servers load the same `.safetensors` model");
        if (run.containsKey("model")) {
            md.append(" (").append(run.getProperty("model")).append(')');
        }
        md.append(" and speak the Open Inference Protocol over loopback; the load goes to one server at a time. ");
        md.append("`HttpLoad` offers Poisson arrivals at each rate (open loop) and measures each latency from the "
                + "request's intended arrival, so queueing is never hidden (no coordinated omission).");
        if (run.containsKey("seconds")) {
            md.append(" Each point lasts ").append(run.getProperty("seconds")).append(" s");
            if (run.containsKey("warmup")) {
                md.append(" after a ").append(run.getProperty("warmup")).append(" s warm-up at the first rate");
            }
            md.append('.');
        }
        md.append(" A point is *sustained* when every request sent was answered 200 and the answers kept at least "
                + (int) (HttpLoad.SUSTAINED_SHARE * 100) + "% of the pace sent. After the first rate a server does "
                + "not sustain, its ladder stops (`—`: not run). The lowest rate runs once more at the end "
                + "(*recovery*): after saturation, whether the server recovers; in any case, whether the first point "
                + "still paid for warm-up (JIT compilation), which would show as a first point slower than the "
                + "last.\n\n");
        for (String server : SERVERS) {
            String line = run.getProperty(server + ".server");
            if (line != null) {
                md.append("- ").append(NAMES.get(server)).append(": `").append(line.strip()).append("`\n");
            }
        }
        if (run.containsKey("java.server") || run.containsKey("torch.server")) {
            md.append('\n');
        }
        crossCheckSection(md);
        floorSection(md);
        latencySection(md);
        for (Map.Entry<String, Map<String, Series>> load : loads.entrySet()) {
            loadSection(md, load.getValue());
        }
        targetsSection(md);
        wrkSection(md);
        if (!loads.isEmpty()) {
            md.append("![p50 and p99 latency against offered load](chart.svg)\n");
        }
        return md.toString();
    }

    /** The engine's p50 may exceed the floor's by this much. */
    static final double FLOOR_P50_MARGIN_MICROS = 10;
    /** The engine's p99 may be this multiple of the floor's. */
    static final double FLOOR_P99_RATIO = 1.5;
    /** The engine's saturation throughput, at least this share of the GPU-bound replays'. */
    static final double SATURATION_SHARE = 0.9;
    /**
     * Work-conserving batching against the 200 µs batching wait at saturation: a ratio at least
     * this is no loss, the run-to-run spread of such points being about 2%.
     */
    static final double NO_LOSS_RATIO = 0.98;
    /** One-row HTTP p50 targets for the Java server, µs. */
    static final Map<String, Double> HTTP_P50_TARGETS = Map.of("binary", 150.0, "json", 250.0);

    private void floorSection(StringBuilder md) {
        if (floor == null) {
            return;
        }
        md.append("## The engine beside its floor\n\n`ServingLoad --floor` on ").append(floor.path("device").asText())
                .append(", ").append(floor.path("layers").asInt()).append(" × (Linear(").append(floor.path("width")
                        .asInt()).append(", ").append(floor.path("width").asInt()).append(") + ReLU), in one process: "
                        + "closed loop, one client, one row per request, ")
                .append(floor.path("requestsPerPathAndRound").asInt() * floor.path("rounds").asInt())
                .append(" requests per path, the paths taking turns in ").append(floor.path("rounds").asInt())
                .append(" rounds. The floor copies the row into pinned memory, queues the copy in, the bucket-1 graph "
                        + "and the copy out, waits, and copies the answer out, all on one thread.\n\n");
        md.append("| path | p50 µs | p90 µs | p99 µs | p99.9 µs | p50 − floor | p99 / floor |\n"
                + "|---|---|---|---|---|---|---|\n");
        JsonNode base = floor.path("latency").path(0);
        for (JsonNode l : floor.path("latency")) {
            md.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f | %.1f | %.1f | %+.1f | %.2f |%n",
                    l.path("path").asText(), l.path("p50Micros").asDouble(), l.path("p90Micros").asDouble(),
                    l.path("p99Micros").asDouble(), l.path("p999Micros").asDouble(),
                    l.path("p50Micros").asDouble() - base.path("p50Micros").asDouble(),
                    l.path("p99Micros").asDouble() / base.path("p99Micros").asDouble()));
        }
        md.append(String.format(Locale.ROOT, "%nAt saturation: %d client threads, each with %d requests of 1–64 rows "
                + "in flight, %.0f s per point; every answer checked against the model on the CPU.%n%n",
                floor.path("throughputClients").asInt(), floor.path("throughputWindow").asInt(),
                floor.path("throughputSecondsPerPoint").asDouble()));
        md.append("| path | rows/s | requests/s | of the GPU-bound rows/s | wrong | failed |\n|---|---|---|---|---|---|\n");
        JsonNode bound = floor.path("throughput").path(0);
        for (JsonNode t : floor.path("throughput")) {
            md.append(String.format(Locale.ROOT, "| %s | %.0f | %.0f | %.3f | %d | %d |%n", t.path("path").asText(),
                    t.path("rowsPerSecond").asDouble(), t.path("requestsPerSecond").asDouble(),
                    t.path("rowsPerSecond").asDouble() / bound.path("rowsPerSecond").asDouble(),
                    t.path("wrong").asLong(), t.path("failed").asLong()));
        }
        md.append('\n');
    }

    private void latencySection(StringBuilder md) {
        if (latency == null) {
            return;
        }
        md.append("## Unloaded latency over HTTP\n\n`HttpLatency`: one keep-alive connection per server, closed "
                + "loop, one row per request, ").append(latency.path("requestsPerRound").asInt() * latency.path("rounds")
                        .asInt()).append(" requests per server and encoding after ").append(latency.path("warmup")
                        .asInt()).append(" not kept, the servers and encodings taking turns in ")
                .append(latency.path("rounds").asInt()).append(" rounds; the client is a plain socket (no HTTP "
                        + "client's threads in the numbers), and a sample of the answers is checked against the model "
                        + "on the CPU.\n\n");
        md.append("| server | encoding | p50 µs | p90 µs | p99 µs | p99.9 µs | mean µs |\n|---|---|---|---|---|---|---|\n");
        for (JsonNode p : latency.path("points")) {
            String server = NAMES.getOrDefault(p.path("target").asText(), p.path("target").asText());
            md.append(String.format(Locale.ROOT, "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f |%n", server,
                    p.path("encoding").asText(), p.path("p50Micros").asDouble(), p.path("p90Micros").asDouble(),
                    p.path("p99Micros").asDouble(), p.path("p999Micros").asDouble(), p.path("meanMicros").asDouble()));
        }
        md.append('\n');
        if (profile != null) {
            md.append("## Where an unloaded request's time goes\n\n").append(profile.strip()).append("\n\n");
        }
    }

    /** The floor's and the unloaded latency's targets, as rows of the targets table. */
    private void floorTargets(StringBuilder md) {
        if (floor != null) {
            Map<String, JsonNode> latencies = byName(floor.path("latency"), "path");
            Map<String, JsonNode> throughputs = byName(floor.path("throughput"), "path");
            JsonNode base = latencies.get("floor");
            JsonNode engine = latencies.get("engine");
            if (base != null && engine != null) {
                double over = engine.path("p50Micros").asDouble() - base.path("p50Micros").asDouble();
                double ratio = engine.path("p99Micros").asDouble() / base.path("p99Micros").asDouble();
                md.append(String.format(Locale.ROOT, "| engine, one row, closed loop | p50 ≤ the floor's + %.0f µs | "
                        + "%+.1f µs (%.1f against %.1f) | %s |%n", FLOOR_P50_MARGIN_MICROS, over,
                        engine.path("p50Micros").asDouble(), base.path("p50Micros").asDouble(),
                        over <= FLOOR_P50_MARGIN_MICROS ? "met" : "missed"));
                md.append(String.format(Locale.ROOT, "| engine, one row, closed loop | p99 ≤ %.1f× the floor's | "
                        + "%.2f× (%.1f against %.1f) | %s |%n", FLOOR_P99_RATIO, ratio,
                        engine.path("p99Micros").asDouble(), base.path("p99Micros").asDouble(),
                        ratio <= FLOOR_P99_RATIO ? "met" : "missed"));
            }
            JsonNode bound = throughputs.get("gpu-bound");
            JsonNode saturated = throughputs.get("engine");
            JsonNode waiting = throughputs.get("engine-wait-200us");
            if (bound != null && saturated != null) {
                double share = saturated.path("rowsPerSecond").asDouble() / bound.path("rowsPerSecond").asDouble();
                md.append(String.format(Locale.ROOT, "| engine at saturation, 1–64 rows | rows/s ≥ %.1f× the GPU-bound "
                        + "replays' | %.3f× | %s |%n", SATURATION_SHARE, share,
                        share >= SATURATION_SHARE ? "met" : "missed"));
            }
            if (waiting != null && saturated != null) {
                double ratio = saturated.path("rowsPerSecond").asDouble() / waiting.path("rowsPerSecond").asDouble();
                md.append(String.format(Locale.ROOT, "| engine at saturation, 1–64 rows | work-conserving batching "
                        + "loses no rows/s against a 200 µs batching wait (≥ %.2f×) | %.3f× | %s |%n", NO_LOSS_RATIO,
                        ratio, ratio >= NO_LOSS_RATIO ? "met" : "missed"));
            }
        }
        if (latency != null) {
            for (JsonNode p : latency.path("points")) {
                Double target = HTTP_P50_TARGETS.get(p.path("encoding").asText());
                if (!p.path("target").asText().equals("java") || target == null) {
                    continue;
                }
                double p50 = p.path("p50Micros").asDouble();
                md.append(String.format(Locale.ROOT, "| HTTP, one row, one connection, %s | Java p50 ≤ %.0f µs | "
                        + "%.1f µs | %s |%n", p.path("encoding").asText(), target, p50, p50 <= target ? "met"
                                : "missed"));
            }
        }
    }

    private static Map<String, JsonNode> byName(JsonNode array, String field) {
        Map<String, JsonNode> named = new LinkedHashMap<>();
        array.forEach(node -> named.put(node.path(field).asText(), node));
        return named;
    }

    private void crossCheckSection(StringBuilder md) {
        md.append("## Answers\n\n");
        if (crossCheck == null) {
            md.append("No cross-check in this folder.\n\n");
            return;
        }
        if (!crossCheck.path("problem").isNull() && !crossCheck.path("problem").isMissingNode()) {
            md.append("**FAILED**: the servers could not be compared: ").append(crossCheck.path("problem").asText())
                    .append("\n\n");
            return;
        }
        JsonNode cases = crossCheck.path("cases");
        long bad = 0;
        TreeSet<Integer> rows = new TreeSet<>();
        for (JsonNode c : cases) {
            rows.add(c.path("rows").asInt());
            bad += c.path("agree").asBoolean() ? 0 : 1;
        }
        md.append(crossCheck.path("agree").asBoolean() ? "**PASS**: " : "**FAIL**: ").append(cases.size() - bad)
                .append(" of ").append(cases.size()).append(" answers agree (requests of ")
                .append(rows.stream().map(String::valueOf).reduce((x, y) -> x + ", " + y).orElse("no"))
                .append(" rows, JSON and binary, alone and all at once); worst relative error ")
                .append(String.format(Locale.ROOT, "%.2e", crossCheck.path("worst").asDouble()))
                .append(", tolerance ")
                .append(String.format(Locale.ROOT, "%.0e", crossCheck.path("tolerance").asDouble()))
                .append(". The error of an answer is max|a − b| / max(max|b|, 1e-6) over the whole answer");
        if (crossCheck.path("reference").asBoolean()) {
            md.append("; both servers are also compared with the model run on the CPU");
        }
        md.append(".\n\n");
        if (bad > 0) {
            md.append("| rows | body | mode | Java vs PyTorch | Java vs CPU | PyTorch vs CPU |\n"
                    + "|---|---|---|---|---|---|\n");
            for (JsonNode c : cases) {
                if (!c.path("agree").asBoolean()) {
                    md.append(String.format(Locale.ROOT, "| %d | %s | %s | %.2e | %s | %s |%n", c.path("rows").asInt(),
                            c.path("encoding").asText(), c.path("mode").asText(), c.path("errorAB").asDouble(),
                            c.path("errorA").asText(), c.path("errorB").asText()));
                }
            }
            md.append('\n');
        }
    }

    private void loadSection(StringBuilder md, Map<String, Series> byServer) {
        Series any = byServer.values().iterator().next();
        md.append("## ").append(mixTitle(any.options())).append("\n\n");
        md.append("Latencies in µs of the 200 answers; `ok/s` is 200 answers per second; `*` marks a point not "
                + "sustained.\n\n");
        StringBuilder header = new StringBuilder("| offered/s |");
        StringBuilder rule = new StringBuilder("|---:|");
        for (String server : SERVERS) {
            String name = NAMES.get(server);
            header.append(' ').append(name).append(" ok/s | p50 | p99 | p99.9 | max | 503 | errors |");
            rule.append("---:|---:|---:|---:|---:|---:|---:|");
        }
        header.append(" p99 Java/PyTorch |");
        rule.append("---:|");
        md.append(header).append('\n').append(rule).append('\n');
        TreeSet<Integer> rates = new TreeSet<>();
        byServer.values().forEach(s -> s.points().stream().filter(p -> !p.path("recovery").asBoolean())
                .forEach(p -> rates.add(p.path("offeredPerSecond").asInt())));
        for (int rate : rates) {
            row(md, Integer.toString(rate), byServer, rate, false);
        }
        TreeSet<Integer> recoveries = new TreeSet<>();
        byServer.values().forEach(s -> s.points().stream().filter(p -> p.path("recovery").asBoolean())
                .forEach(p -> recoveries.add(p.path("offeredPerSecond").asInt())));
        for (int rate : recoveries) {
            row(md, rate + " (recovery)", byServer, rate, true);
        }
        md.append('\n');
    }

    private static void row(StringBuilder md, String label, Map<String, Series> byServer, int rate, boolean recovery) {
        md.append("| ").append(label).append(" |");
        Map<String, JsonNode> at = new LinkedHashMap<>();
        for (String server : SERVERS) {
            Optional<JsonNode> point = point(byServer.get(server), rate, recovery);
            if (point.isEmpty()) {
                md.append(" — | | | | | | |");
                continue;
            }
            JsonNode p = point.get();
            at.put(server, p);
            md.append(String.format(Locale.ROOT, " %s%s | %s | %s | %s | %s | %d | %s |", f(p.path("completedPerSecond")
                    .asDouble()), p.path("sustained").asBoolean() ? "" : "*", f(p.path("p50Micros").asDouble()),
                    f(p.path("p99Micros").asDouble()), f(p.path("p999Micros").asDouble()),
                    f(p.path("maxMicros").asDouble()), p.path("unavailable").asLong(), errors(p)));
        }
        JsonNode java = at.get("java");
        JsonNode torch = at.get("torch");
        md.append(java != null && torch != null && torch.path("p99Micros").asDouble() > 0
                && java.path("ok").asLong() > 0 ? " " + String.format(Locale.ROOT, "%.2f",
                java.path("p99Micros").asDouble() / torch.path("p99Micros").asDouble()) + " |" : " |");
        md.append('\n');
    }

    private static String errors(JsonNode p) {
        long errors = p.path("errors").asLong();
        long timeouts = p.path("timeouts").asLong();
        long dropped = p.path("dropped").asLong();
        String text = Long.toString(errors);
        if (timeouts > 0) {
            text += " (" + timeouts + " timed out)";
        }
        if (dropped > 0) {
            text += ", " + dropped + " not sent";
        }
        return text;
    }

    private static Optional<JsonNode> point(Series series, int rate, boolean recovery) {
        if (series == null) {
            return Optional.empty();
        }
        return series.points().stream().filter(p -> p.path("offeredPerSecond").asInt() == rate
                && p.path("recovery").asBoolean() == recovery).findFirst();
    }

    private static boolean clean(JsonNode p) {
        return p.path("errors").asLong() == 0 && p.path("unavailable").asLong() == 0
                && p.path("dropped").asLong() == 0 && p.path("ok").asLong() > 0;
    }

    /** The highest 200-answer rate among points with p99 under 10 ms and every request answered 200. */
    static Optional<JsonNode> bestUnder10ms(Series series) {
        if (series == null) {
            return Optional.empty();
        }
        return series.points().stream().filter(p -> !p.path("recovery").asBoolean())
                .filter(p -> clean(p) && p.path("p99Micros").asDouble() < P99_LIMIT_MICROS)
                .max(Comparator.comparingDouble(p -> p.path("completedPerSecond").asDouble()));
    }

    private void targetsSection(StringBuilder md) {
        if (loads.isEmpty() && floor == null && latency == null) {
            return;
        }
        md.append("## Targets\n\n");
        md.append("| mix | target | this run | verdict |\n|---|---|---|---|\n");
        floorTargets(md);
        for (Map.Entry<String, Map<String, Series>> load : loads.entrySet()) {
            Map<String, Series> byServer = load.getValue();
            Series java = byServer.get("java");
            Series torch = byServer.get("torch");
            String mix = mixTitle(byServer.values().iterator().next().options());
            // p99 at every load both sustain
            List<String> ratios = new ArrayList<>();
            boolean met = true;
            if (java != null && torch != null) {
                for (JsonNode j : java.points()) {
                    if (j.path("recovery").asBoolean() || !j.path("sustained").asBoolean()) {
                        continue;
                    }
                    Optional<JsonNode> t = point(torch, j.path("offeredPerSecond").asInt(), false);
                    if (t.isPresent() && t.get().path("sustained").asBoolean()) {
                        double ratio = j.path("p99Micros").asDouble() / t.get().path("p99Micros").asDouble();
                        ratios.add(j.path("offeredPerSecond").asInt() + "/s: "
                                + String.format(Locale.ROOT, "%.2f", ratio));
                        met &= ratio <= P99_RATIO_TARGET;
                    }
                }
            }
            md.append("| ").append(mix).append(" | Java p99 ≤ ").append(P99_RATIO_TARGET)
                    .append("× PyTorch's at every load both sustain | ")
                    .append(ratios.isEmpty() ? "no load both sustain" : String.join(", ", ratios)).append(" | ")
                    .append(ratios.isEmpty() ? "n/a" : met ? "met" : "missed").append(" |\n");
            // throughput at p99 < 10 ms
            Optional<JsonNode> bestJava = bestUnder10ms(java);
            Optional<JsonNode> bestTorch = bestUnder10ms(torch);
            String throughput = "Java " + bestJava.map(p -> f(p.path("completedPerSecond").asDouble()) + "/s (offered "
                    + p.path("offeredPerSecond").asInt() + ")").orElse("none") + ", PyTorch "
                    + bestTorch.map(p -> f(p.path("completedPerSecond").asDouble()) + "/s (offered "
                    + p.path("offeredPerSecond").asInt() + ")").orElse("none");
            String verdict = "n/a";
            if (bestJava.isPresent() && bestTorch.isPresent()) {
                double ratio = bestJava.get().path("completedPerSecond").asDouble()
                        / bestTorch.get().path("completedPerSecond").asDouble();
                throughput += String.format(Locale.ROOT, ": %.2f×", ratio);
                boolean javaTopped = isLast(java, bestJava.get());
                verdict = ratio >= THROUGHPUT_TARGET ? "met" : javaTopped ? "not reached (Java's best is the highest "
                        + "rate offered: offer more)" : "missed";
            }
            md.append("| ").append(mix).append(" | the most 200s/s with p99 < 10 ms and no error: Java ≥ ")
                    .append(THROUGHPUT_TARGET).append("× PyTorch | ").append(throughput).append(" | ").append(verdict)
                    .append(" |\n");
            // errors
            for (String server : SERVERS) {
                Series series = byServer.get(server);
                if (series == null) {
                    continue;
                }
                md.append("| ").append(mix).append(" | ").append(NAMES.get(server))
                        .append(": no error below saturation, only 503s above it, recovers | ")
                        .append(errorVerdict(series)).append(" |\n");
            }
        }
        md.append('\n');
    }

    private static boolean isLast(Series series, JsonNode point) {
        return series.points().stream().filter(p -> !p.path("recovery").asBoolean())
                .mapToInt(p -> p.path("offeredPerSecond").asInt()).max().orElse(0)
                == point.path("offeredPerSecond").asInt();
    }

    /**
     * "this run | verdict" for the error target. Arrivals the load generator held back at its
     * in-flight cap never reached the server: they are reported, not counted as server errors.
     */
    static String errorVerdict(Series series) {
        long errorsBelow = 0;
        long errorsAbove = 0;
        long unavailableAbove = 0;
        long heldBack = 0;
        boolean saturated = false;
        Boolean recovered = null;
        for (JsonNode p : series.points()) {
            long errors = p.path("errors").asLong();
            if (p.path("recovery").asBoolean()) {
                recovered = p.path("sustained").asBoolean();
            } else if (p.path("sustained").asBoolean() && !saturated) {
                errorsBelow += errors;
            } else {
                saturated = true;
                errorsAbove += errors;
                unavailableAbove += p.path("unavailable").asLong();
                heldBack += p.path("dropped").asLong();
            }
        }
        String text = errorsBelow + " errors below saturation; ";
        text += saturated ? "above it " + unavailableAbove + " 503s and " + errorsAbove + " other errors (timeouts or "
                + "failed exchanges)" : "not saturated";
        if (heldBack > 0) {
            text += ", and " + heldBack + " arrivals the load generator held back at its in-flight cap";
        }
        if (recovered != null) {
            text += "; recovery point " + (recovered ? "sustained" : "NOT sustained");
        }
        boolean met = errorsBelow == 0 && errorsAbove == 0 && (recovered == null || recovered);
        return text + " | " + (saturated ? met ? "met" : "missed" : errorsBelow == 0 ? "met below saturation (never "
                + "saturated)" : "missed");
    }

    private void wrkSection(StringBuilder md) {
        if (wrk.isEmpty()) {
            return;
        }
        md.append("## wrk (an independent, closed-loop client)\n\n");
        md.append("`wrk` keeps a fixed number of connections busy, each sending its next request when the last is "
                + "answered: it measures the throughput a server reaches, and latencies that do not include queueing "
                + "before a request is sent (coordinated omission), unlike the table above.\n\n");
        md.append("| server | body | threads | connections | s | requests/s | p50 µs | p99 µs | max µs | non-2xx | "
                + "socket errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (JsonNode w : wrk) {
            String file = w.path("file").asText();
            String[] parts = file.substring("wrk-".length(), file.length() - ".json".length()).split("-", 2);
            md.append(String.format(Locale.ROOT, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %d | %d |%n",
                    NAMES.getOrDefault(parts[0], parts[0]), parts.length > 1 ? parts[1] : "",
                    w.path("threads").asInt(), w.path("connections").asInt(), f(w.path("seconds").asDouble()),
                    f(w.path("requests_per_second").asDouble()), f(w.path("p50_us").asDouble()),
                    f(w.path("p99_us").asDouble()), f(w.path("max_us").asDouble()), w.path("non_2xx").asLong(),
                    w.path("socket_errors").asLong()));
        }
        md.append('\n');
    }

    /** Three significant figures, without exponents. */
    static String f(double v) {
        if (Double.isNaN(v)) {
            return "n/a";
        }
        if (v == 0) {
            return "0";
        }
        double a = Math.abs(v);
        if (a >= 100) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        return a >= 10 ? String.format(Locale.ROOT, "%.1f", v) : String.format(Locale.ROOT, "%.2f", v);
    }
}
