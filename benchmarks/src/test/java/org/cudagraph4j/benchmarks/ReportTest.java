package org.cudagraph4j.benchmarks;

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
        assertTrue(md.contains("16-layer width-512 MLP, 1 row(s) per request"), md);
        assertTrue(md.contains("| EAGER | 1000 | 1000 | 210.5 | 390.3 | 610.0 | 900.0 | 0 | 0 |"), md);
    }
}
