package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@link HttpLatency} against the server on the CPU: every round kept, answers checked, a wrong model caught. */
class HttpLatencyTest {
    private static final MlpWeights MODEL = MlpWeights.random(8, 2, 5);

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    /** The command, printing to {@link #out} and {@link #err}. */
    private CommandLine command() {
        return new CommandLine(new HttpLatency()).setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true));
    }

    @Test
    void measuresEachEncodingPerRoundAndChecksTheAnswers(@TempDir Path dir) throws Exception {
        Path model = dir.resolve("mlp.safetensors");
        MODEL.save(model);
        Path json = dir.resolve("latency.json");
        try (InferenceServer server = new InferenceServer("mlp", new CpuBackend(MODEL), 0, ServerLimits.defaults())) {
            int status = command().execute("--target", "java=http://127.0.0.1:" + server.port(), "--model",
                    model.toString(), "--requests", "60", "--rounds", "3", "--warmup", "10", "--json", json.toString());
            assertEquals(0, status, err.toString());
        }
        assertEquals("", err.toString());
        List<String> table = out.toString().lines().toList();
        assertEquals(4, table.size(), out.toString());
        assertTrue(table.get(2).matches("java +binary +180 .*") && table.get(3).matches("java +json +180 .*"),
                out.toString());
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
            int status = command().execute("--target", "java=http://127.0.0.1:" + server.port(), "--model",
                    model.toString(), "--requests", "5", "--rounds", "1", "--warmup", "0");
            assertEquals(1, status);
            assertTrue(err.toString().startsWith("HttpLatency: http://127.0.0.1:" + server.port()
                    + " (binary): an answer differs from the model on the CPU: relative error "), err.toString());
        }
        assertEquals("", out.toString(), "no results for a wrong run");
    }
}
