package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The load generator against the server on the CPU backend: a short, bounded run. */
class HttpLoadTest {
    @Test
    void aBoundedOpenLoopRunAnswersEveryRequestAndReportsPercentiles() throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MlpWeights.random(8, 2, 3)), 0,
                1 << 20)) {
            HttpLoad.Options options = new HttpLoad.Options(
                    URI.create("http://127.0.0.1:" + server.port() + "/v2/models/mlp/infer"), 8, List.of(200, 400), 0.5,
                    150, 1, 4);
            List<HttpLoad.Point> points = HttpLoad.run(options);
            assertEquals(2, points.size());
            for (HttpLoad.Point point : points) {
                assertEquals(0, point.errors(), point.toString());
                assertEquals(0, point.unavailable(), point.toString());
                assertTrue(point.ok() > 0 && point.ok() <= 150, "bounded in requests: " + point);
                assertTrue(point.p50Micros() > 0 && point.p99Micros() >= point.p50Micros(), point.toString());
            }
        }
    }
}
