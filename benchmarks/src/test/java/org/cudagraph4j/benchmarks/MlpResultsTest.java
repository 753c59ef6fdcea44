package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The MLP comparison, on the first H200 run's console output (committed beside the kernels). */
class MlpResultsTest {
    private static final Path FIRST_RUN = Path.of("../kernels/test/results/h200-skinny-run1.log");

    private static MlpResults firstRun() throws IOException {
        MlpResults results = new MlpResults();
        results.read(Files.readString(FIRST_RUN));
        return results;
    }

    @Test
    void theRatioIsTheFasterNativeGraphOverPyTorchsGraphReplay() throws IOException {
        MlpResults results = firstRun();
        assertEquals(206.3 / 177.4, results.ratio(512, 32), 1e-12, "PDL was faster at width 512, batch 32");
        assertEquals(171.1 / 233.7, results.ratio(1024, 8), 1e-12, "PDL was slower at width 1024, batch 8");
        assertNull(results.ratio(2048, 32), "a width that was not measured has no ratio");
    }

    @Test
    void theTableNamesTheConfigurationAndTheTargetsSayHowManyCellsMetThem() throws IOException {
        String md = firstRun().markdown();
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
        assertTrue(firstRun().markdown(java.util.Map.of(key, 210.4)).contains("| 200.4 | 210.4 | 754.3 |"));
        assertTrue(key.equals("mlp/graph/512/32/pdl"), key);
    }

    @Test
    void withoutThePyTorchLogTheRatiosAndTargetsReadNotAvailable() throws IOException {
        MlpResults nativeOnly = new MlpResults();
        nativeOnly.read(Files.readString(FIRST_RUN).lines().filter(l -> !l.contains("torch"))
                .reduce("", (a, b) -> a + b + "\n"));
        assertNull(nativeOnly.ratio(512, 32));
        assertTrue(nativeOnly.markdown().contains("- width 512, batch 32: at most 0.5: n/a (not measured)"));
    }

    @Test
    void theChartGetsAPanelPerMeasuredWidth() throws IOException {
        Report report = new Report();
        report.mlp().read(Files.readString(FIRST_RUN));
        String svg = report.svg();
        assertTrue(svg.contains(">width 512<") && svg.contains(">width 1024<") && svg.contains(">width 4096<"), svg);
        assertTrue(svg.contains("b=32 cudagraph4j graph (PDL): 206"), svg);
    }
}
