package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategorySeries;

/** What Report adds to results.md beyond the launch-overhead tables (those: the committed H200 run), and its chart. */
class ReportTest {
    private static final Path LAUNCH_OVERHEAD_RUN = Path.of("results/nvidia-h200-2026-11-29");

    @Test
    void theServingLoadPointsBecomeATable() throws IOException {
        Report report = new Report();
        report.readServingLoad("""
                {"device":"NVIDIA H200","width":512,"layers":16,"rowsPerRequest":1,"points":[
                  {"policy":"EAGER","offeredPerSecond":1000,"completedPerSecond":999.6,"completed":4998,"rejected":0,
                   "failed":0,"p50Micros":210.5,"p99Micros":390.25,"p999Micros":610.0,"maxMicros":900.0}]}
                """);
        String md = report.markdown();
        assertTrue(md.startsWith("# Benchmarks on NVIDIA H200\n"), "the GPU ServingLoad named: " + md);
        assertTrue(md.contains("16-layer width-512 MLP, 1 row(s) per request"), md);
        assertTrue(md.contains("| EAGER | 1000 | 1000 | 210.5 | 390.3 | 610.0 | 900.0 | 0 | 0 |"), md);
    }

    @Test
    void theSameProcessBaselineBecomesATableWithTheCaptureAndUpdateTargets() throws IOException {
        Report report = new Report();
        report.readSameProcess("""
                {"device":"NVIDIA H200","iterationsPerRound":2000,"rows":[
                  {"loop":"eager","n":1,"javaMicros":10.05,"nativeMicros":9.98,"ratio":1.006,"ratioP25":0.997,
                   "ratioP75":1.012,"rounds":31},
                  {"loop":"capture","n":1000,"javaMicros":906.6,"nativeMicros":484.7,"ratio":1.865,"ratioP25":1.841,
                   "ratioP75":1.913,"rounds":31},
                  {"loop":"update-node","n":1000,"javaMicros":0.64,"nativeMicros":0.54,"ratio":1.19,"ratioP25":1.1,
                   "ratioP75":1.25,"rounds":31}]}
                """);
        String md = report.markdown();
        assertTrue(md.startsWith("# Benchmarks on NVIDIA H200\n"), "the GPU SameProcess named: " + md);
        assertFalse(md.contains("## Eager launches"), "no launch tables of n/a: " + md);
        assertTrue(md.contains("Per repetition, medians over 31 rounds"), md);
        assertTrue(md.contains("| eager | 1 | 10.05 | 9.98 | 1.006 | 0.997 - 1.012 |"), md);
        assertTrue(md.contains("| capture | 1000 | 907 | 485 | 1.865 | 1.841 - 1.913 |"), md);
        assertTrue(md.contains("- capture of 1000 nodes at most 1.2x native: **missed (ratio 1.865)**"), md);
        assertTrue(md.contains("executable at most 1.2x native: **met (ratio 1.190)**"), md);
    }

    @Test
    void aRunOfTheMlpAloneChartsTheMlpOnlyAndNamesTheGpuFromItsLog() throws Exception {
        Report report = new Report();
        report.mlp().read("""
                device: NVIDIA H200, 132 SMs
                MLP16 native graph PDL: width 512 batch 32: 74.9 us/forward sync each (median), 69.2 us pipelined; \
                cg4j_simt_gemv_f32_8x4x128_w4_tnt_align4_bias_f32_relu x1 slices
                MLP16 torch graph: width 512 batch 32: 171.6 us sync each, 164.7 us pipelined
                """);
        List<Report.PanelRow> rows = report.chartRows();
        assertEquals(1, rows.size(), "no launch-overhead panels without their results");
        assertEquals("16-layer MLP on NVIDIA H200, µs per forward synchronising each", rows.get(0).heading());
        assertEquals(List.of("width 512"), rows.get(0).panels().stream().map(Report.BarPanel::title).toList());
        String md = report.markdown();
        assertTrue(md.startsWith("# Benchmarks on NVIDIA H200\n"), md);
        assertFalse(md.contains("## Eager launches"), "no launch tables of n/a: " + md);
        assertTrue(md.contains("| 512 | 32 | gemv 8x4 x1 |"), md);

        assumeTrue(Charts.drawable(), "drawing needs java.desktop");
        Svg svg = Svg.parse(ResultsChart.svg(rows));
        assertEquals("16-layer MLP on NVIDIA H200, µs per forward synchronising each", svg.title());
        assertEquals("width 512: cudagraph4j graph (PDL), PyTorch graph replay, cuBLASLt graph", svg.description());
        assertEquals(ResultsChart.WIDTH + "px", svg.attribute("width"));
    }

    @Test
    void aPanelWithoutAValueSaysSoInsteadOfDrawingAnEmptyScale() throws Exception {
        Report report = new Report();
        report.readNative("""
                {"device":"NVIDIA H200","driver_release":"580.159.04","runtime":"13.0",
                 "benchmarks":[{"name":"binding/cudaLaunchKernel","median":2051.0}]}
                """);
        List<Report.PanelRow> rows = report.chartRows();
        assertEquals("Launch overhead on NVIDIA H200 (medians of one run)", rows.get(0).heading());
        assertFalse(rows.get(0).panels().get(0).measured(), "no eager or graph launch was timed");
        assertTrue(rows.get(0).panels().get(1).measured());

        assumeTrue(Charts.drawable(), "drawing needs java.desktop");
        assertNull(ResultsChart.panel(rows.get(0).panels().get(0), 480).chart(), "no scale without a value");
        String svg = ResultsChart.svg(rows);
        assertTrue(Svg.parse(svg).description().startsWith(
                "Eager launches vs one graph launch: not measured in this run\nOne call through each binding: "), svg);
        assertFalse(svg.contains("NaN"), svg);
    }

    @Test
    void aRunOfTheLifecycleRowsAloneHasOnlyTheirTableAndNoChart() throws Exception {
        Report report = new Report();
        report.readNative("""
                {"device":"NVIDIA H200","driver_release":"580.159.04","runtime":"13.0","benchmarks":[
                  {"name":"graph_lifecycle/capture/1000","median":465.0}]}
                """);
        String md = report.markdown();
        assertTrue(md.contains("| capture | 1000 | n/a | 465 | n/a |"), md);
        assertFalse(md.contains("## Eager launches"), "no table of n/a: " + md);
        assertFalse(md.contains("## Targets"), "no targets it has nothing for: " + md);
        assertEquals(List.of(), report.chartRows());
    }

    @Test
    void theLaunchPanelsDrawEachSeriesOnALogScaleAndSlantTheCallNamesSoThatTheyDoNotOverlap() throws Exception {
        Report report = new Report();
        report.readJmh(Report.text(LAUNCH_OVERHEAD_RUN.resolve("jmh.json.gz")));
        report.readNative(Files.readString(LAUNCH_OVERHEAD_RUN.resolve("native.json")));
        List<Report.BarPanel> panels = report.chartRows().get(0).panels();
        assumeTrue(Charts.drawable(), "drawing needs java.desktop");

        CategoryChart launches = (CategoryChart) ResultsChart.panel(panels.get(0), 480).chart();
        assertEquals(List.of("Java eager", "Java graph", "native eager", "native graph"),
                launches.getSeriesCollection().stream().map(CategorySeries::getName).toList());
        assertTrue(launches.getStyler().isYAxisLogarithmic());
        CategorySeries javaEager = launches.getSeries("Java eager");
        assertEquals(List.of("N=1", "N=2", "N=8", "N=32", "N=128"), javaEager.getXData());
        double shortest = Arrays.stream(javaEager.getYData()).min().orElseThrow();
        assertTrue(launches.getStyler().getYAxisMin() < shortest, "every bar above the axis");
        assertEquals(0, launches.getStyler().getXAxisLabelRotation(), "N=128 fits its group");

        CategoryChart bindings = (CategoryChart) ResultsChart.panel(panels.get(1), 480).chart();
        assertEquals(List.of("Java API", "raw bindings", "JNI (JavaCPP)", "native C++"),
                bindings.getSeriesCollection().stream().map(CategorySeries::getName).toList());
        assertNotEquals(0, bindings.getStyler().getXAxisLabelRotation(), "cudaLaunchKernel is wider than its group");

        Svg svg = Svg.parse(ResultsChart.svg(report.chartRows()));
        assertEquals("Launch overhead on NVIDIA H200 (medians of one run)", svg.title());
        assertTrue(svg.description().startsWith("Eager launches vs one graph launch: Java eager, Java graph, "
                + "native eager, native graph\n"), svg.description());
    }
}
