package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.serving.EngineMetrics;
import org.cudagraph4j.serving.EngineUnhealthyException;
import org.cudagraph4j.serving.ServingOptions;

/**
 * A Helidon SE web server (one virtual thread per request) that serves one model over the HTTP/REST
 * side of the Open Inference Protocol (KServe v2): {@code GET /v2/health/live},
 * {@code /v2/health/ready}, {@code /v2/models/{name}}, {@code /v2/models/{name}/ready} and
 * {@code POST /v2/models/{name}/infer}, in JSON or with the binary tensor data extension. Bad input
 * is a {@code 400 {"error": …}} and never reaches the backend; an unknown model is a {@code 404};
 * a backend that is not ready, saturated (its queue full) or unhealthy is a {@code 503}. Beyond the
 * protocol, {@code GET /v2/models/{name}/metrics} gives the serving engine's {@link EngineMetrics}
 * as JSON, batches and rows per GPU included (a {@code 404} on the CPU backend).
 *
 * <pre>
 *   InferenceServer --model mlp.safetensors [--name mlp] [--port 8000] [--max-body-bytes 8388608]
 *                   [--backend gpu|cpu] [--devices all|I,J,...] [--queue-capacity 4096]
 *   InferenceServer --generate mlp.safetensors [--width 512] [--layers 16] [--seed 42]
 * </pre>
 * {@code --devices} picks the GPU backend's GPUs: {@code all} (the default) for every GPU of the
 * host, one engine over all of them (issue 16), or their ordinals separated by commas; a single
 * number is one GPU's ordinal, not a count ({@code --devices 1} serves on GPU 1 alone). Port 0 picks
 * a free port; the line {@code serving NAME on http://127.0.0.1:PORT on GPU 0 (…), …} says which.
 */
public final class InferenceServer implements AutoCloseable {
    private static final String JSON_TYPE = "application/json";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(60);

    private final String modelName;
    private final InferenceBackend backend;
    private final KServeProtocol protocol;
    private final long maxBodyBytes;
    private final WebServer server;

    /**
     * Starts serving {@code backend} as model {@code modelName}.
     *
     * @param modelName the model's name in the URLs
     * @param backend what runs the model; the server closes it
     * @param port the TCP port on loopback, or 0 for any free one
     * @param maxBodyBytes the largest request body taken; a larger one is a 400
     */
    public InferenceServer(String modelName, InferenceBackend backend, int port, long maxBodyBytes) {
        this.modelName = modelName;
        this.backend = backend;
        this.protocol = new KServeProtocol(modelName, backend.inputWidth(), backend.outputWidth());
        this.maxBodyBytes = maxBodyBytes;
        this.server = WebServer.builder()
                .host("127.0.0.1")
                .port(port)
                // Without TCP_NODELAY (Helidon's default leaves Nagle on), a large binary answer's last
                // segment waited for the client's delayed ACK: on the H200 run of 2026-11-29 the 1-64
                // row binary mix had a p50 of 42 ms at 800 requests/s and more, and wrk saw 44 ms at
                // 32 rows, while 1-row JSON answers (one segment) took 1 ms. aiohttp sets it by default.
                // On CPU backends it took wrk at 32 rows from 1,417 requests/s (p50 44 ms) to 5,393 (10 ms).
                .connectionOptions(options -> options.tcpNoDelay(true))
                .routing(routing -> routing
                        .get("/v2/health/live", (req, res) -> json(res, Status.OK_200, "{\"live\":true}"))
                        .get("/v2/health/ready", (req, res) -> ready(res))
                        .get("/v2/models/{name}", this::metadata)
                        .get("/v2/models/{name}/ready", this::modelReady)
                        .get("/v2/models/{name}/metrics", this::metrics)
                        .post("/v2/models/{name}/infer", this::infer))
                .build()
                .start();
    }

    /** The port the server listens on. */
    public int port() {
        return server.port();
    }

    private void ready(ServerResponse res) {
        boolean ready = backend.ready();
        json(res, ready ? Status.OK_200 : Status.SERVICE_UNAVAILABLE_503, "{\"ready\":" + ready + "}");
    }

    private boolean known(ServerRequest req, ServerResponse res) {
        String name = req.path().pathParameters().get("name");
        if (!modelName.equals(name)) {
            error(res, Status.NOT_FOUND_404, "unknown model \"" + name + "\"; this server serves \"" + modelName
                    + "\"");
            return false;
        }
        return true;
    }

    private void metadata(ServerRequest req, ServerResponse res) {
        if (known(req, res)) {
            send(res, Status.OK_200, protocol.metadata());
        }
    }

    private void modelReady(ServerRequest req, ServerResponse res) {
        if (known(req, res)) {
            ready(res);
        }
    }

    private void metrics(ServerRequest req, ServerResponse res) {
        if (!known(req, res)) {
            return;
        }
        Optional<EngineMetrics> metrics = backend.metrics();
        if (metrics.isEmpty()) {
            error(res, Status.NOT_FOUND_404, "this server's backend has no serving engine, so no metrics");
            return;
        }
        try {
            send(res, Status.OK_200, JSON.writeValueAsBytes(metrics.get()));
        } catch (JsonProcessingException e) {
            error(res, Status.INTERNAL_SERVER_ERROR_500, "cannot write the metrics: " + e.getMessage());
        }
    }

    private void infer(ServerRequest req, ServerResponse res) {
        if (!known(req, res)) {
            return;
        }
        try {
            byte[] body = readBounded(req);
            KServeProtocol.Request request = protocol.parse(body,
                    req.headers().first(HeaderNames.create(KServeProtocol.HEADER_LENGTH)).orElse(null));
            if (!backend.ready()) {
                error(res, Status.SERVICE_UNAVAILABLE_503, "the model is not ready");
                return;
            }
            float[] output = backend.infer(request.data()).get(ANSWER_TIMEOUT.toNanos(), TimeUnit.NANOSECONDS);
            KServeProtocol.Response response = protocol.response(request, output);
            if (response.binary().length == 0) {
                send(res, Status.OK_200, response.json());
            } else {
                byte[] all = new byte[response.json().length + response.binary().length];
                System.arraycopy(response.json(), 0, all, 0, response.json().length);
                System.arraycopy(response.binary(), 0, all, response.json().length, response.binary().length);
                res.header(KServeProtocol.HEADER_LENGTH, Integer.toString(response.json().length));
                res.header(HeaderNames.CONTENT_TYPE, "application/octet-stream");
                res.status(Status.OK_200).send(all);
            }
        } catch (KServeProtocol.ProtocolException e) {
            error(res, Status.create(e.status), e.getMessage());
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            // Saturated (a full queue is a RejectedExecutionException), unhealthy, or too slow: try later.
            if (cause instanceof RejectedExecutionException || cause instanceof EngineUnhealthyException
                    || cause instanceof TimeoutException) {
                error(res, Status.SERVICE_UNAVAILABLE_503, cause.getMessage());
            } else {
                error(res, Status.INTERNAL_SERVER_ERROR_500, String.valueOf(cause));
            }
        } catch (TimeoutException e) {
            error(res, Status.SERVICE_UNAVAILABLE_503, "no answer within " + ANSWER_TIMEOUT);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            error(res, Status.SERVICE_UNAVAILABLE_503, "interrupted");
        } catch (IOException e) {
            error(res, Status.BAD_REQUEST_400, "cannot read the request body: " + e.getMessage());
        }
    }

    /** The body, refused (400) past the limit whether or not Content-Length told the truth. */
    private byte[] readBounded(ServerRequest req) throws IOException {
        long declared = req.headers().contentLength().orElse(-1);
        if (declared > maxBodyBytes) {
            throw new KServeProtocol.ProtocolException(400, "the request body of " + declared
                    + " bytes is over the limit of " + maxBodyBytes);
        }
        try (InputStream in = req.content().inputStream()) {
            byte[] body = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBodyBytes + 1));
            if (body.length > maxBodyBytes) {
                throw new KServeProtocol.ProtocolException(400, "the request body is over the limit of "
                        + maxBodyBytes + " bytes");
            }
            return body;
        }
    }

    private static void json(ServerResponse res, Status status, String json) {
        send(res, status, json.getBytes(StandardCharsets.UTF_8));
    }

    private static void error(ServerResponse res, Status status, String message) {
        send(res, status, KServeProtocol.error(message));
    }

    private static void send(ServerResponse res, Status status, byte[] body) {
        res.header(HeaderNames.CONTENT_TYPE, JSON_TYPE);
        res.status(status).send(body);
    }

    /** Stops the server, then closes the backend. */
    @Override
    public void close() {
        try {
            server.stop();
        } finally {
            backend.close();
        }
    }

    /**
     * The GPU ordinals that {@code --devices} names: {@code all}, or ordinals separated by commas.
     *
     * @param spec the option's value
     * @param available how many GPUs the host has
     * @return the ordinals, in the order given
     * @throws IllegalArgumentException saying what is wrong with {@code spec}
     */
    static List<Integer> deviceOrdinals(String spec, int available) {
        if (available < 1) {
            throw new IllegalArgumentException("--devices " + spec + ": this host has no GPU");
        }
        if (spec.equals("all")) {
            return IntStream.range(0, available).boxed().toList();
        }
        List<Integer> ordinals = new ArrayList<>();
        for (String item : spec.split(",", -1)) {
            if (!item.strip().matches("\\d{1,9}")) {
                throw new IllegalArgumentException("--devices takes all, or GPU ordinals separated by commas such as "
                        + "0 or 0,1; got \"" + spec + "\"");
            }
            int ordinal = Integer.parseInt(item.strip());
            if (ordinal >= available) {
                throw new IllegalArgumentException("--devices names GPU " + ordinal + ", but this host has "
                        + available + " GPU(s), ordinals 0 to " + (available - 1));
            }
            if (ordinals.contains(ordinal)) {
                throw new IllegalArgumentException("--devices names GPU " + ordinal + " twice");
            }
            ordinals.add(ordinal);
        }
        return List.copyOf(ordinals);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        if (options.containsKey("generate")) {
            MlpWeights model = MlpWeights.random(Integer.parseInt(options.getOrDefault("width", "512")),
                    Integer.parseInt(options.getOrDefault("layers", "16")),
                    Long.parseLong(options.getOrDefault("seed", "42")));
            model.save(Path.of(options.get("generate")));
            System.out.println("wrote " + options.get("generate"));
            return;
        }
        if (!options.containsKey("model")) {
            System.err.println("usage: InferenceServer --model FILE [--name NAME] [--port N] [--max-body-bytes N] "
                    + "[--backend gpu|cpu] [--devices all|I,J,...] [--queue-capacity N]\n"
                    + "       InferenceServer --generate FILE [--width W] [--layers L] [--seed S]");
            System.exit(2);
        }
        MlpWeights model = MlpWeights.load(Path.of(options.get("model")));
        InferenceBackend backend;
        String where;
        if (options.getOrDefault("backend", "gpu").equals("cpu")) {
            backend = new CpuBackend(model);
            where = "the CPU";
        } else {
            List<CudaDevice> all = Cuda.devices();
            List<CudaDevice> devices;
            try {
                devices = deviceOrdinals(options.getOrDefault("devices", "all"), all.size()).stream().map(all::get)
                        .toList();
            } catch (IllegalArgumentException e) {
                System.err.println("InferenceServer: " + e.getMessage());
                System.exit(2);
                return;
            }
            backend = new EngineBackend(devices, model, ServingOptions.defaults().withQueueCapacity(Integer.parseInt(
                    options.getOrDefault("queue-capacity", Integer.toString(ServingOptions.defaults().queueCapacity())))));
            where = String.join(", ", devices.stream()
                    .map(d -> "GPU " + d.ordinal() + " (" + d.properties().name() + ")").toList());
        }
        InferenceServer server = new InferenceServer(options.getOrDefault("name", "mlp"), backend,
                Integer.parseInt(options.getOrDefault("port", "8000")),
                Long.parseLong(options.getOrDefault("max-body-bytes", Long.toString(8 << 20))));
        Runtime.getRuntime().addShutdownHook(new Thread(server::close));
        System.out.println("serving " + options.getOrDefault("name", "mlp") + " on http://127.0.0.1:" + server.port()
                + " on " + where);
    }
}
