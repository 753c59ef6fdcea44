package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@link HttpLatency} against the server on the CPU: every round kept, answers checked, a wrong model caught. */
class HttpLatencyTest {
    private static final MlpWeights MODEL = MlpWeights.random(8, 2, 5);

    @Test
    void measuresEachEncodingPerRoundAndChecksTheAnswers(@TempDir Path dir) throws Exception {
        Path model = dir.resolve("mlp.safetensors");
        MODEL.save(model);
        Path json = dir.resolve("latency.json");
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MODEL), 0, ServerLimits.defaults())) {
            int status = new CommandLine(new HttpLatency()).execute("--target", "java=http://127.0.0.1:"
                    + server.port(), "--model", model.toString(), "--requests", "60", "--rounds", "3", "--warmup", "10",
                    "--json", json.toString());
            assertEquals(0, status);
        }
        JsonNode points = new ObjectMapper().readTree(json.toFile()).path("points");
        List<String> encodings = new ArrayList<>();
        for (JsonNode point : points) {
            encodings.add(point.path("encoding").asText());
            assertEquals("java", point.path("target").asText());
            assertEquals(180, point.path("requests").asLong(), "three rounds of 60 kept, the warm-up not");
            assertEquals(3, point.path("windowsMillis").size());
            assertTrue(point.path("p50Micros").asDouble() > 0
                    && point.path("p99Micros").asDouble() >= point.path("p50Micros").asDouble());
        }
        assertEquals(List.of("binary", "json"), encodings);
    }

    @Test
    void anAnswerOffTheModelFailsTheRun(@TempDir Path dir) throws Exception {
        Path model = dir.resolve("other.safetensors");
        MlpWeights.random(8, 2, 6).save(model); // not what the server serves
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MODEL), 0, ServerLimits.defaults())) {
            int status = new CommandLine(new HttpLatency()).execute("--target", "java=http://127.0.0.1:"
                    + server.port(), "--model", model.toString(), "--requests", "5", "--rounds", "1", "--warmup", "0");
            assertEquals(1, status);
        }
    }
}
