package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

/** What Report adds to results.md beyond the launch-overhead tables (those: the committed H200 run). */
class ReportTest {
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
    void aRunOfTheMlpAloneChartsTheMlpOnlyAndNamesTheGpuFromItsLog() {
        Report report = new Report();
        report.mlp().read("""
                device: NVIDIA H200, 132 SMs
                MLP16 native graph PDL: width 512 batch 32: 74.9 us/forward sync each (median), 69.2 us pipelined; \
                cg4j_simt_gemv_f32_8x4x128_w4_tnt_align4_bias_f32_relu x1 slices
                MLP16 torch graph: width 512 batch 32: 171.6 us sync each, 164.7 us pipelined
                """);
        String svg = report.svg();
        assertFalse(svg.contains("µs per iteration"), "no launch-overhead panels without their results");
        assertTrue(svg.contains("height=\"420\""), "one row");
        assertTrue(svg.contains("16-layer MLP on NVIDIA H200"), svg);
        String md = report.markdown();
        assertTrue(md.startsWith("# Benchmarks on NVIDIA H200\n"), md);
        assertFalse(md.contains("## Eager launches"), "no launch tables of n/a: " + md);
        assertTrue(md.contains("| 512 | 32 | gemv 8x4 x1 |"), md);
    }

    @Test
    void aPanelWithoutAValueSaysSoInsteadOfDrawingAnEmptyScale() {
        String svg = new Report().svg();
        assertTrue(svg.contains("not measured in this run"), svg);
        assertFalse(svg.contains("NaN"), svg);
        assertFalse(svg.contains(">1.00<"), "no tick of a degenerate scale: " + svg);
    }
}
