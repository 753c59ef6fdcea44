package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.cudagraph4j.llm.Sampling;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The generate extension ({@code /generate}, {@code /generate_stream}) over HTTP on loopback, on a
 * scripted stand-in for a generative model, so no GPU is needed.
 */
class GenerateEndpointTest {
    /** The stand-in's text, piece by piece: a multi-byte character and a line break among them. */
    private static final List<String> PIECES = List.of("Once", " upon", " a", " time", ",", " a", " café", " 🚀", "\n",
        "ended.");
    private static final String TEXT = String.join("", PIECES);
    private static final ServerLimits LIMITS = new ServerLimits(4096, 1 << 20, 4096, 1 << 20, 64, 100,
            Duration.ofSeconds(10), Duration.ofSeconds(5), Duration.ofMillis(300));
    private final HttpClient client = HttpClient.newHttpClient();
    private InferenceServer server;

    /**
     * A deterministic generative model: each request's text is {@link #PIECES}, cut at its
     * {@code max_tokens} (one piece a token), made on a thread of its own as an engine's would be; a
     * request for 1,000 tokens or more repeats the pieces until cancelled or done.
     * Its sequence holds {@link #sequence} tokens, a character of the prompt counting as one; it
     * takes {@link #capacity} requests at once and refuses more.
     */
    static final class ScriptedGenerator implements TextGenerator {
        final int sequence;
        final int capacity;
        /** Each piece waits for a permit, when set: the test decides when text is made. */
        final Semaphore gate;
        final Duration pause;
        final AtomicInteger running = new AtomicInteger();
        final CountDownLatch cancelled = new CountDownLatch(1);
        final List<CompletableFuture<Completion>> started = new ArrayList<>();
        volatile Parameters lastParameters;

        ScriptedGenerator(int sequence, int capacity, Semaphore gate, Duration pause) {
            this.sequence = sequence;
            this.capacity = capacity;
            this.gate = gate;
            this.pause = pause;
        }

        ScriptedGenerator() {
            this(64, 8, null, Duration.ZERO);
        }

        @Override
        public String name() {
            return "tiny";
        }

        @Override
        public boolean ready() {
            return true;
        }

        @Override
        public Generation generate(String prompt, Parameters parameters, Consumer<String> text) {
            int room = sequence - prompt.length();
            if (room < 1) {
                throw new IllegalArgumentException("text_input is " + prompt.length() + " tokens, which leaves no room");
            }
            int maxTokens = parameters.maxTokens().orElse(Math.min(DEFAULT_MAX_TOKENS, room));
            if (maxTokens > room) {
                throw new IllegalArgumentException("parameters.max_tokens " + maxTokens + " does not fit: at most "
                        + room);
            }
            if (running.incrementAndGet() > capacity) {
                running.decrementAndGet();
                throw new RejectedExecutionException("the generation queue is full (" + capacity + " waiting)");
            }
            lastParameters = parameters;
            CompletableFuture<Completion> completion = new CompletableFuture<>();
            synchronized (started) {
                started.add(completion);
            }
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    int made = 0;
                    int length = maxTokens < 1000 ? Math.min(maxTokens, PIECES.size()) : maxTokens;
                    while (made < length && !completion.isDone()) {
                        if (gate != null) {
                            gate.acquireUninterruptibly();
                        }
                        if (!pause.isZero()) {
                            Thread.sleep(pause);
                        }
                        if (completion.isDone()) {
                            break;
                        }
                        text.accept(PIECES.get(made % PIECES.size()));
                        made++;
                    }
                    completion.complete(new Completion(prompt.length(), made, made < maxTokens ? "stop" : "length"));
                } catch (InterruptedException e) {
                    completion.completeExceptionally(e);
                } finally {
                    running.decrementAndGet();
                }
            });
            return new Generation() {
                @Override
                public CompletableFuture<Completion> completion() {
                    return completion;
                }

                @Override
                public void cancel() {
                    if (completion.cancel(false)) {
                        cancelled.countDown();
                    }
                }
            };
        }

        @Override
        public void close() {
            synchronized (started) {
                for (CompletableFuture<Completion> completion : started) {
                    completion.completeExceptionally(new CancellationException("the generation engine closed"));
                }
            }
            if (gate != null) {
                gate.release(1 << 20);
            }
        }
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    private ScriptedGenerator serve(ScriptedGenerator generator) {
        server = new InferenceServer(generator, 0, LIMITS);
        return generator;
    }

    private HttpResponse<byte[]> post(String path, String body) throws Exception {
        return TestClient.post(server, path, body.getBytes(StandardCharsets.UTF_8));
    }

    /** The events of a whole {@code generate_stream} answer, each its JSON. */
    private static List<JsonNode> events(HttpResponse<byte[]> response) throws Exception {
        String body = new String(response.body(), StandardCharsets.UTF_8);
        assertTrue(body.endsWith("\n\n"), body);
        List<JsonNode> events = new ArrayList<>();
        for (String event : body.substring(0, body.length() - 2).split("\n\n", -1)) {
            assertTrue(event.startsWith("data: ") && event.indexOf('\n') < 0, event);
            events.add(TestClient.JSON.readTree(event.substring("data: ".length())));
        }
        return events;
    }

    @Test
    void generateAnswersTheWholeTextAndHowItEnded() throws Exception {
        ScriptedGenerator generator = serve(new ScriptedGenerator());
        for (String path : List.of("/v2/models/tiny/generate", "/v2/models/tiny/versions/1/generate")) {
            HttpResponse<byte[]> response = post(path, "{\"text_input\":\"Tell me\"}");
            assertEquals(200, response.statusCode(), new String(response.body(), StandardCharsets.UTF_8));
            assertEquals("application/json", response.headers().firstValue("Content-Type").orElseThrow());
            JsonNode answer = TestClient.json(response);
            assertEquals("tiny", answer.path("model_name").asText());
            assertEquals("1", answer.path("model_version").asText());
            assertEquals(TEXT, answer.path("text_output").asText());
            assertEquals("stop", answer.path("finish_reason").asText());
            assertEquals(7, answer.path("prompt_tokens").asInt());
            assertEquals(PIECES.size(), answer.path("generated_tokens").asInt());
        }
        assertEquals(new TextGenerator.Parameters(OptionalInt.empty(), Sampling.greedy()), generator.lastParameters,
                "no parameters: the generator's default length, greedy");
        JsonNode cut = TestClient.json(post("/v2/models/tiny/generate",
                "{\"text_input\":\"Tell me\",\"parameters\":{\"max_tokens\":3,\"stream\":false}}"));
        assertEquals("Once upon a", cut.path("text_output").asText());
        assertEquals("length", cut.path("finish_reason").asText());
        post("/v2/models/tiny/generate", "{\"text_input\":\"x\",\"parameters\":{\"temperature\":0.7,\"top_k\":5,"
                + "\"top_p\":0.9,\"seed\":42,\"max_tokens\":2,\"other\":[1]}}");
        assertEquals(new TextGenerator.Parameters(OptionalInt.of(2), Sampling.of(0.7f, 5, 0.9f, 42)),
                generator.lastParameters, "sampling parameters pass through; unknown ones are ignored");
        post("/v2/models/tiny/generate", "{\"text_input\":\"x\",\"parameters\":{\"temperature\":0,\"top_k\":5,"
                + "\"max_tokens\":null}}");
        assertEquals(Sampling.greedy(), generator.lastParameters.sampling(), "temperature 0 is greedy");
    }

    @Test
    void generateStreamSendsAnEventPerPieceThatTogetherAreTheGeneratedText() throws Exception {
        serve(new ScriptedGenerator());
        String whole = TestClient.json(post("/v2/models/tiny/generate", "{\"text_input\":\"Tell me\"}"))
                .path("text_output").asText();
        HttpResponse<byte[]> response = post("/v2/models/tiny/generate_stream", "{\"text_input\":\"Tell me\"}");
        assertEquals(200, response.statusCode());
        assertEquals("text/event-stream", response.headers().firstValue("Content-Type").orElseThrow());
        List<JsonNode> events = events(response);
        assertEquals(PIECES.size() + 1, events.size(), "one event per piece, then the last");
        StringBuilder text = new StringBuilder();
        for (JsonNode event : events) {
            assertEquals("tiny", event.path("model_name").asText());
            assertEquals("1", event.path("model_version").asText());
            text.append(event.path("text_output").asText());
        }
        assertEquals(whole, text.toString());
        assertEquals(PIECES.get(6), events.get(6).path("text_output").asText(), "a multi-byte character whole");
        JsonNode last = events.getLast();
        assertEquals("", last.path("text_output").asText());
        assertEquals("stop", last.path("finish_reason").asText());
        assertEquals(PIECES.size(), last.path("generated_tokens").asInt());
        assertTrue(events.get(0).path("finish_reason").isMissingNode(), "only the last event says how it ended");
    }

    @Test
    void eachPieceReachesTheClientBeforeTheNextIsMade() throws Exception {
        Semaphore gate = new Semaphore(0);
        serve(new ScriptedGenerator(64, 8, gate, Duration.ZERO));
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                        + "/v2/models/tiny/generate_stream"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"text_input\":\"Tell me\",\"parameters\":{\"max_tokens\":2}}"))
                .build();
        gate.release();
        HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, response.statusCode());
        try (BufferedReader events = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
            JsonNode first = TestClient.JSON.readTree(events.readLine().substring("data: ".length()));
            assertEquals("Once", first.path("text_output").asText(), "sent while the second piece waits");
            assertEquals("", events.readLine());
            gate.release();
            assertEquals(" upon", TestClient.JSON.readTree(events.readLine().substring("data: ".length()))
                    .path("text_output").asText());
        }
    }

    @Test
    void aMalformedOrOutOfRangeRequestIsA400NamingTheField() throws Exception {
        serve(new ScriptedGenerator());
        String[][] cases = {
            {"{\"text_input\":", "malformed JSON"},
            {"{\"text_input\":\"a\"} {}", "malformed JSON"},
            {"[\"text_input\"]", "must be a JSON object"},
            {"", "must be a JSON object"},
            {"{}", "needs \"text_input\""},
            {"{\"text_input\":null}", "needs \"text_input\""},
            {"{\"text_input\":5}", "\"text_input\" must be a string, got 5"},
            {"{\"text_input\":\"a\",\"parameters\":[]}", "\"parameters\" must be an object, got []"},
            {"{\"text_input\":\"a\",\"parameters\":{\"max_tokens\":0}}", "parameters.max_tokens"},
            {"{\"text_input\":\"a\",\"parameters\":{\"max_tokens\":2.5}}", "parameters.max_tokens"},
            {"{\"text_input\":\"a\",\"parameters\":{\"max_tokens\":\"8\"}}", "parameters.max_tokens"},
            {"{\"text_input\":\"a\",\"parameters\":{\"max_tokens\":99999999999}}", "parameters.max_tokens"},
            {"{\"text_input\":\"a\",\"parameters\":{\"max_tokens\":64}}", "parameters.max_tokens 64 does not fit"},
            {"{\"text_input\":\"a\",\"parameters\":{\"temperature\":-0.5}}", "parameters.temperature"},
            {"{\"text_input\":\"a\",\"parameters\":{\"temperature\":1e39}}", "parameters.temperature"},
            {"{\"text_input\":\"a\",\"parameters\":{\"temperature\":\"hot\"}}", "parameters.temperature"},
            {"{\"text_input\":\"a\",\"parameters\":{\"top_k\":0}}", "parameters.top_k must be a whole number from 1 to 64"},
            {"{\"text_input\":\"a\",\"parameters\":{\"top_k\":65}}", "parameters.top_k"},
            {"{\"text_input\":\"a\",\"parameters\":{\"top_p\":0}}", "parameters.top_p must be a number in (0, 1]"},
            {"{\"text_input\":\"a\",\"parameters\":{\"top_p\":1.5}}", "parameters.top_p"},
            {"{\"text_input\":\"a\",\"parameters\":{\"seed\":1e30}}", "parameters.seed"},
            {"{\"text_input\":\"a\",\"parameters\":{\"seed\":18446744073709551616}}", "parameters.seed"},
            {"{\"text_input\":\"a\",\"parameters\":{\"stream\":\"yes\"}}", "parameters.stream must be true or false"},
            {"{\"text_input\":\"" + "x".repeat(64) + "\"}", "text_input is 64 tokens"},
        };
        for (String endpoint : List.of("generate", "generate_stream")) {
            for (String[] c : cases) {
                HttpResponse<byte[]> response = post("/v2/models/tiny/" + endpoint, c[0]);
                assertEquals(400, response.statusCode(), endpoint + " " + c[0]);
                assertEquals("application/json", response.headers().firstValue("Content-Type").orElseThrow());
                assertTrue(TestClient.error(response).contains(c[1]), c[0] + " -> " + TestClient.error(response));
            }
        }
        HttpResponse<byte[]> streamOnGenerate = post("/v2/models/tiny/generate",
                "{\"text_input\":\"a\",\"parameters\":{\"stream\":true}}");
        assertEquals(400, streamOnGenerate.statusCode());
        assertEquals("parameters.stream is true; a stream of text is POST …/generate_stream",
                TestClient.error(streamOnGenerate));
        assertEquals(200, post("/v2/models/tiny/generate_stream",
                "{\"text_input\":\"a\",\"parameters\":{\"stream\":true}}").statusCode());
        HttpResponse<byte[]> tooBig = post("/v2/models/tiny/generate", "{\"text_input\":\"" + "x".repeat(5000) + "\"}");
        assertEquals(413, tooBig.statusCode());
        assertTrue(TestClient.error(tooBig).contains("over the limit of 4096 (--max-body-bytes)"), TestClient.error(tooBig));
        HttpResponse<byte[]> infer = post("/v2/models/tiny/infer", "{}");
        assertEquals(400, infer.statusCode());
        assertEquals("model \"tiny\" generates text: POST /v2/models/tiny/generate or /generate_stream",
                TestClient.error(infer));
        HttpResponse<byte[]> get = TestClient.get(server, "/v2/models/tiny/generate_stream");
        assertEquals(405, get.statusCode());
        assertEquals("POST", get.headers().firstValue("Allow").orElseThrow());
    }

    @Test
    void anUnknownModelOrVersionIsA404() throws Exception {
        serve(new ScriptedGenerator());
        for (String endpoint : List.of("generate", "generate_stream")) {
            HttpResponse<byte[]> unknown = post("/v2/models/llama/" + endpoint, "{\"text_input\":\"a\"}");
            assertEquals(404, unknown.statusCode());
            assertEquals("unknown model \"llama\"; this server serves \"tiny\"", TestClient.error(unknown));
            HttpResponse<byte[]> version = post("/v2/models/tiny/versions/2/" + endpoint, "{\"text_input\":\"a\"}");
            assertEquals(404, version.statusCode());
            assertEquals("model \"tiny\" has no version \"2\"; its only version is \"1\"", TestClient.error(version));
        }
    }

    @Test
    void aFullQueueIsA503AndTheHeldRequestStillFinishes() throws Exception {
        Semaphore gate = new Semaphore(0);
        ScriptedGenerator generator = serve(new ScriptedGenerator(64, 1, gate, Duration.ZERO));
        CompletableFuture<HttpResponse<byte[]>> held = client.sendAsync(HttpRequest.newBuilder(URI.create(
                        "http://127.0.0.1:" + server.port() + "/v2/models/tiny/generate"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"text_input\":\"a\"}")).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (generator.running.get() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        for (String endpoint : List.of("generate", "generate_stream")) {
            HttpResponse<byte[]> full = post("/v2/models/tiny/" + endpoint, "{\"text_input\":\"b\"}");
            assertEquals(503, full.statusCode());
            assertEquals("the generation queue is full (1 waiting)", TestClient.error(full));
        }
        gate.release(PIECES.size());
        HttpResponse<byte[]> answer = held.get(10, TimeUnit.SECONDS);
        assertEquals(200, answer.statusCode());
        assertEquals(TEXT, TestClient.json(answer).path("text_output").asText());
    }

    @Test
    void aClientThatClosesTheStreamCancelsItsGeneration() throws Exception {
        ScriptedGenerator generator = serve(new ScriptedGenerator(1 << 30, 8, null, Duration.ofMillis(2)));
        byte[] body = "{\"text_input\":\"go\",\"parameters\":{\"max_tokens\":100000000}}".getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", server.port()), 5000);
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v2/models/tiny/generate_stream HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                    + "application/json\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder seen = new StringBuilder();
            while (!seen.toString().contains("data: ")) {
                int b = in.read();
                assertTrue(b >= 0, "the stream ended before its first event: " + seen);
                seen.append((char) b);
            }
            assertTrue(seen.toString().startsWith("HTTP/1.1 200"), seen.toString());
        }
        assertTrue(generator.cancelled.await(10, TimeUnit.SECONDS), "the server cancels the generation");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (generator.running.get() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, generator.running.get(), "the generation stopped making text");
        assertEquals(200, TestClient.get(server, "/v2/health/live").statusCode());
    }

    @Test
    void stoppingTheServerEndsAStreamWithAnErrorEvent() throws Exception {
        Semaphore gate = new Semaphore(1);
        serve(new ScriptedGenerator(64, 8, gate, Duration.ZERO));
        CompletableFuture<HttpResponse<byte[]>> stream = client.sendAsync(HttpRequest.newBuilder(URI.create(
                        "http://127.0.0.1:" + server.port() + "/v2/models/tiny/generate_stream"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"text_input\":\"a\"}")).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (gate.availablePermits() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        Thread.sleep(100); // the first event on its way
        assertFalse(server.shutdown(), "the stream outlives the shutdown timeout");
        server = null;
        List<JsonNode> events = events(stream.get(10, TimeUnit.SECONDS));
        assertEquals("Once", events.getFirst().path("text_output").asText());
        assertEquals("the generation was cancelled: the generation engine closed", events.getLast().path("error")
                .asText());
    }

    @Test
    void metadataAndReadinessDescribeTheGenerativeModelBesideAnInferenceModel() throws Exception {
        server = new InferenceServer("mlp", new CpuBackend(MlpWeights.random(4, 2, 11)), new ScriptedGenerator(),
                "127.0.0.1", 0, LIMITS);
        assertEquals("[\"binary_tensor_data\",\"generate\"]", TestClient.json(TestClient.get(server, "/v2"))
                .path("extensions").toString());
        JsonNode tiny = TestClient.json(TestClient.get(server, "/v2/models/tiny"));
        assertEquals("tiny", tiny.path("name").asText());
        assertEquals("[\"1\"]", tiny.path("versions").toString());
        assertEquals("[{\"name\":\"text_input\",\"datatype\":\"BYTES\",\"shape\":[1]}]", tiny.path("inputs").toString());
        assertEquals("[{\"name\":\"text_output\",\"datatype\":\"BYTES\",\"shape\":[1]}]", tiny.path("outputs").toString());
        assertEquals("[-1,4]", TestClient.json(TestClient.get(server, "/v2/models/mlp")).path("inputs").get(0)
                .path("shape").toString());
        for (String model : List.of("tiny", "mlp")) {
            HttpResponse<byte[]> ready = TestClient.get(server, "/v2/models/" + model + "/versions/1/ready");
            assertEquals(200, ready.statusCode());
            assertEquals("{\"name\":\"" + model + "\",\"ready\":true}", new String(ready.body(), StandardCharsets.UTF_8));
        }
        assertEquals(200, TestClient.get(server, "/v2/health/ready").statusCode());
        assertEquals(200, TestClient.infer(server, TestClient.request(1, 4, 1, 2, 3, 4)).statusCode());
        assertEquals(TEXT, TestClient.json(post("/v2/models/tiny/generate", "{\"text_input\":\"a\"}"))
                .path("text_output").asText());
        HttpResponse<byte[]> wrong = post("/v2/models/mlp/generate", "{\"text_input\":\"a\"}");
        assertEquals(400, wrong.statusCode());
        assertEquals("model \"mlp\" does not generate text; it takes POST /v2/models/mlp/infer", TestClient.error(wrong));
        assertEquals("unknown model \"x\"; this server serves \"mlp\" and \"tiny\"",
                TestClient.error(TestClient.get(server, "/v2/models/x")));
        assertEquals(404, TestClient.get(server, "/v2/models/tiny/metrics").statusCode());
        String scrape = new String(TestClient.get(server, "/metrics").body(), StandardCharsets.UTF_8);
        assertTrue(scrape.contains("inference_request_success_total{model=\"tiny\",version=\"1\"} 1.0"), scrape);
    }
}
