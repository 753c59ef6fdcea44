package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PyTorch twin ({@code benchmarks/server/torch_server.py}) from the Java side. Its own tests run
 * wherever {@code python3} has numpy, with a model the Java generator wrote; where {@code python3} also
 * has torch and aiohttp, the twin serves on the CPU next to the Java server on the CPU backend, and the
 * two must give the same answers and the same statuses and errors. {@code CG4J_PYTHON} names another
 * interpreter.
 */
class TorchServerTest {
    private static final Path SERVER_DIR = Path.of("server");
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String python() {
        return System.getenv().getOrDefault("CG4J_PYTHON", "python3");
    }

    private static boolean pythonHas(String... modules) {
        try {
            Process process = new ProcessBuilder(python(), "-c", "import " + String.join(", ", modules))
                    .redirectErrorStream(true).start();
            process.getInputStream().readAllBytes();
            return process.waitFor(60, TimeUnit.SECONDS) && process.exitValue() == 0;
        } catch (Exception e) {
            return false;
        }
    }

    @Test
    void thePythonTestsPassOnAModelTheJavaGeneratorWrote(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(pythonHas("numpy"), python() + " with numpy is not here");
        MlpWeights model = MlpWeights.random(16, 3, 42);
        model.save(dir.resolve("model.safetensors"));
        float[] input = CrossCheck.input(5, 16, 3);
        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("rows", 5);
        expected.put("input", input);
        expected.put("output", model.forward(input));
        JSON.writeValue(dir.resolve("expected.json").toFile(), expected);
        ProcessBuilder builder = new ProcessBuilder(python(), "test_torch_server.py").directory(SERVER_DIR.toFile())
                .redirectErrorStream(true);
        builder.environment().put("CG4J_JAVA_FIXTURE", dir.toString());
        builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), output);
        assertEquals(0, process.exitValue(), output);
        assertTrue(output.contains("\nOK"), output);
    }

    /** The twin, started on a free port; its ready line gives the port. */
    private static final class Twin implements AutoCloseable {
        final Process process;
        final URI base;
        final StringBuilder log = new StringBuilder();

        Twin(Path model) throws Exception {
            ProcessBuilder builder = new ProcessBuilder(python(), "torch_server.py", "--model", model.toString(),
                    "--device", "cpu", "--port", "0").directory(SERVER_DIR.toFile()).redirectErrorStream(true);
            builder.environment().put("PYTHONDONTWRITEBYTECODE", "1");
            process = builder.start();
            BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8));
            CompletableFuture<URI> ready = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                Pattern line = Pattern.compile("^serving mlp on (http://127\\.0\\.0\\.1:\\d+) ");
                try {
                    for (String next; (next = reader.readLine()) != null; ) {
                        synchronized (log) {
                            log.append(next).append('\n');
                        }
                        Matcher m = line.matcher(next);
                        if (m.find()) {
                            ready.complete(URI.create(m.group(1)));
                        }
                    }
                } catch (Exception e) {
                    // the process ended
                }
                ready.completeExceptionally(new IllegalStateException("the twin stopped before it was ready"));
            });
            try {
                base = ready.get(120, TimeUnit.SECONDS);
            } catch (Exception e) {
                process.destroyForcibly();
                throw new IllegalStateException("no ready line: " + log, e);
            }
        }

        @Override
        public void close() throws Exception {
            process.destroy(); // SIGTERM: the twin stops its server and batcher and exits
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the twin did not stop on SIGTERM: " + log);
            }
        }
    }

    @Test
    void theTwinAnswersAsTheJavaServerDoesRequestForRequestAndErrorForError(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(pythonHas("numpy", "torch", "aiohttp"),
                python() + " with torch and aiohttp is not here");
        MlpWeights model = MlpWeights.random(64, 4, 42);
        Path file = dir.resolve("mlp.safetensors");
        model.save(file);
        try (InferenceServer java = new InferenceServer("mlp", new CpuBackend(MlpWeights.load(file)), 0, ServerLimits.defaults().withMaxBodyBytes(8 << 20));
             Twin twin = new Twin(file)) {
            URI javaBase = URI.create("http://127.0.0.1:" + java.port());
            CrossCheck.Result result = CrossCheck.run(javaBase, twin.base, "mlp", List.of(1, 2, 3, 17, 64, 256, 300),
                    1e-4, model, 11);
            assertTrue(result.agree(), CrossCheck.table(result) + twin.log);

            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            for (String[] c : malformed()) {
                HttpResponse<String> a = send(client, javaBase, c);
                HttpResponse<String> b = send(client, twin.base, c);
                assertEquals(a.statusCode(), b.statusCode(), c[0] + " " + c[1] + ": " + a.body() + " vs " + b.body());
                String errorA = JSON.readTree(a.body()).path("error").asText();
                String errorB = JSON.readTree(b.body()).path("error").asText();
                if (errorA.startsWith("malformed JSON")) {
                    assertTrue(errorB.startsWith("malformed JSON: "), errorB);
                } else {
                    assertEquals(errorA, errorB, c[0] + " " + c[1]);
                }
            }
            for (String path : List.of("/v2/health/live", "/v2/health/ready", "/v2/models/mlp/ready")) {
                HttpResponse<String> a = client.send(HttpRequest.newBuilder(javaBase.resolve(path)).build(),
                        HttpResponse.BodyHandlers.ofString());
                HttpResponse<String> b = client.send(HttpRequest.newBuilder(twin.base.resolve(path)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(a.statusCode(), b.statusCode(), path);
                assertEquals(a.body(), b.body(), path);
            }
            JsonNode metadataA = JSON.readTree(client.send(HttpRequest.newBuilder(javaBase.resolve("/v2/models/mlp"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body());
            JsonNode metadataB = JSON.readTree(client.send(HttpRequest.newBuilder(twin.base.resolve("/v2/models/mlp"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body());
            assertEquals(metadataA.path("inputs"), metadataB.path("inputs"));
            assertEquals(metadataA.path("outputs"), metadataB.path("outputs"));

            HttpLoad.Options options = new HttpLoad.Options(twin.base.resolve("/v2/models/mlp/infer"), 64,
                    List.of(50, 200), 0.5, 1000, 1, 64, true, 10, 256, 0.2, false, false);
            for (HttpLoad.Point point : HttpLoad.run(options)) {
                assertEquals(point.sent(), point.ok(), point + "\n" + twin.log);
            }
        }
    }

    private static HttpResponse<String> send(HttpClient client, URI base, String[] c) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(c[0]))
                .POST(HttpRequest.BodyPublishers.ofByteArray(c[1].getBytes(StandardCharsets.ISO_8859_1)));
        if (c.length > 2) {
            request.header(KServeProtocol.HEADER_LENGTH, c[2]);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {path, body (bytes as ISO-8859-1), [Inference-Header-Content-Length]} */
    private static List<String[]> malformed() {
        String infer = "/v2/models/mlp/infer";
        String head = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",";
        List<String[]> cases = new ArrayList<>(List.of(
                new String[] {"/v2/models/resnet/infer", "{}"},
                new String[] {infer, "{\"inputs\":["},
                new String[] {infer, "[]"},
                new String[] {infer, "{\"inputs\":[]}"},
                new String[] {infer, "{\"inputs\":[{\"datatype\":\"FP32\"}]}"},
                new String[] {infer, "{\"inputs\":[{\"name\":\"x\"}]}"},
                new String[] {infer, "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"INT32\"}]}"},
                new String[] {infer, "{\"inputs\":[{\"name\":\"input\"}]}"},
                new String[] {infer, head + "\"data\":[1]}]}"},
                new String[] {infer, head + "\"shape\":null}]}"},
                new String[] {infer, head + "\"shape\":[1,64,1]}]}"},
                new String[] {infer, head + "\"shape\":[1.0,64]}]}"},
                new String[] {infer, head + "\"shape\":[2147483648,64]}]}"},
                new String[] {infer, head + "\"shape\":[0,64],\"data\":[]}]}"},
                new String[] {infer, head + "\"shape\":[1,63]}]}"},
                new String[] {infer, head + "\"shape\":[1,64]}]}"},
                new String[] {infer, head + "\"shape\":[1,64],\"data\":[1,2]}]}"},
                new String[] {infer, head + "\"shape\":[1,64],\"data\":[\"a\"]}]}"},
                new String[] {infer, head + "\"shape\":[1,64],\"data\":[true]}]}"},
                new String[] {infer, head + "\"shape\":[1,64],\"data\":[[1],null]}]}"},
                new String[] {infer, head + "\"shape\":[1,64],\"data\":[" + "1,".repeat(63) + "1e39]}]}"},
                new String[] {infer, head + "\"shape\":[1,64],\"parameters\":{\"binary_data_size\":256}}]}"}));
        String binary = head + "\"shape\":[1,64],\"parameters\":{\"binary_data_size\":256}}]}";
        String zeros = "\0".repeat(256);
        cases.add(new String[] {infer, binary + zeros, "x"});
        cases.add(new String[] {infer, binary + zeros, "99999"});
        cases.add(new String[] {infer, binary + zeros.substring(8), Integer.toString(binary.length())});
        String nan = "\0\0\u00c0\u007f".repeat(64);
        cases.add(new String[] {infer, binary + nan, Integer.toString(binary.length())});
        cases.add(new String[] {infer, " ".repeat((8 << 20) + 1)});
        return cases;
    }
}
