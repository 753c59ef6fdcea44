package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Thousands of malformed, truncated, oversized and hostile requests against a small model on the
 * CPU backend. Each one is answered within {@link #ANSWER_BOUND} with a status below 500 (or a 503),
 * each refusal of an inference request that is JSON carries a non-empty {@code "error"}, and the
 * server keeps serving exact answers with a bounded heap.
 *
 * <p>Every case draws from its own random stream, derived from the seed, its family and its number,
 * so a failure names all it takes to reproduce it; {@code -Dfuzz.seed=N} explores other streams.
 */
class ServerFuzzTest {
    private static final long SEED = Long.getLong("fuzz.seed", 0x5EED_2026L);
    private static final int WIDTH = 8;
    private static final MlpWeights MODEL = MlpWeights.random(WIDTH, 2, 17);
    private static final int MAX_BODY = 64 << 10;
    private static final int MAX_ROWS = 64;
    // Small enough that the fuzz reaches every limit, roomy enough that 64 concurrent good requests
    // never meet a 503 (in flight, buffered bytes).
    private static final ServerLimits LIMITS = new ServerLimits(MAX_BODY, 32L << 20, MAX_ROWS, MAX_ROWS * WIDTH,
            256, 512, Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofSeconds(1));
    private static final Duration ANSWER_BOUND = Duration.ofSeconds(10);
    private static final long HEAP_GROWTH_BOUND = 64L << 20;
    private static final String INFER = "/v2/models/mlp/infer";
    private static final String HEADER_LENGTH = KServeProtocol.HEADER_LENGTH;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    private InferenceServer server;

    @BeforeEach
    void start() {
        server = new InferenceServer("mlp", new CpuBackend(MODEL), 0, LIMITS);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    // ---------------------------------------------------------------------------------------------
    // The tests: one per family of requests.

    @Test
    void malformedJsonRequestsAreAnswered4xxAndTheServerKeepsServing() throws Exception {
        fuzz("json", 2200, List.of(ServerFuzzTest::deletedField, ServerFuzzTest::duplicatedField,
                ServerFuzzTest::retypedField, ServerFuzzTest::wrongNameOrDatatype, ServerFuzzTest::hostileShape,
                ServerFuzzTest::hostileValue, ServerFuzzTest::wrongCount, ServerFuzzTest::deepNesting,
                ServerFuzzTest::longString, ServerFuzzTest::invalidUtf8, ServerFuzzTest::truncated,
                ServerFuzzTest::randomBytes, ServerFuzzTest::oversized), this::checkInference);
    }

    @Test
    void malformedBinaryTensorDataIsAnswered4xxAndTheServerKeepsServing() throws Exception {
        fuzz("binary", 900, List.of(ServerFuzzTest::headerLengthMissing, ServerFuzzTest::hostileHeaderLength,
                ServerFuzzTest::binaryDataSizeMismatch, ServerFuzzTest::oddByteCount,
                ServerFuzzTest::nonFiniteBinary, ServerFuzzTest::truncatedBinary, ServerFuzzTest::binaryAlongsideData,
                ServerFuzzTest::validBinary), this::checkInference);
    }

    @Test
    void hostileOutputsAreRefusedOrAnsweredExactlyAndTheServerKeepsServing() throws Exception {
        fuzz("outputs", 700, List.of(ServerFuzzTest::outputsNotAList, ServerFuzzTest::outputEntryNotAnObject,
                ServerFuzzTest::wrongOutputName, ServerFuzzTest::binaryDataOfEveryType,
                ServerFuzzTest::binaryDataOutputOfEveryType, ServerFuzzTest::severalOutputs), this::checkInference);
    }

    @Test
    void malformedHttpOverRawSocketsIsAnsweredOrClosedAndTheServerKeepsServing() throws Exception {
        List<Function<SplittableRandom, RawCase>> generators = List.of(ServerFuzzTest::badRequestLine,
                ServerFuzzTest::unusualMethod, ServerFuzzTest::hostileContentLength, ServerFuzzTest::hostileChunked,
                ServerFuzzTest::malformedHeaderLine, ServerFuzzTest::longHeaders, ServerFuzzTest::randomPath,
                ServerFuzzTest::nulBytes, ServerFuzzTest::flippedBytes);
        fuzz("raw", 1500, generators, this::checkRaw);
    }

    @Test
    void concurrentGoodAndBadRequestsEachGetTheirOwnAnswer() throws Exception {
        List<Function<SplittableRandom, Case>> bad = List.of(ServerFuzzTest::duplicatedField,
                ServerFuzzTest::hostileShape, ServerFuzzTest::hostileValue, ServerFuzzTest::wrongCount,
                ServerFuzzTest::deepNesting, ServerFuzzTest::truncated, ServerFuzzTest::randomBytes,
                ServerFuzzTest::oversized, ServerFuzzTest::hostileHeaderLength, ServerFuzzTest::oddByteCount,
                ServerFuzzTest::wrongOutputName, ServerFuzzTest::outputsNotAList);
        int clients = 64;
        int requestsEach = 32;
        Queue<String> failures = new ConcurrentLinkedQueue<>();
        long heapBefore = usedHeapAfterGc();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < clients; c++) {
                int client = c;
                threads.submit(() -> {
                    for (int i = 0; i < requestsEach; i++) {
                        int number = client * requestsEach + i;
                        SplittableRandom random = random("concurrent", number);
                        Case request = random.nextBoolean() ? goodRequest(random) : refusedCase(bad, random);
                        collect(failures, () -> checkInference(request, "concurrent case " + number));
                    }
                });
            }
        }
        assertNone(failures, clients * requestsEach);
        assertStillServingWithBoundedHeap(heapBefore);
    }

    // ---------------------------------------------------------------------------------------------
    // Running cases and checking answers.

    /**
     * One request to the inference endpoint and what it must get: with {@code rows}, a 200 whose
     * output is the model's on them; {@code refused}, a 4xx; otherwise any status below 500, or 503.
     */
    private record Case(String what, byte[] body, String[] headers, float[] rows, boolean refused) {
        static Case refused(String what, byte[] body, String... headers) {
            return new Case(what, body, headers, null, true);
        }

        static Case answered(String what, byte[] body, float[] rows, String... headers) {
            return new Case(what, body, headers, rows, false);
        }

        static Case anything(String what, byte[] body, String... headers) {
            return new Case(what, body, headers, null, false);
        }
    }

    /** Raw bytes for a new connection; only a request that is not {@code wellFormed} HTTP may go unanswered. */
    private record RawCase(String what, byte[] bytes, boolean wellFormed) {}

    /** Checks one request; {@code name} says which, for the failure message. */
    private interface Checker<T> {
        void check(T request, String name) throws Exception;
    }

    private <T> void fuzz(String family, int count, List<Function<SplittableRandom, T>> generators,
            Checker<T> checker) throws Exception {
        long heapBefore = usedHeapAfterGc();
        Queue<String> failures = new ConcurrentLinkedQueue<>();
        for (int i = 0; i < count; i++) {
            // Round robin, so that every generator gets its share whatever the count.
            T request = generators.get(i % generators.size()).apply(random(family, i));
            String name = family + " case " + i;
            collect(failures, () -> checker.check(request, name));
        }
        assertNone(failures, count);
        assertStillServingWithBoundedHeap(heapBefore);
    }

    /** A check that may fail, by an assertion or an exception. */
    private interface Check {
        void run() throws Exception;
    }

    /** Runs a check, keeping its failure: the cases after a failing one still run, to show its extent. */
    private static void collect(Queue<String> failures, Check check) {
        try {
            check.run();
        } catch (AssertionError | Exception e) {
            failures.add(e.getMessage());
        }
    }

    private static void assertNone(Queue<String> failures, int cases) {
        assertTrue(failures.isEmpty(), failures.size() + " of " + cases + " cases failed; the first ones:\n"
                + String.join("\n", failures.stream().limit(8).toList()));
    }

    /** The case's own stream: one case reproduces without running those before it. */
    private static SplittableRandom random(String family, int number) {
        return new SplittableRandom(SEED * 0x9E3779B97F4A7C15L + family.hashCode() * 0xBF58476D1CE4E5B9L + number);
    }

    private static Case refusedCase(List<Function<SplittableRandom, Case>> generators, SplittableRandom random) {
        while (true) {
            Case drawn = generators.get(random.nextInt(generators.size())).apply(random);
            if (drawn.refused()) {
                return drawn;
            }
        }
    }

    private void checkInference(Case request, String name) throws IOException, InterruptedException {
        String where = "seed " + SEED + ", " + name + " (" + request.what() + "): request "
                + (request.headers().length > 0 ? String.join(": ", request.headers()) + " " : "")
                + printable(request.body());
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + INFER))
                .timeout(ANSWER_BOUND)
                .POST(HttpRequest.BodyPublishers.ofByteArray(request.body()));
        if (request.headers().length > 0) {
            builder.headers(request.headers());
        }
        HttpResponse<byte[]> response;
        try {
            response = CLIENT.send(builder.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (HttpTimeoutException e) {
            throw new AssertionError(where + "\n  got no answer within " + ANSWER_BOUND, e);
        } catch (IOException e) {
            throw new AssertionError(where + "\n  the connection closed without an answer: " + e, e);
        }
        int status = response.statusCode();
        where += "\n  answer " + status + " " + printable(response.body());
        assertTrue(status < 500 || status == 503, where);
        if (status >= 400 && status < 500 && isJson(response)) {
            JsonNode error = JSON.readTree(response.body()).path("error");
            assertTrue(error.isTextual() && !error.asText().isEmpty(), where + "\n  a refusal without an error");
        }
        if (request.refused()) {
            assertTrue(status >= 400 && status < 500, where + "\n  not refused");
        }
        if (request.rows() != null) {
            assertEquals(200, status, where);
            assertAnswers(request.rows(), response, where);
        }
    }

    private void checkRaw(RawCase request, String name) throws IOException {
        String where = "seed " + SEED + ", " + name + " (" + request.what() + "): request "
                + printable(request.bytes());
        TestClient.Raw answer = TestClient.raw(server.port(), request.bytes(), ANSWER_BOUND);
        where += "\n  answer " + answer.status() + " " + printable(answer.head().getBytes(StandardCharsets.ISO_8859_1));
        if (answer.status() == -2) {
            fail(where + "\n  got no answer within " + ANSWER_BOUND);
        }
        if (answer.status() == -1) {
            assertTrue(!request.wellFormed(), where + "\n  well-formed HTTP, closed without an answer");
        } else {
            assertTrue(answer.status() < 500 || answer.status() == 503, where);
        }
    }

    private static boolean isJson(HttpResponse<byte[]> response) {
        return response.headers().firstValue("Content-Type").orElse("").startsWith("application/json");
    }

    /** The answer is the model's output on {@code rows}, bit for bit, in whichever encoding it came. */
    private static void assertAnswers(float[] rows, HttpResponse<byte[]> response, String where) throws IOException {
        byte[] body = response.body();
        Optional<String> jsonLength = response.headers().firstValue(HEADER_LENGTH);
        int length = jsonLength.map(Integer::parseInt).orElse(body.length);
        JsonNode output = JSON.readTree(Arrays.copyOf(body, length)).path("outputs").path(0);
        assertEquals("output", output.path("name").asText(), where);
        assertEquals("[" + rows.length / WIDTH + "," + WIDTH + "]", output.path("shape").toString(), where);
        float[] values;
        if (jsonLength.isPresent()) {
            values = new float[(body.length - length) / Float.BYTES];
            ByteBuffer.wrap(body, length, body.length - length).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
                    .get(values);
        } else {
            values = jsonData(body);
        }
        float[] expected = MODEL.forward(rows);
        assertTrue(Arrays.equals(expected, values), where + "\n  expected " + Arrays.toString(expected));
    }

    /**
     * The output's {@code data}, each value parsed from its text as a float: a tree would read them
     * as doubles first, and a float rounded twice may differ in its last bit.
     */
    private static float[] jsonData(byte[] body) throws IOException {
        try (JsonParser json = JSON.getFactory().createParser(body)) {
            while (json.nextToken() != null) {
                if (json.currentToken() == JsonToken.FIELD_NAME && json.currentName().equals("data")) {
                    json.nextToken();
                    List<Float> values = new ArrayList<>();
                    while (json.nextToken() != JsonToken.END_ARRAY) {
                        // Non-finite values come as the strings "NaN", "Infinity" and "-Infinity".
                        values.add(json.currentToken() == JsonToken.VALUE_STRING ? Float.parseFloat(json.getText())
                                : json.getFloatValue());
                    }
                    float[] data = new float[values.size()];
                    for (int i = 0; i < data.length; i++) {
                        data[i] = values.get(i);
                    }
                    return data;
                }
            }
        }
        return new float[0];
    }

    private void assertStillServingWithBoundedHeap(long heapBefore) throws Exception {
        Template last = new Template(new SplittableRandom(SEED), 3, false);
        checkInference(Case.answered("a valid request after all the others", last.bytes(), last.rows),
                "the last request");
        long growth = usedHeapAfterGc() - heapBefore;
        assertTrue(growth < HEAP_GROWTH_BOUND, "seed " + SEED + ": the used heap grew by " + growth + " bytes");
    }

    private static long usedHeapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** The bytes as text, those outside printable ASCII as \xNN, cut to 600 characters. */
    private static String printable(byte[] bytes) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < bytes.length && text.length() < 600; i++) {
            int b = bytes[i] & 0xFF;
            if (b >= 0x20 && b < 0x7F && b != '\\') {
                text.append((char) b);
            } else {
                text.append(switch (b) {
                    case '\r' -> "\\r";
                    case '\n' -> "\\n";
                    case '\\' -> "\\\\";
                    default -> String.format("\\x%02x", b);
                });
            }
        }
        return text.length() < 600 ? text.toString() : text + "… (" + bytes.length + " bytes)";
    }

    // ---------------------------------------------------------------------------------------------
    // Valid requests, to mutate.

    private record Field(String name, String value) {}

    /**
     * A valid request as editable fields: the root object's (its {@code inputs} rendered from
     * {@link #input} while its value is null) and its one input's; binary ones carry their rows
     * after the JSON.
     */
    private static final class Template {
        final float[] rows;
        final boolean binary;
        final List<Field> root = new ArrayList<>();
        final List<Field> input = new ArrayList<>();

        Template(SplittableRandom random) {
            this(random, 1 + random.nextInt(4), false);
        }

        Template(SplittableRandom random, int n, boolean binary) {
            this.rows = randomRows(random, n);
            this.binary = binary;
            input.add(new Field("name", "\"input\""));
            input.add(new Field("datatype", "\"FP32\""));
            input.add(new Field("shape", "[" + n + "," + WIDTH + "]"));
            if (binary) {
                input.add(new Field("parameters", "{\"binary_data_size\":" + rows.length * Float.BYTES + "}"));
            } else {
                input.add(new Field("data", random.nextBoolean() ? numbers(rows) : nestedNumbers(rows)));
            }
            root.add(new Field("id", "\"case-" + random.nextInt(1000) + "\""));
            root.add(new Field("inputs", null));
            root.add(new Field("outputs", "[{\"name\":\"output\"}]"));
            root.add(new Field("parameters", "{\"binary_data_output\":" + random.nextBoolean() + "}"));
            // Field order means nothing to JSON: the server must not depend on it either.
            Random shuffler = new Random(random.nextLong());
            Collections.shuffle(root, shuffler);
            Collections.shuffle(input, shuffler);
        }

        int n() {
            return rows.length / WIDTH;
        }

        List<Field> fields(boolean inInput) {
            return inInput ? input : root;
        }

        /** Replaces a field's value, the input's first: both may have parameters. */
        void set(String name, String value) {
            for (List<Field> fields : List.of(input, root)) {
                for (int i = 0; i < fields.size(); i++) {
                    if (fields.get(i).name().equals(name)) {
                        fields.set(i, new Field(name, value));
                        return;
                    }
                }
            }
            throw new IllegalArgumentException("no field " + name);
        }

        String json() {
            return object(root.stream().map(f -> f.value() == null && f.name().equals("inputs")
                    ? new Field("inputs", "[" + object(input) + "]") : f).toList());
        }

        byte[] bytes() {
            return binary ? concat(utf8(json()), littleEndian(rows)) : utf8(json());
        }

        /** The binary tensor data header for this request's JSON. */
        String[] headerLength() {
            return new String[] {HEADER_LENGTH, Integer.toString(utf8(json()).length)};
        }
    }

    private static String object(List<Field> fields) {
        StringBuilder json = new StringBuilder("{");
        for (Field field : fields) {
            json.append(json.length() > 1 ? "," : "").append('"').append(field.name()).append("\":")
                    .append(field.value());
        }
        return json.append('}').toString();
    }

    /** Rows of mostly ordinary values, with now and then a float's extremes (subnormals, -0, MAX_VALUE). */
    private static float[] randomRows(SplittableRandom random, int n) {
        float[] special = {0f, -0f, Float.MIN_VALUE, -Float.MIN_NORMAL, 1e-40f, Float.MAX_VALUE, -65504f, 1e30f};
        float[] rows = new float[n * WIDTH];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = random.nextInt(50) == 0 ? special[random.nextInt(special.length)]
                    : (float) (random.nextGaussian() * 3);
        }
        return rows;
    }

    private static String numbers(float[] values) {
        StringBuilder json = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            json.append(i == 0 ? "" : ",").append(values[i]);
        }
        return json.append(']').toString();
    }

    private static String nestedNumbers(float[] rows) {
        List<String> nested = new ArrayList<>();
        for (int r = 0; r < rows.length / WIDTH; r++) {
            nested.add(numbers(Arrays.copyOfRange(rows, r * WIDTH, (r + 1) * WIDTH)));
        }
        return "[" + String.join(",", nested) + "]";
    }

    private static byte[] littleEndian(float[] values) {
        ByteBuffer bytes = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(values);
        return bytes.array();
    }

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] latin1(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            all.writeBytes(part);
        }
        return all.toByteArray();
    }

    private static byte[] randomBytes(SplittableRandom random, int length) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        return bytes;
    }

    @SafeVarargs
    private static <T> T pick(SplittableRandom random, T... choices) {
        return choices[random.nextInt(choices.length)];
    }

    private static <T> T pick(SplittableRandom random, List<T> choices) {
        return choices.get(random.nextInt(choices.size()));
    }

    // ---------------------------------------------------------------------------------------------
    // JSON bodies.

    private static final Set<String> OPTIONAL_ROOT_FIELDS = Set.of("id", "outputs", "parameters");

    /** Values of the wrong type (or the wrong value) for every required field, none of them valid there. */
    private static final List<String> WRONG_VALUES = List.of("null", "true", "false", "0", "-1", "1.5", "-0.0",
            "1e400", "\"\"", "\"x\"", "\"FP32 \"", "[]", "{}", "[[]]", "[null]", "[\"1\"]", "[\"FP32\"]",
            "[\"input\"]", "{\"name\":\"input\"}", "[{}]", "\"[1,8]\"", "[{\"name\":\"input\"}]");

    private static Case deletedField(SplittableRandom random) {
        Template request = new Template(random);
        boolean inInput = random.nextBoolean();
        List<Field> fields = request.fields(inInput);
        Field deleted = fields.remove(random.nextInt(fields.size()));
        String what = "without " + deleted.name();
        return !inInput && OPTIONAL_ROOT_FIELDS.contains(deleted.name())
                ? Case.answered(what, request.bytes(), request.rows) : Case.refused(what, request.bytes());
    }

    private static Case duplicatedField(SplittableRandom random) {
        Template request = new Template(random);
        List<Field> fields = request.fields(random.nextBoolean());
        Field copy = fields.get(random.nextInt(fields.size()));
        if (copy.value() == null) {
            copy = new Field(copy.name(), "[" + object(request.input) + "]");
        }
        if (random.nextBoolean()) {
            copy = new Field(copy.name(), pick(random, WRONG_VALUES));
        }
        fields.add(random.nextInt(fields.size() + 1), copy);
        return Case.refused("duplicated " + copy.name(), request.bytes());
    }

    private static Case retypedField(SplittableRandom random) {
        Template request = new Template(random);
        boolean inInput = random.nextBoolean();
        List<Field> fields = request.fields(inInput);
        int index = random.nextInt(fields.size());
        String name = fields.get(index).name();
        fields.set(index, new Field(name, pick(random, WRONG_VALUES)));
        String what = name + " retyped";
        return !inInput && OPTIONAL_ROOT_FIELDS.contains(name)
                ? Case.anything(what, request.bytes()) : Case.refused(what, request.bytes());
    }

    private static Case wrongNameOrDatatype(SplittableRandom random) {
        Template request = new Template(random);
        // The same strings spelled with JSON escapes are no mistake.
        if (random.nextInt(8) == 0) {
            boolean name = random.nextBoolean();
            request.set(name ? "name" : "datatype", name ? "\"in\\u0070ut\"" : "\"FP\\u0033\\u0032\"");
            return Case.answered("escaped " + (name ? "name" : "datatype"), request.bytes(), request.rows);
        }
        if (random.nextBoolean()) {
            request.set("name", pick(random, "\"Input\"", "\"INPUT\"", "\"input \"", "\" input\"", "\"inputs\"",
                    "\"\"", "\"output\"", "\"input\\u0000\"", "\"\u00efnput\"", "\"i\u0307nput\"",
                    "\"" + "input".repeat(1 + random.nextInt(2000)) + "\""));
            return Case.refused("wrong input name", request.bytes());
        }
        request.set("datatype", pick(random, "\"fp32\"", "\"FP64\"", "\"FP16\"", "\"BF16\"", "\"INT32\"",
                "\"UINT8\"", "\"BYTES\"", "\"BOOL\"", "\"\"", "\" FP32\"", "\"FP32 \"", "\"FP 32\"", "\"FP32\\u0000\"",
                "\"\uff26\uff30\uff13\uff12\""));
        return Case.refused("wrong datatype", request.bytes());
    }

    private static Case hostileShape(SplittableRandom random) {
        Template request = new Template(random);
        int n = request.n();
        long other = random.nextLong();
        // # stands for the request's row count.
        String shape = pick(random, "[-1,8]", "[0,8]", "[-0,8]", "[#,0]", "[#,-8]", "[#,7]", "[#,9]", "[#,8,1]",
                "[1,#,8]", "[#]", "[]", "[8,#]", "[65,8]", "[2147483648,8]", "[4294967297,8]",
                "[9223372036854775807,8]", "[9223372036854775808,8]", "[-9223372036854775808,8]",
                "[-9223372036854775809,8]", "[#,9223372036854775807]", "[#,-9223372036854775808]",
                "[#,18446744073709551624]", "[" + (other == n ? -other : other) + ",8]", "[1e2,8]", "[#.0,8]",
                "[#,8.0]", "[#,8e0]", "[\"#\",8]", "[#,\"8\"]", "[[#],8]", "[#,[8]]", "[null,8]", "[true,8]",
                "[#,8,]", "[,#,8]", "{\"0\":#,\"1\":8}", "\"[#,8]\"", "#", "[0#,8]", "[0x1,8]", "[+#,8]",
                "[NaN,8]", "[#,Infinity]", "[" + "9".repeat(20 + random.nextInt(3000)) + ",8]")
                .replace("#", Integer.toString(n));
        request.set("shape", shape);
        return Case.refused("shape " + shape, request.bytes());
    }

    private static Case hostileValue(SplittableRandom random) {
        Template request = new Template(random);
        List<String> values = new ArrayList<>();
        for (float value : request.rows) {
            values.add(Float.toString(value));
        }
        String hostile = pick(random, "\"1\"", "null", "true", "false", "{}", "{\"a\":1}", "NaN", "-NaN",
                "Infinity", "-Infinity", "+1", ".5", "1.", "01", "-01", "0x10", "1e", "1e+", "--1", "1e39", "-1e39",
                "3.5e38", "1e400", "1e999999999", "-1e2147483648", "1" + "0".repeat(500 + random.nextInt(3000)),
                "\"" + "x".repeat(random.nextInt(70_000)) + "\"", "\"\\ud800\"", "[]", "1 2", "'1'", "\"\\u0000\"");
        values.set(random.nextInt(values.size()), hostile);
        request.set("data", "[" + String.join(",", values) + "]");
        return Case.refused("data holding " + (hostile.length() > 40 ? hostile.substring(0, 40) + "…" : hostile),
                request.bytes());
    }

    private static Case wrongCount(SplittableRandom random) {
        Template request = new Template(random);
        int expected = request.rows.length;
        int count = switch (random.nextInt(5)) {
            case 0 -> 0;
            case 1 -> expected - 1 - random.nextInt(expected);
            case 2 -> expected + 1 + random.nextInt(WIDTH);
            case 3 -> MAX_ROWS * WIDTH + 1 + random.nextInt(2000); // past the limit on elements
            default -> expected + WIDTH * (1 + random.nextInt(MAX_ROWS));
        };
        float[] values = randomRows(random, count / WIDTH + 1);
        request.set("data", numbers(Arrays.copyOf(values, count)));
        return Case.refused(count + " values for " + expected, request.bytes());
    }

    private static Case deepNesting(SplittableRandom random) {
        int depth = 65 + random.nextInt(6000);
        Template request = new Template(random);
        String what = "nested " + depth + " deep";
        switch (random.nextInt(4)) {
            case 0 -> request.set("data", "[".repeat(depth) + numbers(request.rows) + "]".repeat(depth));
            case 1 -> request.set("id", "{\"a\":".repeat(depth) + "1" + "}".repeat(depth));
            case 2 -> request.set("outputs", "[".repeat(depth)); // never closed
            default -> {
                return Case.refused(what + ", the whole body", utf8("[".repeat(depth) + request.json()
                        + "]".repeat(depth)));
            }
        }
        return Case.refused(what, request.bytes());
    }

    private static Case longString(SplittableRandom random) {
        Template request = new Template(random);
        String text = "\u00e9x".repeat(random.nextInt(40_000));
        String where = pick(random, "id", "name", "data", "field name");
        if (where.equals("field name")) {
            request.root.add(new Field(text, "1"));
        } else {
            request.set(where, where.equals("data") ? "[\"" + text + "\"]" : "\"" + text + "\"");
        }
        byte[] body = request.bytes();
        String what = "a string of " + text.length() + " characters as " + where;
        if (body.length > MAX_BODY || where.equals("name") || where.equals("data")) {
            return Case.refused(what, body);
        }
        return where.equals("id") ? Case.answered(what, body, request.rows) : Case.anything(what, body);
    }

    private static Case invalidUtf8(SplittableRandom random) {
        byte[] bad = pick(random, new byte[] {(byte) 0xFF}, new byte[] {(byte) 0x80}, new byte[] {(byte) 0xC0,
            (byte) 0xAF}, new byte[] {(byte) 0xC3, 0x28}, new byte[] {(byte) 0xE2, (byte) 0x82},
            new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, new byte[] {(byte) 0xF4, (byte) 0x90, (byte) 0x80,
                (byte) 0x80}, new byte[] {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80});
        Template request = new Template(random);
        String where = pick(random, "name", "id", "anywhere");
        if (!where.equals("anywhere")) {
            request.set(where, "\"in\u0001put\""); // a marker to replace with the bytes
        }
        byte[] body = request.bytes();
        int at = where.equals("anywhere") ? random.nextInt(body.length + 1) : indexOf(body, (byte) 1);
        byte[] mutated = concat(Arrays.copyOf(body, at), bad, Arrays.copyOfRange(body,
                where.equals("anywhere") ? at : at + 1, body.length));
        String what = "invalid UTF-8 " + printable(bad) + " in " + where;
        return where.equals("name") ? Case.refused(what, mutated) : Case.anything(what, mutated);
    }

    private static int indexOf(byte[] bytes, byte b) {
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == b) {
                return i;
            }
        }
        throw new IllegalArgumentException("no " + b);
    }

    private static Case truncated(SplittableRandom random) {
        byte[] body = new Template(random).bytes();
        int length = random.nextInt(body.length);
        return Case.refused("cut at " + length + " of " + body.length + " bytes", Arrays.copyOf(body, length));
    }

    private static Case randomBytes(SplittableRandom random) {
        int length = random.nextInt(4096);
        if (random.nextBoolean()) {
            return Case.refused(length + " random bytes", randomBytes(random, length));
        }
        String alphabet = "{}[]\":,0123456789.eE+- truefalsnul\\";
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < length; i++) {
            text.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return Case.refused(length + " random JSON characters", utf8(text.toString()));
    }

    private static Case oversized(SplittableRandom random) {
        Template request = new Template(random);
        String json = request.json();
        int size = switch (random.nextInt(4)) {
            case 0 -> MAX_BODY; // exactly at the limit: still taken
            case 1 -> MAX_BODY + 1;
            default -> MAX_BODY + 1 + random.nextInt(3 * MAX_BODY);
        };
        // Whitespace before the closing brace keeps it a valid request, only too large.
        byte[] body = utf8(json.substring(0, json.length() - 1) + " ".repeat(size - json.length()) + "}");
        String what = body.length + " bytes of valid JSON";
        return size <= MAX_BODY ? Case.answered(what, body, request.rows) : Case.refused(what, body);
    }

    // ---------------------------------------------------------------------------------------------
    // Binary tensor data.

    private static Case headerLengthMissing(SplittableRandom random) {
        return Case.refused("binary data without " + HEADER_LENGTH, new Template(random, 1 + random.nextInt(4), true)
                .bytes());
    }

    private static Case hostileHeaderLength(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(4), true);
        byte[] body = request.bytes();
        int json = utf8(request.json()).length;
        // A sign and leading zeros are still the number: those are taken.
        if (random.nextInt(10) == 0) {
            String value = pick(random, "+" + json, "0" + json, "00" + json);
            return Case.answered(HEADER_LENGTH + " " + value, body, request.rows, HEADER_LENGTH, value);
        }
        String value = pick(random, "-1", "-" + json, "-2147483648", "abc", "", "1.5", json + ".0", "0x10", "1e2",
                "+-1", json + "abc", "99999999999", "9223372036854775807", "9223372036854775808",
                "2147483647", "2147483648", Integer.toString(body.length + 1 + random.nextInt(1 << 20)),
                Integer.toString(random.nextInt(json)), "0", Integer.toString(json - 1), Integer.toString(json + 1),
                Integer.toString(json + 1 + random.nextInt(body.length - json)));
        return Case.refused(HEADER_LENGTH + " " + value + " for " + json + " of " + body.length, body, HEADER_LENGTH,
                value);
    }

    private static Case binaryDataSizeMismatch(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(4), true);
        long bytes = request.rows.length * Float.BYTES;
        if (random.nextInt(10) == 0) { // the number as a string is still the number
            request.set("parameters", "{\"binary_data_size\":\"" + bytes + "\"}");
            return Case.answered("binary_data_size as a string", request.bytes(), request.rows,
                    request.headerLength());
        }
        String size = pick(random, Long.toString(bytes + 1), Long.toString(bytes - 1), "0", Long.toString(-bytes),
                Long.toString(bytes + Float.BYTES), Long.toString(2 * bytes), "9223372036854775807",
                "9223372036854775808", "-9223372036854775808", "18446744073709551616", "null", "true", "false",
                "\"abc\"", "\"\"", "[" + bytes + "]", "{\"v\":" + bytes + "}", bytes + ".0", bytes + "e0",
                "\"" + (bytes + 1) + "\"", "\"0x" + Long.toHexString(bytes) + "\"", "1e400");
        request.set("parameters", "{\"binary_data_size\":" + size + "}");
        return Case.refused("binary_data_size " + size + " for " + bytes, request.bytes(), request.headerLength());
    }

    private static Case oddByteCount(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(4), true);
        byte[] json = utf8(request.json());
        int needed = request.rows.length * Float.BYTES;
        int actual = needed + pick(random, -3, -2, -1, 1, 2, 3, -needed, 5 * Float.BYTES);
        boolean sizeTellsTheTruth = random.nextBoolean();
        if (sizeTellsTheTruth) {
            request.set("parameters", "{\"binary_data_size\":" + actual + "}");
            json = utf8(request.json());
        }
        byte[] data = Arrays.copyOf(littleEndian(request.rows), actual);
        return Case.refused(actual + " bytes of binary data for " + needed + (sizeTellsTheTruth ? ", so declared" : ""),
                concat(json, data), HEADER_LENGTH, Integer.toString(json.length));
    }

    private static Case nonFiniteBinary(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(4), true);
        float[] rows = request.rows.clone();
        rows[random.nextInt(rows.length)] = pick(random, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
                Float.intBitsToFloat(0x7FC0_0001), Float.intBitsToFloat(0xFF80_0001));
        return Case.refused("a non-finite value in binary data", concat(utf8(request.json()), littleEndian(rows)),
                request.headerLength());
    }

    private static Case truncatedBinary(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(4), true);
        byte[] body = request.bytes();
        int length = random.nextInt(body.length);
        return Case.refused("binary body cut at " + length + " of " + body.length, Arrays.copyOf(body, length),
                request.headerLength());
    }

    private static Case binaryAlongsideData(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(4), true);
        request.input.add(new Field("data", numbers(randomRows(random, request.n()))));
        return Case.anything("both data and binary data", request.bytes(), request.headerLength());
    }

    private static Case validBinary(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(MAX_ROWS), true);
        // Any finite bit pattern: overflow in the model must come back as the model computes it.
        for (int i = 0; i < request.rows.length; i++) {
            float value;
            do {
                value = Float.intBitsToFloat(random.nextInt());
            } while (!Float.isFinite(value));
            request.rows[i] = value;
        }
        return Case.answered("valid binary data", request.bytes(), request.rows, request.headerLength());
    }

    // ---------------------------------------------------------------------------------------------
    // The outputs list.

    /** Every kind of JSON value, as a setting of a boolean parameter. */
    private static final List<String> EVERY_TYPE = List.of("true", "false", "null", "0", "1", "-1", "2", "1.5", "0.0",
            "-0", "1e400", "18446744073709551616", "-18446744073709551616", "\"true\"", "\"false\"", "\"TRUE\"",
            "\" true \"", "\"yes\"", "\"1\"", "\"\"", "[]", "[true]", "{}", "{\"a\":true}");

    private static Case outputsNotAList(SplittableRandom random) {
        Template request = new Template(random);
        String outputs = pick(random, "\"output\"", "{\"name\":\"output\"}", "1", "-1.5", "true", "false", "\"\"",
                "{}", "null");
        request.set("outputs", outputs);
        String what = "outputs " + outputs;
        return outputs.equals("null") ? Case.answered(what, request.bytes(), request.rows)
                : Case.refused(what, request.bytes());
    }

    private static Case outputEntryNotAnObject(SplittableRandom random) {
        Template request = new Template(random);
        String entry = pick(random, "\"output\"", "1", "null", "[]", "[{\"name\":\"output\"}]", "true", "\"\"");
        request.set("outputs", random.nextBoolean() ? "[" + entry + "]" : "[{\"name\":\"output\"}," + entry + "]");
        return Case.refused("an output entry " + entry, request.bytes());
    }

    private static Case wrongOutputName(SplittableRandom random) {
        Template request = new Template(random);
        if (random.nextInt(8) == 0) {
            request.set("outputs", "[{\"name\":\"outp\\u0075t\"}]");
            return Case.answered("output named with an escape", request.bytes(), request.rows);
        }
        String name = pick(random, "\"Output\"", "\"input\"", "\"\"", "\" output\"", "\"output \"", "\"outputs\"",
                "null", "1", "[]", "{}", "[\"output\"]", "\"output\\u0000\"", "\"" + "o".repeat(30_000) + "\"");
        String outputs = random.nextInt(8) == 0 ? "[{}]" : "[{\"name\":" + name + "}]";
        request.set("outputs", outputs);
        return Case.refused("outputs " + (outputs.length() > 60 ? outputs.substring(0, 60) + "…" : outputs),
                request.bytes());
    }

    private static Case binaryDataOfEveryType(SplittableRandom random) {
        Template request = new Template(random);
        String setting = pick(random, EVERY_TYPE);
        request.set("outputs", "[{\"name\":\"output\",\"parameters\":{\"binary_data\":" + setting + "}}]");
        return Case.answered("binary_data " + setting, request.bytes(), request.rows);
    }

    private static Case binaryDataOutputOfEveryType(SplittableRandom random) {
        Template request = new Template(random);
        String setting = pick(random, EVERY_TYPE);
        request.set("parameters", random.nextBoolean() ? "{\"binary_data_output\":" + setting + "}" : setting);
        return Case.answered("binary_data_output " + setting, request.bytes(), request.rows);
    }

    private static Case severalOutputs(SplittableRandom random) {
        Template request = new Template(random);
        List<String> entries = new ArrayList<>();
        for (int i = 0; i < 1 + random.nextInt(5); i++) {
            entries.add("{\"name\":\"output\",\"parameters\":{\"binary_data\":" + pick(random, EVERY_TYPE) + "}}");
        }
        request.set("outputs", random.nextInt(6) == 0 ? "[]" : "[" + String.join(",", entries) + "]");
        return Case.answered(entries.size() + " outputs entries", request.bytes(), request.rows);
    }

    // ---------------------------------------------------------------------------------------------
    // Raw HTTP.

    private static final String HOST = "Host: 127.0.0.1\r\n";
    private static final List<String> PATHS = List.of("/v2", "/v2/health/live", "/v2/health/ready", "/metrics",
            "/v2/models/mlp", "/v2/models/mlp/ready", "/v2/models/mlp/metrics", INFER,
            "/v2/models/mlp/versions/1/infer", "/v2/models/mlp/versions/x/infer", "/v2/models/other/infer", "/nowhere");

    /** A valid inference request as raw HTTP, with {@code headers} (each ending in CRLF) after Host. */
    private static String validPost(SplittableRandom random, String headers) {
        String json = new Template(random).json();
        return "POST " + INFER + " HTTP/1.1\r\n" + HOST + headers + "Content-Length: " + json.length() + "\r\n\r\n"
                + json;
    }

    private static RawCase badRequestLine(SplittableRandom random) {
        String line = pick(random, "", "\r\n", "GET\r\n", "GET /v2\r\n", "GET /v2 HTTP/1.1 extra\r\n",
                "GET  /v2 HTTP/1.1\r\n", " GET /v2 HTTP/1.1\r\n", "\tGET /v2 HTTP/1.1\r\n", "GET /v2 HTTP/9.9\r\n",
                "GET /v2 HTTP/1.\r\n", "GET /v2 HTTP/2.0\r\n", "GET /v2 HTTP/1.10\r\n", "GET /v2 http/1.1\r\n",
                "GET /v2 FOO/1.1\r\n", "GET v2 HTTP/1.1\r\n", "GET /v2 HTTP/1.1\r", "GET /v2 HTTP/\r\n",
                "GET /v2 HTTP/-1.1\r\n", "/v2 HTTP/1.1\r\n", "GET HTTP/1.1\r\n",
                "GET /" + "a".repeat(1 + random.nextInt(100_000)) + " HTTP/1.1\r\n",
                new String(randomBytes(random, 1 + random.nextInt(200)), StandardCharsets.ISO_8859_1) + "\r\n");
        String rest = random.nextBoolean() ? HOST + "Connection: close\r\n\r\n" : "";
        return new RawCase("a bad request line", latin1(line + rest), false);
    }

    private static RawCase unusualMethod(SplittableRandom random) {
        String method = pick(random, "FOO", "PATCH", "PROPFIND", "BREW", "M-SEARCH", "get", "Post", "TRACE", "OPTIONS",
                "HEAD", "DELETE", "PUT", "X".repeat(1 + random.nextInt(300)), "GE(T", "GET/", "G\u0000T", "CONNECT");
        boolean token = method.chars().allMatch(c -> Character.isLetter(c) || c == '-') && !method.equals("CONNECT");
        String body = random.nextBoolean() ? new Template(random).json() : "";
        String request = method + " " + pick(random, PATHS) + " HTTP/1.1\r\n" + HOST + "Connection: close\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body;
        return new RawCase("method " + method, latin1(request), token);
    }

    private static RawCase hostileContentLength(SplittableRandom random) {
        String json = new Template(random).json();
        int length = json.length();
        // Whether it must be answered: a length that is a number the server can act on.
        record Length(String headers, boolean answerable) {}
        Length header = pick(random,
                new Length("Content-Length: " + length + "\r\n", true),
                new Length("Content-Length: " + (length - 1 - random.nextInt(length)) + "\r\n", true),
                new Length("Content-Length: 0\r\n", true),
                new Length("Content-Length: " + (MAX_BODY + 1) + "\r\n", true),
                new Length("Content-Length: 9223372036854775807\r\n", true),
                new Length("Content-Length:   " + length + "  \r\n", true),
                new Length("Content-Length: " + (length + 1 + random.nextInt(1000)) + "\r\n", false),
                new Length("Content-Length: -1\r\n", false),
                new Length("Content-Length: -" + length + "\r\n", false),
                new Length("Content-Length: abc\r\n", false),
                new Length("Content-Length: \r\n", false),
                new Length("Content-Length: 1e3\r\n", false),
                new Length("Content-Length: 0x10\r\n", false),
                new Length("Content-Length: +" + length + "\r\n", false),
                new Length("Content-Length: " + length + "," + length + "\r\n", false),
                new Length("Content-Length: " + length + "\r\nContent-Length: " + length + "\r\n", false),
                new Length("Content-Length: " + length + "\r\nContent-Length: " + (length + 7) + "\r\n", false),
                new Length("Content-Length: 9223372036854775808\r\n", false),
                new Length("Content-Length: 99999999999999999999999999999\r\n", false),
                new Length("Content-Length: " + length + "\r\nTransfer-Encoding: chunked\r\n", false));
        String request = "POST " + INFER + " HTTP/1.1\r\n" + HOST + "Connection: close\r\n" + header.headers() + "\r\n"
                + json;
        return new RawCase(header.headers().strip(), latin1(request), header.answerable());
    }

    private static RawCase hostileChunked(SplittableRandom random) {
        String json = random.nextInt(8) == 0 ? " ".repeat(MAX_BODY) + new Template(random).json()
                : new Template(random).json();
        List<String> chunks = new ArrayList<>();
        for (int at = 0; at < json.length(); ) {
            int size = Math.min(json.length() - at, 1 + random.nextInt(Math.max(1, json.length() / 3)));
            chunks.add(Integer.toHexString(size) + "\r\n" + json.substring(at, at + size) + "\r\n");
            at += size;
        }
        String encoding = "Transfer-Encoding: chunked\r\n";
        String last = "0\r\n\r\n";
        String fault = pick(random, "none", "extension", "uppercase", "trailer", "size", "larger", "no last chunk",
                "no CRLF", "encoding", "and Content-Length");
        int k = random.nextInt(chunks.size());
        String chunk = chunks.get(k);
        String data = chunk.substring(chunk.indexOf("\r\n") + 2);
        switch (fault) {
            case "extension" -> chunks.set(k, chunk.replaceFirst("\r\n", ";a=b;c=\"d\"\r\n"));
            case "uppercase" -> chunks.set(k, chunk.substring(0, chunk.indexOf("\r\n")).toUpperCase() + "\r\n" + data);
            case "trailer" -> last = "0\r\nX-Trailer: y\r\n\r\n";
            case "size" -> chunks.set(k, pick(random, "zz", "-1", "FFFFFFFFFFFFFFFFFFFF", "", " 10", "0x10", "1 0",
                    "7fffffffffffffff", "8000000000000000", "\u0000") + "\r\n" + data);
            case "larger" -> chunks.set(k, Integer.toHexString(data.length() + 1 + random.nextInt(1 << 20)) + "\r\n"
                    + data);
            case "no last chunk" -> last = "";
            case "no CRLF" -> chunks.set(k, chunk.substring(0, chunk.length() - 2));
            case "encoding" -> encoding = pick(random, "Transfer-Encoding: chunked, chunked\r\n",
                    "Transfer-Encoding: gzip, chunked\r\n", "Transfer-Encoding: foo\r\n",
                    "Transfer-Encoding: identity\r\n", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n");
            case "and Content-Length" -> encoding += "Content-Length: " + random.nextInt(json.length()) + "\r\n";
            default -> { }
        }
        String request = "POST " + INFER + " HTTP/1.1\r\n" + HOST + "Connection: close\r\n" + encoding + "\r\n"
                + String.join("", chunks) + last;
        boolean wellFormed = Set.of("none", "extension", "uppercase", "trailer").contains(fault);
        return new RawCase("chunked, " + fault, latin1(request), wellFormed);
    }

    private static RawCase malformedHeaderLine(SplittableRandom random) {
        String header = pick(random, "NoColonHere\r\n", "Foo : bar\r\n", " folded\r\n", "\tfolded\r\n", ": no-name\r\n",
                "Fo o: bar\r\n", "Foo\u0000: bar\r\n", "Foo: ba\u0000r\r\n", "Foo: bar\rbaz\r\n", "Foo: bar\nbaz\r\n",
                "Host: elsewhere\r\n", "\u00ff\u00fe: x\r\n", "Foo:\r\n\r\n",
                new String(randomBytes(random, 1 + random.nextInt(100)), StandardCharsets.ISO_8859_1) + "\r\n");
        String request = validPost(random, header);
        if (random.nextInt(8) == 0) {
            request = request.replace(HOST, ""); // HTTP/1.1 without Host
        }
        return new RawCase("header line " + header.strip(), latin1(request), false);
    }

    private static RawCase longHeaders(SplittableRandom random) {
        String headers = random.nextBoolean() ? "X-Long: " + "a".repeat(1 + random.nextInt(200_000)) + "\r\n"
                : "X-Many: 1\r\n".repeat(1 + random.nextInt(5000));
        String request = validPost(random, headers);
        // Past the server's prologue limit, closing the connection is its choice; below it, an answer.
        return new RawCase(headers.length() + " bytes of headers", latin1(request), headers.length() <= 4096);
    }

    private static RawCase randomPath(SplittableRandom random) {
        String[] segments = {"v2", "models", "mlp", "versions", "1", "x", "infer", "ready", "metrics", "health",
            "live", "", ".", "..", "%6Dlp", "%2F", "%00", "%2e%2e", "%", "%zz", "%4", "\u0000", " ", "\u00c3\u00a9",
            "\u00ff", "#frag", "?q=1", "?x=%20&y", ";p=1", "a~b_c-d", "\\", "%C3%A9", "*"};
        StringBuilder path = new StringBuilder();
        if (random.nextInt(4) == 0) {
            path.append("/v2/models/mlp/versions/x/infer");
        } else {
            for (int i = 0; i < 1 + random.nextInt(7); i++) {
                path.append('/').append(pick(random, segments));
            }
        }
        if (random.nextInt(20) == 0) {
            path.append("/a".repeat(random.nextInt(5000)));
        }
        String method = pick(random, "GET", "POST");
        String body = method.equals("POST") ? new Template(random).json() : "";
        String request = method + " " + path + " HTTP/1.1\r\n" + HOST + "Connection: close\r\nContent-Length: "
                + body.length() + "\r\n\r\n" + body;
        boolean valid = isValidTarget(path.toString()) && path.length() <= 2048;
        return new RawCase(method + " " + path, latin1(request), valid);
    }

    /** Whether {@code target} is an origin-form request target by RFC 3986: no stray characters or lone %. */
    private static boolean isValidTarget(String target) {
        String allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?";
        for (int i = 0; i < target.length(); i++) {
            char c = target.charAt(i);
            if (c == '%') {
                if (i + 2 >= target.length() || Character.digit(target.charAt(i + 1), 16) < 0
                        || Character.digit(target.charAt(i + 2), 16) < 0) {
                    return false;
                }
            } else if (allowed.indexOf(c) < 0) {
                return false;
            }
        }
        return true;
    }

    private static RawCase nulBytes(SplittableRandom random) {
        return mutatedRaw(random, "NUL bytes", () -> (byte) 0);
    }

    private static RawCase flippedBytes(SplittableRandom random) {
        return mutatedRaw(random, "random bytes", () -> (byte) random.nextInt(256));
    }

    /** A valid request with 1 to 4 bytes replaced; well-formed still if they all fall in the body. */
    private static RawCase mutatedRaw(SplittableRandom random, String what, Supplier<Byte> bytes) {
        String request = random.nextBoolean() ? validPost(random, "Connection: close\r\n")
                : "GET " + pick(random, PATHS) + " HTTP/1.1\r\n" + HOST + "Connection: close\r\n\r\n";
        byte[] mutated = latin1(request);
        int head = request.indexOf("\r\n\r\n") + 4;
        boolean inBody = true;
        for (int i = 0; i < 1 + random.nextInt(4); i++) {
            int at = random.nextInt(mutated.length);
            mutated[at] = bytes.get();
            inBody &= at >= head;
        }
        return new RawCase(what, mutated, inBody);
    }

    // ---------------------------------------------------------------------------------------------
    // Good requests for the concurrent mix.

    /** A valid request of 1 to maxRows rows, JSON (flat or nested) or binary, asking for either encoding. */
    private static Case goodRequest(SplittableRandom random) {
        Template request = new Template(random, 1 + random.nextInt(MAX_ROWS), random.nextBoolean());
        String what = "a valid " + (request.binary ? "binary" : "JSON") + " request of " + request.n() + " rows";
        return request.binary ? Case.answered(what, request.bytes(), request.rows, request.headerLength())
                : Case.answered(what, request.bytes(), request.rows);
    }
}
