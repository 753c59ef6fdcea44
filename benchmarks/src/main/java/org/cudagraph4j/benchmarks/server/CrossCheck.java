package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.IntStream;
import org.cudagraph4j.benchmarks.Cli;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Checks that two Open Inference Protocol servers of the same model give the same answers: the Java
 * server and its PyTorch twin, say. The same deterministic inputs go to both, in JSON and in the
 * binary tensor data extension, one request at a time (each alone in its batch) and then all at once
 * (so the servers batch them together, pad, and split them again); with a model file, both are also
 * checked against the model run on the CPU here.
 *
 * <p>The metric, for one request's answers {@code a} (the first server) and {@code b} (the second,
 * or the CPU reference): the largest elementwise difference over the largest magnitude of
 * {@code b}, {@code max|a - b| / max(max|b|, 1e-6)} (the infinity norm of the difference over the
 * infinity norm of the reference). It is normwise, so outputs that a ReLU left near zero do not
 * blow it up, and it is taken over the whole answer, so a row of another request, a pad row, or rows
 * in the wrong order show as errors of order 1. Two answers agree when it is at most the tolerance
 * (1e-4), and they must have the same shape.
 *
 * <pre>
 *   CrossCheck --a http://127.0.0.1:8000 --b http://127.0.0.1:8001 [--model mlp]
 *              [--rows 1,2,3,7,8,17,31,64,100,256,300] [--tolerance 1e-4] [--reference mlp.safetensors]
 *              [--seed 7] [--json crosscheck.json]
 * </pre>
 * Exits 0 when every answer agrees, 1 when one does not, and 2 when a server cannot be asked.
 */
@Command(name = "CrossCheck", mixinStandardHelpOptions = true,
        description = "Sends the same requests to two KServe v2 servers (and the model on the CPU) and compares.")
public final class CrossCheck implements Callable<Integer> {
    /** The default request sizes: one row, sizes up to 64, the largest bucket, and one above it. */
    static final List<Integer> DEFAULT_ROWS = List.of(1, 2, 3, 7, 8, 17, 31, 64, 100, 256, 300);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    /**
     * One request's comparison.
     *
     * @param rows rows in the request
     * @param encoding {@code json} or {@code binary}
     * @param mode {@code sequential} (alone) or {@code concurrent} (sent with all the others at once)
     * @param errorAB the relative error of the first server's answer against the second's
     * @param errorA the first server's against the CPU reference, or NaN without one
     * @param errorB the second server's against the CPU reference, or NaN without one
     * @param agree whether every error is within the tolerance
     */
    public record Case(int rows, String encoding, String mode, double errorAB, double errorA, double errorB,
            boolean agree) {}

    /**
     * The outcome.
     *
     * @param a the first server
     * @param b the second server
     * @param tolerance the largest relative error taken as agreement
     * @param cases every comparison
     * @param worst the largest relative error of any comparison
     * @param agree whether every case agrees (false also when {@code problem} is set)
     * @param problem why the servers could not be compared, or null
     */
    public record Result(String a, String b, String model, int inputWidth, int outputWidth, double tolerance,
            boolean reference, List<Case> cases, double worst, boolean agree, String problem) {}

    /** A server could not be asked, or answered with something other than an answer. */
    static final class ServerException extends IOException {
        private static final long serialVersionUID = 1L;

        ServerException(String message) {
            super(message);
        }
    }

    private CrossCheck() {}

    /**
     * The relative error of {@code a} against {@code b}: {@code max|a - b| / max(max|b|, 1e-6)}.
     *
     * @param a an answer
     * @param b the answer it is compared with
     * @return the error, or infinity when the lengths differ or a value is not finite
     */
    public static double relativeError(float[] a, float[] b) {
        if (a.length != b.length) {
            return Double.POSITIVE_INFINITY;
        }
        double difference = 0;
        double magnitude = 0;
        for (int i = 0; i < a.length; i++) {
            if (!Float.isFinite(a[i]) || !Float.isFinite(b[i])) {
                return Double.POSITIVE_INFINITY;
            }
            difference = Math.max(difference, Math.abs((double) a[i] - b[i]));
            magnitude = Math.max(magnitude, Math.abs((double) b[i]));
        }
        return difference / Math.max(magnitude, 1e-6);
    }

    /**
     * Deterministic rows: multiples of 1/4096 in [-1, 1), exact in float, double and decimal, so JSON
     * carries them to both servers unrounded.
     */
    static float[] input(int rows, int width, long seed) {
        SplittableRandom random = new SplittableRandom(seed * 1_000_003L + rows);
        float[] values = new float[rows * width];
        for (int i = 0; i < values.length; i++) {
            values[i] = (random.nextInt(8192) - 4096) / 4096f;
        }
        return values;
    }

    /**
     * Compares the servers.
     *
     * @param a the first server's base URL ({@code http://127.0.0.1:8000})
     * @param b the second's
     * @param model the model's name on both
     * @param rows the request sizes
     * @param tolerance the largest relative error taken as agreement
     * @param reference the model, to check both against the CPU; or null
     * @param seed the inputs' seed
     * @return the outcome
     */
    public static Result run(URI a, URI b, String model, List<Integer> rows, double tolerance, MlpWeights reference,
            long seed) {
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            HttpClient client = HttpClient.newBuilder().executor(executor).version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(5)).build();
            try {
                return compare(client, a, b, model, rows, tolerance, reference, seed);
            } finally {
                client.shutdownNow();
            }
        }
    }

    private static Result compare(HttpClient client, URI a, URI b, String model, List<Integer> rows, double tolerance,
            MlpWeights reference, long seed) {
        int[] widthsA;
        int[] widthsB;
        try {
            widthsA = widths(client, a, model);
            widthsB = widths(client, b, model);
        } catch (IOException | InterruptedException e) {
            return failed(a, b, model, tolerance, reference, "cannot read the model's metadata: " + e.getMessage());
        }
        if (!Arrays.equals(widthsA, widthsB)) {
            return failed(a, b, model, tolerance, reference, "the servers' models differ in shape: " + a + " takes "
                    + widthsA[0] + " and gives " + widthsA[1] + ", " + b + " takes " + widthsB[0] + " and gives "
                    + widthsB[1]);
        }
        int in = widthsA[0];
        int out = widthsA[1];
        if (reference != null && (reference.inputWidth() != in || reference.outputWidth() != out)) {
            return failed(a, b, model, tolerance, reference, "the reference model takes " + reference.inputWidth()
                    + " and gives " + reference.outputWidth() + ", the servers " + in + " and " + out);
        }
        record Ask(int rows, String encoding, float[] input) {}
        List<Ask> asks = new ArrayList<>();
        Map<Integer, float[]> expected = new LinkedHashMap<>();
        for (int n : rows) {
            float[] values = input(n, in, seed);
            for (String encoding : List.of("json", "binary")) {
                asks.add(new Ask(n, encoding, values));
            }
            if (reference != null) {
                expected.put(n, forward(reference, values, n));
            }
        }
        List<Case> cases = new ArrayList<>();
        try {
            for (Ask ask : asks) {
                float[] answerA = infer(client, a, model, ask.input(), ask.rows(), in, out, ask.encoding()).join();
                float[] answerB = infer(client, b, model, ask.input(), ask.rows(), in, out, ask.encoding()).join();
                cases.add(compared(ask.rows(), ask.encoding(), "sequential", answerA, answerB, expected.get(ask.rows()),
                        tolerance));
            }
            // All at once, so that each server batches them together: each must still get exactly its own rows.
            List<CompletableFuture<float[]>> answersA = new ArrayList<>();
            for (Ask ask : asks) {
                answersA.add(infer(client, a, model, ask.input(), ask.rows(), in, out, ask.encoding()));
            }
            List<float[]> doneA = answersA.stream().map(CompletableFuture::join).toList();
            List<CompletableFuture<float[]>> answersB = new ArrayList<>();
            for (Ask ask : asks) {
                answersB.add(infer(client, b, model, ask.input(), ask.rows(), in, out, ask.encoding()));
            }
            List<float[]> doneB = answersB.stream().map(CompletableFuture::join).toList();
            for (int i = 0; i < asks.size(); i++) {
                cases.add(compared(asks.get(i).rows(), asks.get(i).encoding(), "concurrent", doneA.get(i), doneB.get(i),
                        expected.get(asks.get(i).rows()), tolerance));
            }
        } catch (CompletionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return failed(a, b, model, tolerance, reference, cause.getMessage());
        }
        double worst = cases.stream().mapToDouble(c -> Math.max(c.errorAB(),
                reference == null ? 0 : Math.max(c.errorA(), c.errorB()))).max().orElse(0);
        return new Result(a.toString(), b.toString(), model, in, out, tolerance, reference != null, cases, worst,
                cases.stream().allMatch(Case::agree), null);
    }

    private static Result failed(URI a, URI b, String model, double tolerance, MlpWeights reference, String problem) {
        return new Result(a.toString(), b.toString(), model, 0, 0, tolerance, reference != null, List.of(),
                Double.NaN, false, problem);
    }

    private static Case compared(int rows, String encoding, String mode, float[] a, float[] b, float[] expected,
            double tolerance) {
        double ab = relativeError(a, b);
        double ea = expected == null ? Double.NaN : relativeError(a, expected);
        double eb = expected == null ? Double.NaN : relativeError(b, expected);
        boolean agree = ab <= tolerance && (expected == null || (ea <= tolerance && eb <= tolerance));
        return new Case(rows, encoding, mode, ab, ea, eb, agree);
    }

    /** The model on the CPU, rows in parallel. */
    private static float[] forward(MlpWeights model, float[] input, int rows) {
        int in = model.inputWidth();
        int out = model.outputWidth();
        float[] output = new float[rows * out];
        IntStream.range(0, rows).parallel().forEach(r -> System.arraycopy(
                model.forward(Arrays.copyOfRange(input, r * in, (r + 1) * in)), 0, output, r * out, out));
        return output;
    }

    /** The input and output widths from {@code GET /v2/models/{model}}. */
    private static int[] widths(HttpClient client, URI base, String model) throws IOException, InterruptedException {
        HttpResponse<byte[]> response = client.send(HttpRequest.newBuilder(base.resolve("/v2/models/" + model))
                .timeout(TIMEOUT).build(), HttpResponse.BodyHandlers.ofByteArray());
        if (response.statusCode() != 200) {
            throw new ServerException(base + " answered " + response.statusCode() + " for model " + model + ": "
                    + new String(response.body(), StandardCharsets.UTF_8));
        }
        JsonNode metadata = JSON.readTree(response.body());
        JsonNode input = metadata.path("inputs").path(0).path("shape").path(1);
        JsonNode output = metadata.path("outputs").path(0).path("shape").path(1);
        if (!input.isIntegralNumber() || !output.isIntegralNumber()) {
            throw new ServerException(base + " gave no [-1, width] shapes: " + metadata);
        }
        return new int[] {input.asInt(), output.asInt()};
    }

    /** Asks {@code base} about {@code rows} rows; fails with a {@link ServerException} for anything but an answer. */
    static CompletableFuture<float[]> infer(HttpClient client, URI base, String model, float[] values, int rows,
            int in, int out, String encoding) {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve("/v2/models/" + model + "/infer"))
                .timeout(TIMEOUT);
        String id = "crosscheck-" + rows + "-" + encoding;
        if (encoding.equals("binary")) {
            HttpLoad.Body body = HttpLoad.binaryRequest(values, rows, in, id);
            request.POST(HttpRequest.BodyPublishers.ofByteArray(body.bytes()))
                    .header("Content-Type", "application/octet-stream")
                    .header(KServeProtocol.HEADER_LENGTH, body.headerLength());
        } else {
            request.POST(HttpRequest.BodyPublishers.ofByteArray(HttpLoad.jsonRequest(values, rows, in, id)))
                    .header("Content-Type", "application/json");
        }
        return client.sendAsync(request.build(), HttpResponse.BodyHandlers.ofByteArray()).thenApply(response -> {
            try {
                return answer(base, response, rows, out, id);
            } catch (IOException e) {
                throw new CompletionException(e);
            }
        });
    }

    private static float[] answer(URI base, HttpResponse<byte[]> response, int rows, int out, String id)
            throws IOException {
        String where = base + " (" + rows + " rows, " + id + ")";
        if (response.statusCode() != 200) {
            throw new ServerException(where + " answered " + response.statusCode() + ": "
                    + new String(response.body(), StandardCharsets.UTF_8));
        }
        byte[] body = response.body();
        String headerLength = response.headers().firstValue(KServeProtocol.HEADER_LENGTH).orElse(null);
        int jsonLength = headerLength == null ? body.length : Integer.parseInt(headerLength.strip());
        if (jsonLength < 0 || jsonLength > body.length) {
            throw new ServerException(where + ": " + KServeProtocol.HEADER_LENGTH + " " + jsonLength + " is outside "
                    + "the answer's " + body.length + " bytes");
        }
        JsonNode root = JSON.readTree(new String(body, 0, jsonLength, StandardCharsets.UTF_8));
        if (!id.equals(root.path("id").asText(null))) {
            throw new ServerException(where + " answered with id " + root.path("id") + ", not " + id);
        }
        JsonNode tensor = root.path("outputs").path(0);
        if (!tensor.path("shape").toString().equals("[" + rows + "," + out + "]")
                || !"FP32".equals(tensor.path("datatype").asText())) {
            throw new ServerException(where + " answered with " + tensor.path("datatype") + " " + tensor.path("shape")
                    + ", not FP32 [" + rows + "," + out + "]");
        }
        float[] values = new float[rows * out];
        JsonNode binarySize = tensor.path("parameters").path("binary_data_size");
        if (!binarySize.isMissingNode()) {
            if (binarySize.asLong() != (long) values.length * Float.BYTES
                    || body.length - jsonLength != values.length * Float.BYTES) {
                throw new ServerException(where + " answered " + (body.length - jsonLength) + " bytes of binary data, "
                        + "binary_data_size " + binarySize + ", for " + values.length + " floats");
            }
            ByteBuffer.wrap(body, jsonLength, values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN)
                    .asFloatBuffer().get(values);
        } else {
            JsonNode data = tensor.path("data");
            if (!data.isArray() || data.size() != values.length) {
                throw new ServerException(where + " answered " + data.size() + " values, not " + values.length);
            }
            for (int i = 0; i < values.length; i++) {
                values[i] = data.get(i).floatValue();
            }
        }
        return values;
    }

    /** The outcome as a table. */
    static String table(Result result) {
        StringBuilder text = new StringBuilder();
        text.append(String.format(Locale.ROOT, "cross-check: A = %s, B = %s, model %s, tolerance %.0e%s%n", result.a(),
                result.b(), result.model(), result.tolerance(),
                result.reference() ? ", R = the model on the CPU" : ""));
        if (result.problem() != null) {
            return text.append("cannot compare: ").append(result.problem()).append('\n').toString();
        }
        text.append(String.format(Locale.ROOT, "%6s %-7s %-11s %12s %12s %12s  %s%n", "rows", "body", "mode", "A vs B",
                "A vs R", "B vs R", "verdict"));
        for (Case c : result.cases()) {
            text.append(String.format(Locale.ROOT, "%6d %-7s %-11s %12.3e %12s %12s  %s%n", c.rows(), c.encoding(),
                    c.mode(), c.errorAB(), e(c.errorA()), e(c.errorB()), c.agree() ? "agree" : "DISAGREE"));
        }
        long bad = result.cases().stream().filter(c -> !c.agree()).count();
        text.append(String.format(Locale.ROOT, "%s: %d of %d answers agree, worst relative error %.3e%n",
                result.agree() ? "PASS" : "FAIL", result.cases().size() - bad, result.cases().size(), result.worst()));
        return text.toString();
    }

    private static String e(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3e", v);
    }

    @Option(names = "--a", required = true, description = "one server, e.g. http://127.0.0.1:18000")
    URI a;

    @Option(names = "--b", required = true, description = "the other server")
    URI b;

    @Option(names = "--model", description = "the served model's name (default: ${DEFAULT-VALUE})")
    String model = "mlp";

    @Option(names = "--rows", split = ",", description = "request sizes in rows (default: 1, 2, 3, 7, 8, 17, 31, "
            + "64, 100, 256, 300)")
    List<Integer> rows = DEFAULT_ROWS;

    @Option(names = "--tolerance", description = "the largest relative error taken as agreeing (default: "
            + "${DEFAULT-VALUE})")
    double tolerance = 1e-4;

    @Option(names = "--reference", description = "the model file, to compare both with the model on the CPU")
    Path referenceModel;

    @Option(names = "--seed", description = "the inputs' random seed (default: ${DEFAULT-VALUE})")
    long seed = 7;

    @Option(names = "--json", description = "write the result there")
    Path json;

    public static void main(String[] args) {
        System.exit(Cli.execute(new CrossCheck(), args));
    }

    /** The exit status: 0 when every answer agrees, 1 when one does not, 2 when the servers could not be asked. */
    @Override
    public Integer call() throws Exception {
        MlpWeights reference = referenceModel == null ? null : MlpWeights.load(referenceModel);
        Result result = run(a, b, model, rows, tolerance, reference, seed);
        System.out.print(table(result));
        if (json != null) {
            JSON.enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), result);
        }
        return result.problem() != null ? 2 : result.agree() ? 0 : 1;
    }
}
