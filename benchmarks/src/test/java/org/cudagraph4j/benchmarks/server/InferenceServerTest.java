package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import org.cudagraph4j.serving.EngineMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The Open Inference Protocol over HTTP, on the CPU backend (and stubs for the failure paths). */
class InferenceServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final MlpWeights MODEL = MlpWeights.random(4, 2, 11);
    private final HttpClient client = HttpClient.newHttpClient();
    private InferenceServer server;

    @BeforeEach
    void start() {
        server = new InferenceServer("mlp", new CpuBackend(MODEL), 0, ServerLimits.defaults().withMaxBodyBytes(4096));
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<byte[]> get(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
    }

    private HttpResponse<byte[]> post(String path, byte[] body, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private HttpResponse<byte[]> infer(String json) throws Exception {
        return post("/v2/models/mlp/infer", json.getBytes(StandardCharsets.UTF_8));
    }

    private static String error(HttpResponse<byte[]> response) throws Exception {
        return JSON.readTree(response.body()).path("error").asText();
    }

    @Test
    void everyRequiredEndpointAnswersVersionedFormsIncluded() throws Exception {
        JsonNode server = JSON.readTree(get("/v2").body());
        assertEquals("cudagraph4j", server.path("name").asText());
        assertFalse(server.path("version").asText().isEmpty());
        assertEquals("[\"binary_tensor_data\"]", server.path("extensions").toString());
        assertEquals("{\"live\":true}", new String(get("/v2/health/live").body()));
        assertEquals("{\"ready\":true}", new String(get("/v2/health/ready").body()));
        for (String model : List.of("/v2/models/mlp", "/v2/models/mlp/versions/1")) {
            HttpResponse<byte[]> ready = get(model + "/ready");
            assertEquals(200, ready.statusCode(), model);
            assertEquals("{\"name\":\"mlp\",\"ready\":true}", new String(ready.body()));
            JsonNode metadata = JSON.readTree(get(model).body());
            assertEquals("mlp", metadata.path("name").asText());
            assertEquals("[\"1\"]", metadata.path("versions").toString());
            assertEquals("[-1,4]", metadata.path("inputs").get(0).path("shape").toString());
            HttpResponse<byte[]> answer = post(model + "/infer", TestClient.request(1, 4, 1, 2, 3, 4)
                    .getBytes(StandardCharsets.UTF_8));
            assertEquals(200, answer.statusCode(), model);
            assertEquals("1", JSON.readTree(answer.body()).path("model_version").asText());
        }
        HttpResponse<byte[]> unknown = get("/v2/models/resnet");
        assertEquals(404, unknown.statusCode());
        assertEquals("unknown model \"resnet\"; this server serves \"mlp\"", error(unknown));
        assertEquals(404, get("/v2/models/resnet/ready").statusCode());
        HttpResponse<byte[]> version = get("/v2/models/mlp/versions/2/ready");
        assertEquals(404, version.statusCode());
        assertEquals("model \"mlp\" has no version \"2\"; its only version is \"1\"", error(version));
        assertEquals(404, post("/v2/models/mlp/versions/7/infer", new byte[0]).statusCode());
    }

    @Test
    void unknownRoutesAndWrongMethodsAreJsonErrors() throws Exception {
        HttpResponse<byte[]> nowhere = get("/v2/nowhere");
        assertEquals(404, nowhere.statusCode());
        assertEquals("application/json", nowhere.headers().firstValue("Content-Type").orElseThrow());
        assertEquals("no such endpoint: GET /v2/nowhere", error(nowhere));
        HttpResponse<byte[]> getInfer = get("/v2/models/mlp/infer");
        assertEquals(405, getInfer.statusCode());
        assertEquals("POST", getInfer.headers().firstValue("Allow").orElseThrow());
        assertEquals("GET is not allowed on /v2/models/mlp/infer; it takes POST", error(getInfer));
        HttpResponse<byte[]> postLive = post("/v2/health/live", new byte[0]);
        assertEquals(405, postLive.statusCode());
        assertEquals("GET", postLive.headers().firstValue("Allow").orElseThrow());
        assertEquals("POST is not allowed on /v2/health/live; it takes GET", error(postLive));
        assertEquals(405, TestClient.send(server, "DELETE", "/v2/models/mlp/versions/1", null).statusCode());
        assertEquals(405, TestClient.send(server, "PUT", "/v2", new byte[1]).statusCode());
    }

    @Test
    void outputsAreCheckedAndEachOutputChoosesItsEncoding() throws Exception {
        String input = "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}";
        HttpResponse<byte[]> asJson = infer("{\"inputs\":[" + input + "],\"parameters\":{\"binary_data_output\":true},"
                + "\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":false}}]}");
        assertEquals(200, asJson.statusCode());
        assertTrue(asJson.headers().firstValue(KServeProtocol.HEADER_LENGTH).isEmpty(), "binary_data false: JSON");
        assertArrayEquals(MODEL.forward(new float[] {1, 2, 3, 4}), floats(JSON.readTree(asJson.body())
                .path("outputs").get(0).path("data")));
        HttpResponse<byte[]> asBinary = infer("{\"inputs\":[" + input + "],\"parameters\":{\"binary_data_output\":true}}");
        assertTrue(asBinary.headers().firstValue(KServeProtocol.HEADER_LENGTH).isPresent(),
                "no per-output choice: the request's binary_data_output");
        String[][] refused = {
            {"\"outputs\":[{\"name\":\"logits\"}]", "unknown output \"logits\"; the model's output is \"output\""},
            {"\"outputs\":[{}]", "unknown output (no name); the model's output is \"output\""},
            {"\"outputs\":{\"name\":\"output\"}", "\"outputs\" must be a list of output tensors, got {\"name\":\"output\"}"},
            {"\"outputs\":\"output\"", "\"outputs\" must be a list of output tensors, got \"output\""},
            {"\"outputs\":[\"output\"]", "each entry of \"outputs\" must be an object, got \"output\""},
        };
        for (String[] c : refused) {
            HttpResponse<byte[]> response = infer("{\"inputs\":[" + input + "]," + c[0] + "}");
            assertEquals(400, response.statusCode(), c[0]);
            assertEquals(c[1], error(response));
        }
    }

    private static float[] floats(JsonNode data) {
        float[] values = new float[data.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = data.get(i).floatValue();
        }
        return values;
    }

    @Test
    void aJsonRequestGetsItsRowsComputedFlatOrNested() throws Exception {
        float[] rows = {1, 2, 3, 4, -1, 0.5f, 2, 8};
        HttpResponse<byte[]> flat = infer("{\"id\":\"r1\",\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\","
                + "\"shape\":[2,4],\"data\":[1,2,3,4,-1,0.5,2,8]}]}");
        assertEquals(200, flat.statusCode(), new String(flat.body()));
        JsonNode answer = JSON.readTree(flat.body());
        assertEquals("r1", answer.path("id").asText());
        assertEquals("[2,4]", answer.path("outputs").get(0).path("shape").toString());
        float[] expected = MODEL.forward(rows);
        JsonNode data = answer.path("outputs").get(0).path("data");
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], data.get(i).floatValue());
        }
        HttpResponse<byte[]> nested = infer("{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],"
                + "\"data\":[[1,2,3,4],[-1,0.5,2,8]]}]}");
        assertEquals(data, JSON.readTree(nested.body()).path("outputs").get(0).path("data"));
    }

    @Test
    void binaryTensorDataGoesBothWays() throws Exception {
        float[] rows = {1, 2, 3, 4};
        byte[] json = ("{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                + "\"parameters\":{\"binary_data_size\":16}}],\"outputs\":[{\"name\":\"output\","
                + "\"parameters\":{\"binary_data\":true}}]}").getBytes(StandardCharsets.UTF_8);
        ByteBuffer body = ByteBuffer.allocate(json.length + 16).order(ByteOrder.LITTLE_ENDIAN);
        body.put(json).asFloatBuffer().put(rows);
        HttpResponse<byte[]> response = post("/v2/models/mlp/infer", body.array(), KServeProtocol.HEADER_LENGTH,
                Integer.toString(json.length));
        assertEquals(200, response.statusCode(), new String(response.body()));
        int jsonLength = Integer.parseInt(response.headers().firstValue(KServeProtocol.HEADER_LENGTH).orElseThrow());
        float[] output = new float[4];
        ByteBuffer.wrap(response.body(), jsonLength, 16).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(output);
        assertArrayEquals(MODEL.forward(rows), output);
    }

    @Test
    void everyMalformedRequestIsA400ThatNamesTheProblem() throws Exception {
        String[][] cases = {
            {"{\"inputs\":[", "malformed JSON"},
            {"[]", "must be a JSON object"},
            {"{\"inputs\":[]}", "exactly one input"},
            {"{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}",
                "unknown input \"x\""},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"INT32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}",
                "must be FP32, not INT32"},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,5],\"data\":[1,2,3,4,5]}]}",
                "needs shape [n, 4]"},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[0,4],\"data\":[]}]}", "n >= 1"},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[2,4],\"data\":[1,2,3,4]}]}",
                "needs 8 values, got 4"},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,\"a\",3,4]}]}",
                "not a number"},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,1e39]}]}",
                "not finite"},
            {"{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],"
                + "\"parameters\":{\"binary_data_size\":16}}]}", "needs the Inference-Header-Content-Length header"},
        };
        for (String[] c : cases) {
            HttpResponse<byte[]> response = infer(c[0]);
            assertEquals(400, response.statusCode(), c[0]);
            assertTrue(error(response).contains(c[1]), c[0] + " -> " + error(response));
        }
        HttpResponse<byte[]> tooBig = post("/v2/models/mlp/infer", new byte[5000]);
        assertEquals(413, tooBig.statusCode());
        assertEquals("the request body of 5000 bytes is over the limit of 4096 (--max-body-bytes)", error(tooBig));
        HttpResponse<byte[]> unknown = post("/v2/models/other/infer", "{}".getBytes(StandardCharsets.UTF_8));
        assertEquals(404, unknown.statusCode());
        assertEquals(200, get("/v2/health/live").statusCode(), "bad requests never take the server down");
    }

    @Test
    void aSaturatedOrUnreadyBackendIsA503() throws Exception {
        server.close();
        boolean[] ready = {true};
        InferenceBackend saturated = TestBackend.failing(4, () -> new RejectedExecutionException("the engine's queue is full"))
                .readyWhile(() -> ready[0]);
        server = new InferenceServer("mlp", saturated, 0, ServerLimits.defaults().withMaxBodyBytes(4096));
        String request = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}";
        HttpResponse<byte[]> full = infer(request);
        assertEquals(503, full.statusCode());
        assertEquals("the engine's queue is full", error(full));
        ready[0] = false;
        assertEquals(503, get("/v2/health/ready").statusCode());
        assertEquals(503, infer(request).statusCode());
        assertEquals("the model is not ready", error(infer(request)));
    }

    /** Engine metrics as an engine over GPUs 0 and 1 would give them. */
    static EngineMetrics metrics(long batches0, long batches1) {
        return new EngineMetrics(9, 0, 9, 0, batches0 + batches1, batches0 + batches1, 0, 90, 6, 0, Map.of(8, 3L),
                120, 300, 400, new java.util.TreeMap<>(Map.of(0, batches0, 1, batches1)),
                new java.util.TreeMap<>(Map.of(0, 10 * batches0, 1, 10 * batches1)), 2_500_000, 1_250_000);
    }

    /** A backend that answers nothing but its engine metrics. */
    static InferenceBackend withMetrics(EngineMetrics metrics) {
        return TestBackend.failing(4, () -> new IllegalStateException("not in this test")).withMetrics(metrics);
    }

    @Test
    void theMetricsEndpointGivesTheEnginesCountsPerGpuAndA404WithoutAnEngine() throws Exception {
        HttpResponse<byte[]> cpu = get("/v2/models/mlp/metrics");
        assertEquals(404, cpu.statusCode());
        assertEquals("this server's backend has no serving engine, so no metrics", error(cpu));
        server.close();
        server = new InferenceServer("mlp", withMetrics(metrics(7, 5)), 0, ServerLimits.defaults().withMaxBodyBytes(4096));
        HttpResponse<byte[]> response = get("/v2/models/mlp/metrics");
        assertEquals(200, response.statusCode());
        JsonNode metrics = JSON.readTree(response.body());
        assertEquals(12, metrics.path("batches").asLong());
        assertEquals("{\"0\":7,\"1\":5}", metrics.path("batchesPerDevice").toString());
        assertEquals("{\"0\":70,\"1\":50}", metrics.path("rowsPerDevice").toString());
        assertEquals(404, get("/v2/models/resnet/metrics").statusCode());
    }
}
