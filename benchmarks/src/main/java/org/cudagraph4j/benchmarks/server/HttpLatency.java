package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.cudagraph4j.benchmarks.Cli;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Unloaded latency over HTTP: one keep-alive connection per server, closed loop, one row per
 * request, in JSON and in binary tensor data. The client is a plain socket that writes a prepared
 * request and reads the answer by its {@code Content-Length}, so that what is measured is the
 * server and the loopback, not an HTTP client's own thread hand-offs. The servers and encodings
 * take turns, {@code --rounds} times, and a sample of the answers is checked against the model on
 * the CPU.
 *
 * <pre>
 *   HttpLatency --target java=http://127.0.0.1:18000 --target torch=http://127.0.0.1:18001 \
 *       --model mlp.safetensors [--requests 5000] [--rounds 4] [--json latency.json]
 * </pre>
 * Exit status 0, 1 when an answer was wrong or a request failed, 2 for bad options.
 */
@Command(name = "HttpLatency", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Closed-loop one-row latency of KServe v2 servers over one keep-alive connection each.")
public final class HttpLatency implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final double TOLERANCE = 1e-4;
    private static final int POOL = 64;
    private static final List<String> ENCODINGS = List.of("binary", "json");

    @Spec
    private CommandSpec spec;

    @Option(names = "--target", required = true, description = "NAME=URL of a server, repeatable")
    Map<String, URI> targets = new LinkedHashMap<>();

    @Option(names = "--model", required = true, description = "the model file both servers serve")
    Path model;

    @Option(names = "--model-name", description = "the served model's name (default: ${DEFAULT-VALUE})")
    String modelName = "mlp";

    @Option(names = "--requests", description = "requests per server, encoding and round (default: ${DEFAULT-VALUE})")
    int requests = 5_000;

    @Option(names = "--rounds", description = "turns each server and encoding take (default: ${DEFAULT-VALUE})")
    int rounds = 4;

    @Option(names = "--warmup", description = "requests per server and encoding first, not kept (default: "
            + "${DEFAULT-VALUE})")
    int warmup = 5_000;

    @Option(names = "--json", description = "write the results there")
    Path json;

    /** One server and encoding's result; {@code windowsMillis}: each round's [start, end], epoch milliseconds. */
    record Point(String target, String encoding, long requests, double p50Micros, double p90Micros, double p99Micros,
            double p999Micros, double maxMicros, double meanMicros, List<long[]> windowsMillis) {}

    /** A prepared request and the model's answer to it. */
    private record Prepared(byte[] request, float[] answer) {}

    public static void main(String[] args) {
        System.exit(Cli.execute(new HttpLatency(), args));
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        if (requests < 1 || rounds < 1 || warmup < 0) {
            err.println("HttpLatency: --requests and --rounds must be positive, --warmup not negative");
            return 2;
        }
        MlpWeights weights = MlpWeights.load(model);
        SplittableRandom random = new SplittableRandom(44);
        Map<String, Connection> connections = new LinkedHashMap<>();
        Map<String, Histogram> histograms = new LinkedHashMap<>();
        Map<String, List<long[]>> windows = new LinkedHashMap<>();
        Map<String, List<Prepared>> prepared = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, URI> target : targets.entrySet()) {
                connections.put(target.getKey(), new Connection(target.getValue()));
                for (String encoding : ENCODINGS) {
                    String key = target.getKey() + " " + encoding;
                    histograms.put(key, new Histogram(TimeUnit.SECONDS.toNanos(10), 3));
                    windows.put(key, new ArrayList<>());
                    prepared.put(key, prepare(target.getValue(), encoding, weights, random));
                }
            }
            for (int round = 0; round <= rounds; round++) { // round 0 is the warm-up
                for (Map.Entry<String, Connection> target : connections.entrySet()) {
                    for (String encoding : ENCODINGS) {
                        String key = target.getKey() + " " + encoding;
                        int count = round == 0 ? warmup : requests;
                        long started = System.currentTimeMillis();
                        run(target.getValue(), encoding, prepared.get(key), count,
                                round == 0 ? null : histograms.get(key));
                        if (round > 0) {
                            windows.get(key).add(new long[] {started, System.currentTimeMillis()});
                        }
                    }
                }
            }
        } catch (IOException | IllegalStateException e) {
            err.println("HttpLatency: " + e.getMessage());
            return 1;
        } finally {
            for (Connection connection : connections.values()) {
                connection.close();
            }
        }
        List<Point> points = new ArrayList<>();
        histograms.forEach((key, h) -> {
            String[] parts = key.split(" ");
            points.add(new Point(parts[0], parts[1], h.getTotalCount(), h.getValueAtPercentile(50) / 1e3,
                    h.getValueAtPercentile(90) / 1e3, h.getValueAtPercentile(99) / 1e3,
                    h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3, h.getMean() / 1e3, windows.get(key)));
        });
        spec.commandLine().getOut().append(table(points)).flush();
        if (json != null) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("requestsPerRound", requests);
            out.put("rounds", rounds);
            out.put("warmup", warmup);
            out.put("targets", targets);
            out.put("points", points);
            JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), out);
        }
        return 0;
    }

    /** {@code POOL} one-row requests of fresh random rows, and the model's answers on the CPU. */
    private List<Prepared> prepare(URI base, String encoding, MlpWeights weights, SplittableRandom random) {
        List<Prepared> pool = new ArrayList<>();
        int width = weights.inputWidth();
        for (int i = 0; i < POOL; i++) {
            float[] row = new float[width];
            for (int j = 0; j < width; j++) {
                row[j] = (float) (random.nextDouble() * 2 - 1);
            }
            byte[] body;
            String headerLength = null;
            if (encoding.equals("binary")) {
                HttpLoad.Body binary = HttpLoad.binaryRequest(row, 1, width, null);
                body = binary.bytes();
                headerLength = binary.headerLength();
            } else {
                body = HttpLoad.jsonRequest(row, 1, width, null);
            }
            String head = "POST /v2/models/" + modelName + "/infer HTTP/1.1\r\nHost: " + base.getHost() + ":"
                    + base.getPort() + "\r\nContent-Type: " + (headerLength == null ? "application/json"
                            : "application/octet-stream") + "\r\nContent-Length: " + body.length + "\r\n"
                    + (headerLength == null ? "" : KServeProtocol.HEADER_LENGTH + ": " + headerLength + "\r\n")
                    + "\r\n";
            byte[] headBytes = head.getBytes(StandardCharsets.US_ASCII);
            byte[] request = new byte[headBytes.length + body.length];
            System.arraycopy(headBytes, 0, request, 0, headBytes.length);
            System.arraycopy(body, 0, request, headBytes.length, body.length);
            pool.add(new Prepared(request, weights.forward(row)));
        }
        return pool;
    }

    private static void run(Connection connection, String encoding, List<Prepared> pool, int count,
            Histogram histogram) throws IOException {
        for (int i = 0; i < count; i++) {
            Prepared request = pool.get(i % pool.size());
            long start = System.nanoTime();
            Connection.Response response = connection.exchange(request.request());
            long took = System.nanoTime() - start;
            if (response.status() != 200) {
                throw new IllegalStateException(connection.uri + " answered " + response.status() + ": "
                        + new String(response.body(), StandardCharsets.UTF_8));
            }
            if (histogram != null) {
                histogram.recordValue(took);
            }
            if (i % 53 == 0) { // decoding costs µs: a sample of the answers
                float[] answer = decode(encoding, response);
                double error = CrossCheck.relativeError(answer, request.answer());
                if (!(error <= TOLERANCE)) {
                    throw new IllegalStateException(connection.uri + " (" + encoding + "): an answer differs from the "
                            + "model on the CPU: relative error " + error);
                }
            }
        }
    }

    private static float[] decode(String encoding, Connection.Response response) throws IOException {
        if (encoding.equals("binary")) {
            int header = Integer.parseInt(response.headerLength());
            ByteBuffer data = ByteBuffer.wrap(response.body(), header, response.body().length - header)
                    .order(ByteOrder.LITTLE_ENDIAN);
            float[] answer = new float[data.remaining() / Float.BYTES];
            data.asFloatBuffer().get(answer);
            return answer;
        }
        JsonNode values = JSON.readTree(response.body()).path("outputs").path(0).path("data");
        float[] answer = new float[values.size()];
        for (int i = 0; i < answer.length; i++) {
            answer[i] = (float) values.get(i).asDouble();
        }
        return answer;
    }

    private static String table(List<Point> points) {
        StringBuilder text = new StringBuilder("one keep-alive connection, closed loop, one row per request\n");
        text.append(String.format(Locale.ROOT, "%-10s %-8s %9s %9s %9s %9s %9s %9s%n", "server", "encoding",
                "requests", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "mean µs"));
        for (Point p : points) {
            text.append(String.format(Locale.ROOT, "%-10s %-8s %9d %9.1f %9.1f %9.1f %9.1f %9.1f%n", p.target(),
                    p.encoding(), p.requests(), p.p50Micros(), p.p90Micros(), p.p99Micros(), p.p999Micros(),
                    p.meanMicros()));
        }
        return text.toString();
    }

    /** One keep-alive HTTP/1.1 connection that sends prepared requests and reads each answer whole. */
    private static final class Connection implements AutoCloseable {
        private final URI uri;
        private final Socket socket;
        private final OutputStream out;
        private final InputStream in;

        record Response(int status, String headerLength, byte[] body) {}

        Connection(URI uri) throws IOException {
            this.uri = uri;
            this.socket = new Socket();
            socket.setTcpNoDelay(true);
            socket.setSoTimeout((int) TimeUnit.SECONDS.toMillis(30));
            socket.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 10_000);
            this.out = socket.getOutputStream();
            this.in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
        }

        Response exchange(byte[] request) throws IOException {
            out.write(request);
            out.flush();
            String status = line();
            if (!status.startsWith("HTTP/1.1 ") || status.length() < 12) {
                throw new IOException(uri + " answered a status line of \"" + status + "\"");
            }
            int code = Integer.parseInt(status.substring(9, 12));
            long length = -1;
            String headerLength = null;
            for (String header = line(); !header.isEmpty(); header = line()) {
                int colon = header.indexOf(':');
                String name = colon < 0 ? header : header.substring(0, colon).strip().toLowerCase(Locale.ROOT);
                String value = colon < 0 ? "" : header.substring(colon + 1).strip();
                if (name.equals("content-length")) {
                    length = Long.parseLong(value);
                } else if (name.equals(KServeProtocol.HEADER_LENGTH.toLowerCase(Locale.ROOT))) {
                    headerLength = value;
                } else if (name.equals("transfer-encoding")) {
                    throw new IOException(uri + " answered with Transfer-Encoding " + value + "; this client reads "
                            + "answers by their Content-Length");
                }
            }
            if (length < 0 || length > Integer.MAX_VALUE) {
                throw new IOException(uri + " answered without a usable Content-Length");
            }
            return new Response(code, headerLength, in.readNBytes((int) length));
        }

        private String line() throws IOException {
            StringBuilder line = new StringBuilder();
            for (int b = in.read(); b != '\n'; b = in.read()) {
                if (b < 0) {
                    throw new IOException(uri + " closed the connection mid-answer");
                }
                if (b != '\r') {
                    line.append((char) b);
                }
            }
            return line.toString();
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // closing: nothing is left to read
            }
        }
    }
}
