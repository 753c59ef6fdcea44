package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The MLP comparison, on the split-K sweep's console output of an H200, 2026-11-29 (committed beside the kernels). */
class MlpResultsTest {
    private static final Path SPLIT_K_SWEEP = Path.of("../kernels/test/results/h200-skinny-splitk.log");

    private static MlpResults splitKSweep() throws IOException {
        MlpResults results = new MlpResults();
        results.read(Files.readString(SPLIT_K_SWEEP));
        return results;
    }

    @Test
    void theRatioIsTheFasterNativeGraphOverPyTorchsGraphReplay() throws IOException {
        MlpResults results = splitKSweep();
        assertEquals(206.3 / 177.4, results.ratio(512, 32), 1e-12, "PDL was faster at width 512, batch 32");
        assertEquals(171.1 / 233.7, results.ratio(1024, 8), 1e-12, "PDL was slower at width 1024, batch 8");
        assertNull(results.ratio(2048, 32), "a width that was not measured has no ratio");
    }

    @Test
    void theTableNamesTheConfigurationAndTheTargetsSayHowManyCellsMetThem() throws IOException {
        String md = splitKSweep().markdown();
        assertTrue(md.contains("| 512 | 32 | 32x32 x1 | 209.9 | 206.3 | 200.4 | n/a | 754.3 | 177.4 | 165.3 | 1.16 |"),
                md);
        assertTrue(md.contains("- width 512, batch 32: at most 0.5: missed (0 of 1 cells, worst 1.16)"), md);
        assertTrue(md.contains("- every batch at widths 512 and 1024: at most 0.8: missed (3 of 10 cells, worst 1.31)"),
                md);
        assertTrue(md.contains("- width 4096, batch 256: at most 1.0: missed (0 of 1 cells, worst 1.11)"), md);
    }

    @Test
    void theJavaGraphIsAColumnWhenJmhRanIt() throws IOException {
        String key = MlpResults.javaKey("graph", 512, 32, "true");
        assertTrue(splitKSweep().markdown(java.util.Map.of(key, 210.4)).contains("| 200.4 | 210.4 | 754.3 |"));
        assertTrue(key.equals("mlp/graph/512/32/pdl"), key);
    }

    @Test
    void aGemvInstanceIsNamedAsSuchAndASplitKLineBesideItIsNotTheResult() {
        MlpResults results = new MlpResults();
        results.read("""
                MLP16 native graph PDL: width 512 batch 32: 90.8 us/forward sync each (median), 85.5 us pipelined; \
                cg4j_simt_gemv_f32_8x8x128_w4_tnt_align4_bias_f32_relu x1 slices
                MLP16 split-K graph PDL: width 512 batch 32: 149.6 us/forward sync each (median), 144.1 us pipelined; \
                cg4j_simt_sgemm_f32_32x32x16_4_tnt_align1_bias_f32_relu_splitk_r4 x4 slices
                MLP16 torch graph: width 512 batch 32: 172.3 us sync each, 165.4 us pipelined
                """);
        assertEquals(90.8 / 172.3, results.ratio(512, 32), 1e-12);
        assertTrue(results.markdown().contains("| 512 | 32 | gemv 8x8 x1 | n/a | 90.8 | 85.5 |"), results.markdown());
    }

    /** Lines as native/mlp_cublaslt.cu prints them: only the "MLP16 cublaslt graph" ones are results. */
    private static final String CUBLASLT_LOG = """
            device: NVIDIA H200, 132 SMs; cuBLASLt 130100, CUDA runtime 13000; FP32, CUBLAS_COMPUTE_32F (no TF32), \
            epilogue RELU_BIAS, heuristic's first algorithm, 32 MiB workspace
            clock warm-up: 2.1 s of spinning kernels on every SM before the first measurement
            cublaslt algo: width 512 batch 32: id 21 tile 15 stages 8 split-k 1 reduction 0 swizzle 0, \
            workspace 0 bytes, waves 0.12
            check cublaslt 1 layer: width 512 batch 32: relative error 3.10e-07 over 32 rows
            check cublaslt eager 16 layers: width 512 batch 32: relative error 1.20e-06 over 32 rows
            check cublaslt graph 16 layers: width 512 batch 32: relative error 1.20e-06 over 32 rows
            graph: width 512 batch 32: 16 nodes for 16 layers
            MLP16 cublaslt graph: width 512 batch 32: 117.0 us/forward sync each (median), 110.5 us pipelined
            MLP16 cublaslt graph: width 1024 batch 8: 150.0 us/forward sync each (median), 140.0 us pipelined
            CHECK FAILED cublaslt graph 16 layers: width 4096 batch 256: 0 non-finite outputs, relative error 0.9 \
            over 32 rows (tolerance 0.0001)

            checks failed: 1
            """;

    @Test
    void theRatioToCublasLtIsTheFasterNativeGraphOverCublasLtsGraph() throws IOException {
        MlpResults results = splitKSweep();
        results.read(CUBLASLT_LOG);
        assertEquals(206.3 / 117.0, results.ratioToCublasLt(512, 32), 1e-12);
        assertEquals(171.1 / 150.0, results.ratioToCublasLt(1024, 8), 1e-12);
        assertNull(results.ratioToCublasLt(4096, 256), "a cell that failed its check has no cuBLASLt time");
        assertEquals(206.3 / 177.4, results.ratio(512, 32), 1e-12, "the ratio to PyTorch is unchanged");
        String md = results.markdown();
        assertTrue(md.contains("| 512 | 32 | 32x32 x1 | 209.9 | 206.3 | 200.4 | n/a | 754.3 | 177.4 | 165.3 | 1.16 "
                + "| 117.0 | 1.76 |"), md);
        assertTrue(md.contains("| ratio | cuBLASLt graph sync | best / cuBLASLt |"), md);
    }

    @Test
    void withoutTheCublasLtLogItsColumnsReadNotAvailable() throws IOException {
        MlpResults results = splitKSweep();
        results.read("run-benchmarks: mlp_cublaslt.cu did not build (no cuBLAS headers or libcublasLt?), so no "
                + "cuBLASLt MLP baseline; see native-build.log\n");
        assertNull(results.ratioToCublasLt(512, 32));
        assertTrue(results.markdown().contains("| 177.4 | 165.3 | 1.16 | n/a | n/a |"));
    }

    @Test
    void theCublasLtLogAloneMakesCellsWithOnlyItsColumn() {
        MlpResults results = new MlpResults();
        results.read(CUBLASLT_LOG);
        assertTrue(!results.isEmpty());
        assertNull(results.ratio(512, 32));
        assertNull(results.ratioToCublasLt(512, 32), "no native graph to compare");
        assertTrue(results.markdown().contains("| 512 | 32 | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a "
                + "| 117.0 | n/a |"), results.markdown());
    }

    @Test
    void withoutThePyTorchLogTheRatiosAndTargetsReadNotAvailable() throws IOException {
        MlpResults nativeOnly = new MlpResults();
        nativeOnly.read(Files.readString(SPLIT_K_SWEEP).lines().filter(l -> !l.contains("torch"))
                .reduce("", (a, b) -> a + b + "\n"));
        assertNull(nativeOnly.ratio(512, 32));
        assertTrue(nativeOnly.markdown().contains("- width 512, batch 32: at most 0.5: n/a (not measured)"));
    }

    @Test
    void theChartGetsAPanelPerMeasuredWidth() throws Exception {
        Report report = new Report();
        report.mlp().read(Files.readString(SPLIT_K_SWEEP));
        List<Report.BarPanel> panels = report.chartRows().get(0).panels();
        assertEquals(List.of("width 512", "width 1024", "width 4096"),
                panels.stream().map(Report.BarPanel::title).toList());
        Report.BarPanel width512 = panels.get(0);
        int batch32 = width512.groups().indexOf("b=32");
        assertEquals(206.3, width512.values().get(batch32)[0], "cudagraph4j graph (PDL)");
        assertTrue(Double.isNaN(width512.values().get(batch32)[2]), "cuBLASLt not run yet");
        report.mlp().read(CUBLASLT_LOG);
        assertEquals(117.0, report.chartRows().get(0).panels().get(0).values().get(batch32)[2]);

        assumeTrue(Charts.drawable(), "drawing needs java.desktop");
        Report beforeCublasLt = new Report();
        beforeCublasLt.mlp().read(Files.readString(SPLIT_K_SWEEP));
        String description = Svg.parse(ResultsChart.svg(beforeCublasLt.chartRows())).description();
        assertTrue(description.startsWith("width 512: cudagraph4j graph (PDL), PyTorch graph replay, cuBLASLt graph\n"),
                "the legend names cuBLASLt's series even before it ran: " + description);
    }
}
