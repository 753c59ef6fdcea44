package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.cudagraph4j.benchmarks.Charts;
import org.cudagraph4j.benchmarks.Svg;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.knowm.xchart.XYChart;

/** The serving report from a made-up run's folder. */
class ServingReportTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** offered, ok/s, p50, p99, 503s, errors, sustained, recovery */
    private static HttpLoad.Point point(int offered, double ok, double p50, double p99, long unavailable, long errors,
            boolean sustained, boolean recovery) {
        long sent = (long) offered * 5;
        return new HttpLoad.Point(offered, ok, sent, sustained ? sent : (long) (ok * 5), unavailable, errors, 0, 0, p50,
                p50 * 1.5, p99, p99 * 1.2, p99 * 2, p50 * 1.1, 5, recovery, sustained);
    }

    private static void load(Path dir, String file, boolean binary, int maxRows, List<HttpLoad.Point> points)
            throws Exception {
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("label", file);
        report.put("options", new HttpLoad.Options(URI.create("http://127.0.0.1:1/v2/models/mlp/infer"), 512,
                points.stream().map(HttpLoad.Point::offeredPerSecond).distinct().toList(), 5, 200_000, 1, maxRows,
                binary, 5, 2048, 1, true, true));
        report.put("points", points);
        JSON.writeValue(dir.resolve("load-" + file + ".json").toFile(), report);
    }

    private static void run(Path dir) throws Exception {
        Files.writeString(dir.resolve("run.properties"), "name=nvidia-h200-2026-12-01\nseconds=5\nwarmup=1\n"
                + "model=16 x (Linear(512, 512) + ReLU)\njava.server=serving mlp on http://127.0.0.1:18000\n"
                + "torch.server=serving mlp on http://127.0.0.1:18001 (torch 2.11.0)\n");
        load(dir, "java-rows1-json", false, 1, List.of(point(1000, 1000, 300, 600, 0, 0, true, false),
                point(4000, 4000, 320, 700, 0, 0, true, false), point(16000, 15900, 400, 2000, 0, 0, true, false),
                point(64000, 30000, 9000, 400_000, 5000, 0, false, false),
                point(1000, 1000, 310, 650, 0, 0, true, true)));
        load(dir, "torch-rows1-json", false, 1, List.of(point(1000, 1000, 700, 1500, 0, 0, true, false),
                point(4000, 3900, 900, 4000, 0, 0, true, false),
                point(16000, 5000, 800_000, 2_000_000, 0, 120, false, false),
                point(1000, 990, 800, 1600, 0, 0, true, true)));
        load(dir, "java-rows1-64-binary", true, 64, List.of(point(100, 100, 900, 2000, 0, 0, true, false)));
        load(dir, "torch-rows1-64-binary", true, 64, List.of(point(100, 100, 1500, 3000, 0, 0, true, false)));
        List<CrossCheck.Case> cases = new ArrayList<>();
        for (int rows : new int[] {1, 64, 300}) {
            cases.add(new CrossCheck.Case(rows, "json", "sequential", 2e-6, 1e-6, 1.5e-6, true));
        }
        cases.add(new CrossCheck.Case(64, "binary", "concurrent", 0.3, 0.3, 1e-6, false));
        JSON.writeValue(dir.resolve("crosscheck.json").toFile(), new CrossCheck.Result("http://127.0.0.1:18000",
                "http://127.0.0.1:18001", "mlp", 512, 512, 1e-4, true, cases, 0.3, false, null));
        Files.writeString(dir.resolve("wrk-torch-rows1-json.json"), "{\"threads\":4,\"connections\":64,"
                + "\"seconds\":5.0,\"requests\":20000,\"requests_per_second\":4000.5,\"p50_us\":900,\"p99_us\":3000,"
                + "\"max_us\":9000,\"non_2xx\":0,\"socket_errors\":0}");
    }

    private static long count(String text, String regex) {
        return Pattern.compile(regex).matcher(text).results().count();
    }

    @Test
    void tablesTargetsAndCrossCheck(@TempDir Path dir) throws Exception {
        run(dir);
        String md = ServingReport.read(dir).markdown();
        assertTrue(md.startsWith("# Serving: the Java server against its PyTorch twin, nvidia-h200-2026-12-01"), md);
        assertTrue(md.contains("## 1 row per request, JSON"), md);
        assertTrue(md.contains("## 1–64 rows (uniform) per request, binary tensor data"), md);
        assertTrue(md.indexOf("## 1 row per request") < md.indexOf("## 1–64 rows"), "single rows first");
        // both servers at 1000/s, with the p99 ratio
        assertTrue(md.contains("| 1000 | 1000 | 300 | 600 | 720 | 1200 | 0 | 0 | 1000 | 700 | 1500 | 1800 | 3000 | 0 "
                + "| 0 | 0.40 |"), md);
        // PyTorch stopped at 16000: 64000 was not run for it
        assertTrue(md.contains("| 64000 | 30000* |"), md);
        assertTrue(md.contains("| — | | | | | | | |"), md);
        assertTrue(md.contains("| 1000 (recovery) |"), md);
        // targets: 1000/s 0.40 and 4000/s 0.18 both sustained, so met
        assertTrue(md.contains("1000/s: 0.40, 4000/s: 0.18 | met |"), md);
        // throughput under 10 ms: Java 15900 (at 16000), PyTorch 3900 (at 4000): 4.08x, met
        assertTrue(md.contains("Java 15900/s (offered 16000), PyTorch 3900/s (offered 4000): 4.08× | met |"), md);
        assertTrue(md.contains("PyTorch: no error below saturation, only 503s above it, recovers | 0 errors below "
                + "saturation; above it 0 503s and 120 other errors"), md);
        assertTrue(md.contains("recovery point sustained | missed |"), md);
        assertTrue(md.contains("Java (cudagraph4j): no error below saturation, only 503s above it, recovers | 0 errors "
                + "below saturation; above it 5000 503s and 0 other errors (timeouts or failed exchanges); recovery point "
                + "sustained | met |"), md);
        // the mix where one point each: 0.67 missed
        assertTrue(md.contains("100/s: 0.67 | missed |"), md);
        assertTrue(md.contains("**FAIL**: 3 of 4 answers agree (requests of 1, 64, 300 rows"), md);
        assertTrue(md.contains("| 64 | binary | concurrent | 3.00e-01 |"), md);
        assertTrue(md.contains("| PyTorch | rows1-json | 4 | 64 | 5.00 | 4001 | 900 | 3000 | 9000 | 0 | 0 |"), md);
        assertTrue(md.contains("- PyTorch: `serving mlp on http://127.0.0.1:18001 (torch 2.11.0)`"), md);
    }

    @Test
    void theChartHasAPanelPerMixWithBothServersP50AndP99AndTheLimit(@TempDir Path dir) throws Exception {
        assumeTrue(Charts.drawable(), "drawing needs java.desktop");
        run(dir);
        ServingReport.write(dir);
        assertTrue(Files.readString(dir.resolve("results.md")).contains("![p50 and p99 latency"));
        String chart = Files.readString(dir.resolve("chart.svg"));
        Svg svg = Svg.parse(chart);
        assertEquals("Latency against offered load, nvidia-h200-2026-12-01 (open loop, from intended arrival; hollow: "
                + "not sustained)", svg.title());
        String series = ": Java (cudagraph4j) p50, Java (cudagraph4j) p99, PyTorch p50, PyTorch p99, p99 limit, 10 ms";
        assertEquals("1 row per request, JSON" + series + "\n1–64 rows (uniform) per request, binary tensor data"
                + series, svg.description());
        // Hollow: Java did not sustain 64000/s, PyTorch 16000/s; a ring each for p50 and p99, all in the JSON mix.
        assertEquals(2, count(chart, "<ellipse [^>]*style=\"fill:none;stroke:rgb\\(214,39,40\\)"), chart);
        assertEquals(2, count(chart, "<ellipse [^>]*style=\"fill:none;stroke:rgb\\(85,85,85\\)"), chart);
    }

    @Test
    void theChartIsLogLogWithWholeDecadesAroundThePointsAndTheLimit(@TempDir Path dir) throws Exception {
        assumeTrue(Charts.drawable(), "drawing needs java.desktop");
        run(dir);
        Map<String, ServingReport.Series> binary = new LinkedHashMap<>();
        for (String server : ServingReport.SERVERS) {
            JsonNode load = JSON.readTree(dir.resolve("load-" + server + "-rows1-64-binary.json").toFile());
            List<JsonNode> points = new ArrayList<>();
            load.path("points").forEach(points::add);
            binary.put(server, new ServingReport.Series(server, "rows1-64-binary", load.path("options"), points));
        }
        XYChart chart = ServingChart.chart(binary, 480);
        assertTrue(chart.getStyler().isXAxisLogarithmic() && chart.getStyler().isYAxisLogarithmic());
        // one rate, 100/s: the decade from it; latencies 0.9 to 3 ms and the 10 ms limit: 0.1 to 100 ms
        assertEquals(100, chart.getStyler().getXAxisMin());
        assertEquals(1000, chart.getStyler().getXAxisMax());
        assertEquals(0.1, chart.getStyler().getYAxisMin(), 1e-12);
        assertEquals(100, chart.getStyler().getYAxisMax(), 1e-9);
        assertFalse(chart.getSeriesCollection().stream().anyMatch(series -> series.getName().endsWith("not sustained")),
                "every point sustained: no rings");
    }

    @Test
    void anEmptyFolderStillGivesAReport(@TempDir Path dir) throws Exception {
        ServingReport report = ServingReport.read(dir);
        assertTrue(report.markdown().contains("No cross-check in this folder."));
        assumeTrue(Charts.drawable(), "drawing needs java.desktop");
        ServingReport.write(dir);
        assertTrue(Svg.parse(Files.readString(dir.resolve("chart.svg"))).description()
                .contains("no load results in this folder"));
    }
}
