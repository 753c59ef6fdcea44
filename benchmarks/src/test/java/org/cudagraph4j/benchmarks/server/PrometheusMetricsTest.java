package org.cudagraph4j.benchmarks.server;

import static org.cudagraph4j.benchmarks.server.TestClient.infer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code GET /metrics}: the Prometheus text format, counting what the server did. */
class PrometheusMetricsTest {
    /** Every sample of a scrape, by its name and labels as written. */
    private static Map<String, Double> samples(InferenceServer server) throws Exception {
        HttpResponse<byte[]> scrape = TestClient.get(server, "/metrics");
        assertEquals(200, scrape.statusCode());
        assertTrue(scrape.headers().firstValue("Content-Type").orElseThrow().startsWith("text/plain; version=0.0.4"));
        Map<String, Double> samples = new HashMap<>();
        for (String line : new String(scrape.body(), StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty() && !line.startsWith("#")) {
                int space = line.lastIndexOf(' ');
                samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
            }
        }
        return samples;
    }

    @Test
    void theServerCountsAnswersByStatusAndTimesThem() throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MlpWeights.random(4, 2, 1)), 0,
                ServerLimits.defaults())) {
            for (int i = 0; i < 3; i++) {
                assertEquals(200, infer(server, TestClient.request(1, 4, 1, 2, 3, 4)).statusCode());
            }
            assertEquals(400, infer(server, "{}").statusCode());
            Map<String, Double> samples = samples(server);
            assertEquals(3.0, samples.get("inference_request_success_total{model=\"mlp\",version=\"1\"}"));
            assertEquals(1.0, samples.get("inference_request_failure_total{code=\"400\",model=\"mlp\",version=\"1\"}"));
            assertEquals(3.0, samples.get(
                    "inference_request_duration_seconds_count{code=\"200\",model=\"mlp\",version=\"1\"}"));
            assertEquals(3.0, samples.get(
                    "inference_request_duration_seconds_bucket{code=\"200\",model=\"mlp\",version=\"1\",le=\"+Inf\"}"));
            assertEquals(1.0, samples.get("inference_ready{model=\"mlp\",version=\"1\"}"));
            assertTrue(samples.keySet().stream().noneMatch(name -> name.startsWith("inference_batch")),
                    "the CPU backend has no engine, so no engine metrics");
        }
    }

    @Test
    void theEnginesCountersAreReadAtEachScrape() throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", InferenceServerTest.withMetrics(
                InferenceServerTest.metrics(7, 5)), 0, ServerLimits.defaults())) {
            Map<String, Double> samples = samples(server);
            assertEquals(7.0, samples.get("inference_batches_total{gpu=\"0\",model=\"mlp\",version=\"1\"}"));
            assertEquals(50.0, samples.get("inference_rows_total{gpu=\"1\",model=\"mlp\",version=\"1\"}"));
            assertEquals(12.0, samples.get("inference_graph_launches_total{model=\"mlp\",version=\"1\"}"));
            assertEquals(0.0, samples.get("inference_eager_launches_total{model=\"mlp\",version=\"1\"}"));
            assertEquals(2.5, samples.get("inference_queue_duration_seconds_total{model=\"mlp\",version=\"1\"}"));
            assertEquals(1.25, samples.get("inference_compute_duration_seconds_total{model=\"mlp\",version=\"1\"}"));
            assertEquals(3.0, samples.get("inference_batch_size_bucket{model=\"mlp\",version=\"1\",le=\"8.0\"}"));
            assertEquals(24.0, samples.get("inference_batch_size_sum{model=\"mlp\",version=\"1\"}"));
        }
    }
}
