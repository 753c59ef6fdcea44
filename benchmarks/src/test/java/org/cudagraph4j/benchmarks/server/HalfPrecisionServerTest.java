package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** FP16 and BF16 models over the Open Inference Protocol, on the CPU backend. */
class HalfPrecisionServerTest {
    private static final int WIDTH = 4;
    /** Three rows; 0.1, 0.3, -0.7 and 0.001 are values of neither format, so the server rounds them. */
    private static final float[] ROWS = {1, 2, 3, 4, -1, 0.5f, 2, 8, 0.1f, 0.3f, -0.7f, 1e-3f};

    private static MlpWeights model(ElementType type) {
        return MlpWeights.random(WIDTH, 2, 11).withElementType(type);
    }

    private static InferenceServer serve(MlpWeights model) {
        return new InferenceServer("mlp", new CpuBackend(model), 0, ServerLimits.defaults().withMaxBodyBytes(4096));
    }

    private static String datatype(ElementType type) {
        return type == ElementType.FLOAT16 ? "FP16" : "BF16";
    }

    private static float[] floats(JsonNode data) {
        float[] values = new float[data.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = data.get(i).floatValue();
        }
        return values;
    }

    /** A binary request of {@code rows} rows whose data takes {@code bytes} bytes, the answer wanted in binary. */
    private static String binaryHeader(String datatype, int rows, int bytes) {
        return "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"" + datatype + "\",\"shape\":[" + rows + "," + WIDTH
                + "],\"parameters\":{\"binary_data_size\":" + bytes + "}}],\"outputs\":[{\"name\":\"output\","
                + "\"parameters\":{\"binary_data\":true}}]}";
    }

    private static HttpResponse<byte[]> postBinary(InferenceServer server, String header, byte[] body)
            throws Exception {
        return TestClient.post(server, "/v2/models/mlp/infer", body, KServeProtocol.HEADER_LENGTH,
                Integer.toString(header.getBytes(StandardCharsets.UTF_8).length));
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void theMetadataGivesTheModelsDatatype(ElementType type) throws Exception {
        try (InferenceServer server = serve(model(type))) {
            JsonNode metadata = TestClient.json(TestClient.get(server, "/v2/models/mlp"));
            assertEquals(datatype(type), metadata.path("inputs").get(0).path("datatype").asText());
            assertEquals(datatype(type), metadata.path("outputs").get(0).path("datatype").asText());
            assertEquals("[-1,4]", metadata.path("inputs").get(0).path("shape").toString());
        }
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void aJsonRequestIsRoundedToTheFormatAndAnsweredWithTheModelsValues(ElementType type) throws Exception {
        MlpWeights model = model(type);
        try (InferenceServer server = serve(model)) {
            HttpResponse<byte[]> response = TestClient.infer(server,
                    TestClient.request(datatype(type), 3, WIDTH, ROWS));
            assertEquals(200, response.statusCode(), new String(response.body(), StandardCharsets.UTF_8));
            JsonNode output = TestClient.json(response).path("outputs").get(0);
            assertEquals(datatype(type), output.path("datatype").asText());
            assertEquals("[3,4]", output.path("shape").toString());
            float[] expected = model.forward(ROWS);
            assertArrayEquals(expected, floats(output.path("data")));
            assertArrayEquals(expected, HalfFloats.toFloats(HalfFloats.fromFloats(expected, type), type),
                    "the answer holds values of the format");
        }
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void binaryTensorDataIsTheFormatsTwoByteBitsBothWays(ElementType type) throws Exception {
        MlpWeights model = model(type);
        short[] rows = HalfFloats.fromFloats(ROWS, type);
        short[] expected = HalfFloats.fromFloats(model.forward(ROWS), type);
        try (InferenceServer server = serve(model)) {
            String header = binaryHeader(datatype(type), 3, 3 * WIDTH * Short.BYTES);
            HttpResponse<byte[]> response = postBinary(server, header, TestClient.binaryBody(header, rows));
            assertEquals(200, response.statusCode(), new String(response.body(), StandardCharsets.UTF_8));
            int jsonLength = Integer.parseInt(response.headers().firstValue(KServeProtocol.HEADER_LENGTH)
                    .orElseThrow());
            JsonNode output = TestClient.JSON.readTree(response.body(), 0, jsonLength).path("outputs").get(0);
            assertEquals(datatype(type), output.path("datatype").asText());
            assertEquals(3 * WIDTH * Short.BYTES, output.path("parameters").path("binary_data_size").asInt());
            assertEquals(jsonLength + 3 * WIDTH * Short.BYTES, response.body().length);
            short[] bits = new short[3 * WIDTH];
            ByteBuffer.wrap(response.body(), jsonLength, bits.length * Short.BYTES).order(ByteOrder.LITTLE_ENDIAN)
                    .asShortBuffer().get(bits);
            assertArrayEquals(expected, bits);
            // Binary in, JSON out: the same values, widened.
            String toJson = header.replace("\"binary_data\":true", "\"binary_data\":false");
            HttpResponse<byte[]> json = postBinary(server, toJson, TestClient.binaryBody(toJson, rows));
            assertEquals(200, json.statusCode(), new String(json.body(), StandardCharsets.UTF_8));
            assertArrayEquals(HalfFloats.toFloats(expected, type),
                    floats(TestClient.json(json).path("outputs").get(0).path("data")));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void anInputOfAnotherDatatypeOrSizeIsA400ThatNamesIt(ElementType type) throws Exception {
        try (InferenceServer server = serve(model(type))) {
            String other = type == ElementType.FLOAT16 ? "BF16" : "FP16";
            for (String datatype : new String[] {"FP32", other}) {
                HttpResponse<byte[]> response = TestClient.infer(server,
                        TestClient.request(datatype, 1, WIDTH, 1, 2, 3, 4));
                assertEquals(400, response.statusCode(), datatype);
                assertEquals("input \"input\" must be " + datatype(type) + ", not " + datatype,
                        TestClient.error(response));
            }
            // Four bytes an element, as FP32 would take, and the right size declared over too many bytes.
            String fp32Sized = binaryHeader(datatype(type), 3, 3 * WIDTH * Float.BYTES);
            HttpResponse<byte[]> wide = postBinary(server, fp32Sized, TestClient.binaryBody(fp32Sized, ROWS));
            assertEquals(400, wide.statusCode());
            assertEquals("input \"input\" of shape [3,4] needs 24 bytes of binary data; binary_data_size says 48 and "
                    + "the body holds 48", TestClient.error(wide));
            String declared = binaryHeader(datatype(type), 3, 3 * WIDTH * Short.BYTES);
            HttpResponse<byte[]> over = postBinary(server, declared, TestClient.binaryBody(declared, ROWS));
            assertEquals(400, over.statusCode());
            assertEquals("input \"input\" of shape [3,4] needs 24 bytes of binary data; binary_data_size says 24 and "
                    + "the body holds 48", TestClient.error(over));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void aNumberPastTheFormatsRangeOrANonFiniteValueIsA400(ElementType type) throws Exception {
        boolean fp16 = type == ElementType.FLOAT16;
        float largest = fp16 ? 65504 : Float.intBitsToFloat(0x7F7F0000);
        float past = fp16 ? 70000 : 3.4e38f;
        float roundsToLargest = fp16 ? 65519 : 3.39e38f;
        try (InferenceServer server = serve(model(type))) {
            HttpResponse<byte[]> outside = TestClient.infer(server, TestClient.request(datatype(type), 1, WIDTH, 1,
                    past, 3, 4));
            assertEquals(400, outside.statusCode());
            assertEquals("input \"input\" holds " + past + ", outside the range of " + datatype(type)
                    + " (its largest finite value is " + largest + ")", TestClient.error(outside));
            HttpResponse<byte[]> edge = TestClient.infer(server, TestClient.request(datatype(type), 1, WIDTH, largest,
                    -roundsToLargest, 0, 0));
            assertEquals(200, edge.statusCode(), "the largest finite value, and one that rounds to it, are taken");
            HttpResponse<byte[]> overflow = TestClient.infer(server, "{\"inputs\":[{\"name\":\"input\",\"datatype\":\""
                    + datatype(type) + "\",\"shape\":[1,4],\"data\":[1,2,3,1e39]}]}");
            assertEquals(400, overflow.statusCode());
            assertEquals("input \"input\" holds a value that is not finite", TestClient.error(overflow),
                    "as for FP32, a number past a float's range");
            short[] rows = {0x3C00, 0x3C00, 0x3C00, (short) (fp16 ? 0xFC00 : 0x7FC0)}; // -infinity or a NaN
            String header = binaryHeader(datatype(type), 1, WIDTH * Short.BYTES);
            HttpResponse<byte[]> nonFinite = postBinary(server, header, TestClient.binaryBody(header, rows));
            assertEquals(400, nonFinite.statusCode());
            assertEquals("input \"input\" holds a value that is not finite", TestClient.error(nonFinite));
        }
    }
}
