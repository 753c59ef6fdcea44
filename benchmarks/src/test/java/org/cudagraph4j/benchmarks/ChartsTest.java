package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The line a report prints where its runtime cannot draw the chart (the GPU bundle's: no java.desktop). */
class ChartsTest {
    @Test
    void theLineSaysWhereAndHowToDrawTheChart() {
        String line = Charts.notDrawn(Path.of("/results/run/chart.svg"), Report.class, "jmh.json", "native.json", ".");
        assertTrue(line.startsWith("Report: chart.svg not drawn: this Java runtime has no java.desktop module"), line);
        assertTrue(line.contains(" run in /results/run on a JDK 22+: java -cp "), line);
        assertTrue(line.endsWith(" org.cudagraph4j.benchmarks.Report jmh.json native.json ."), line);
        assertEquals(1, line.lines().count(), line);
    }
}
