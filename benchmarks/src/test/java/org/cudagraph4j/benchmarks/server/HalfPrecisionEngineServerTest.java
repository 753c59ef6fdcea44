package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.serving.BucketLadder;
import org.cudagraph4j.serving.ServingOptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * FP16 and BF16 models served on the GPU through {@link EngineBackend}, over HTTP, each lane
 * multiplying on cuBLASLt through a handle of its own. Every answer, JSON and binary, is checked
 * against the CPU backend's ({@link MlpWeights#forward}) within one rounding step carried through
 * the last layer, 2u(|y| + Σ|w·x|) per element (u = 2⁻⁸ for BF16, 2⁻¹¹ for FP16), from one row
 * to a request the engine splits over two batches.
 *
 * <p>Runs from the GPU bundle ({@code bin/run-tests --benchmarks}); fails, rather than skips, where
 * no device is present. It also fails if the server leaves any of the library's resources alive
 * once closed (a lane's cuBLASLt handle among them).
 */
@Tag("gpu")
class HalfPrecisionEngineServerTest {
    private static final int WIDTH = 64;
    private static final int LAYERS = 3;
    private static final BucketLadder LADDER = BucketLadder.of(1, 4, 16, 32);
    /** Rows per request: one row (the half-precision GEMV's), a few, many (cuBLASLt's), and 40, which is split. */
    private static final int[] REQUEST_ROWS = {1, 3, 24, 40};
    private static CudaDevice device;

    @BeforeAll
    static void requireDevice() {
        if (!Cuda.isAvailable()) {
            fail("gpu test HalfPrecisionEngineServerTest needs a CUDA device: "
                    + Cuda.unavailableReason().orElse("none is present"));
        }
        // bin/run-tests --device N names the device under test.
        device = Cuda.device(Integer.getInteger("org.cudagraph4j.test.device", 0));
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void aHalfPrecisionModelOnTheGpuAnswersAsTheCpuDoesWithinItsRounding(ElementType type) throws Exception {
        LiveResources before = Cuda.liveResources();
        MlpWeights model = MlpWeights.random(WIDTH, LAYERS, 42).withElementType(type);
        String datatype = type == ElementType.FLOAT16 ? "FP16" : "BF16";
        ServingOptions options = ServingOptions.defaults().withLadder(LADDER).withLanes(2);
        List<String> wrong = new ArrayList<>();
        try (InferenceServer server = new InferenceServer("mlp", new EngineBackend(List.of(device), model, options), 0,
                ServerLimits.defaults())) {
            JsonNode metadata = TestClient.json(TestClient.get(server, "/v2/models/mlp"));
            assertEquals(datatype, metadata.path("inputs").get(0).path("datatype").asText());
            SplittableRandom random = new SplittableRandom(7);
            for (int rows : REQUEST_ROWS) {
                float[] input = new float[rows * WIDTH];
                for (int i = 0; i < input.length; i++) {
                    input[i] = (float) (random.nextDouble() * 2 - 1);
                }
                HttpResponse<byte[]> json = TestClient.infer(server, TestClient.request(datatype, rows, WIDTH, input));
                assertEquals(200, json.statusCode(), new String(json.body(), StandardCharsets.UTF_8));
                JsonNode data = TestClient.json(json).path("outputs").get(0).path("data");
                float[] fromJson = new float[data.size()];
                for (int i = 0; i < fromJson.length; i++) {
                    fromJson[i] = data.get(i).floatValue();
                }
                check(model, type, input, fromJson, "JSON, " + rows + " rows", wrong);
                check(model, type, input, binary(server, datatype, type, input, rows), "binary, " + rows + " rows",
                        wrong);
            }
        }
        assertTrue(wrong.isEmpty(), () -> wrong.size() + " answers out of bounds, e.g. " + wrong.getFirst());
        String growth = Cuda.liveResources().growthSince(before);
        assertTrue(growth.isEmpty(), "leaked: " + growth);
    }

    /** The answer to {@code input} sent and received as binary tensor data, the format's bits widened. */
    private static float[] binary(InferenceServer server, String datatype, ElementType type, float[] input, int rows)
            throws Exception {
        String header = "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"" + datatype + "\",\"shape\":[" + rows + ","
                + WIDTH + "],\"parameters\":{\"binary_data_size\":" + input.length * Short.BYTES + "}}],"
                + "\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":true}}]}";
        HttpResponse<byte[]> response = TestClient.post(server, "/v2/models/mlp/infer",
                TestClient.binaryBody(header, HalfFloats.fromFloats(input, type)), KServeProtocol.HEADER_LENGTH,
                Integer.toString(header.getBytes(StandardCharsets.UTF_8).length));
        assertEquals(200, response.statusCode(), new String(response.body(), StandardCharsets.UTF_8));
        int jsonLength = Integer.parseInt(response.headers().firstValue(KServeProtocol.HEADER_LENGTH).orElseThrow());
        short[] bits = new short[rows * WIDTH];
        assertEquals(jsonLength + bits.length * Short.BYTES, response.body().length);
        ByteBuffer.wrap(response.body(), jsonLength, bits.length * Short.BYTES).order(ByteOrder.LITTLE_ENDIAN)
                .asShortBuffer().get(bits);
        return HalfFloats.toFloats(bits, type);
    }

    /**
     * Each element of {@code answer} against the CPU's, within 2u(|y| + Σ|w·x|): x the last layer's
     * input as the CPU computes it, w and b its weights and bias.
     */
    private static void check(MlpWeights model, ElementType type, float[] input, float[] answer, String what,
            List<String> wrong) {
        double unit = type == ElementType.BFLOAT16 ? 0x1p-8 : 0x1p-11;
        float[] expected = model.forward(input);
        MlpWeights firstLayers = new MlpWeights(model.weights().subList(0, LAYERS - 1),
                model.biases().subList(0, LAYERS - 1), model.widths().subList(0, LAYERS), type);
        float[] x = firstLayers.forward(input);
        float[] w = model.weights().getLast();
        float[] b = model.biases().getLast();
        assertEquals(expected.length, answer.length, what);
        for (int r = 0; r < expected.length / WIDTH; r++) {
            for (int o = 0; o < WIDTH; o++) {
                double magnitude = Math.abs(b[o]);
                for (int i = 0; i < WIDTH; i++) {
                    magnitude += Math.abs((double) w[o * WIDTH + i] * x[r * WIDTH + i]);
                }
                double y = expected[r * WIDTH + o];
                double got = answer[r * WIDTH + o];
                if (!(Math.abs(got - y) <= 2 * unit * (Math.abs(y) + magnitude))) {
                    wrong.add(what + ": row " + r + " column " + o + " is " + got + ", the CPU gives " + y);
                }
            }
        }
    }
}
