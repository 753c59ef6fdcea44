package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.serving.EngineMetrics;

/**
 * The Open Inference Protocol's REST endpoints (KServe v2) for one model, as a Helidon SE service:
 *
 * <pre>
 *   GET  /v2                                         server metadata
 *   GET  /v2/health/live, /v2/health/ready           liveness, readiness
 *   GET  /v2/models/{name}[/versions/1]              model metadata
 *   GET  /v2/models/{name}[/versions/1]/ready        model readiness: {"name", "ready"}
 *   POST /v2/models/{name}[/versions/1]/infer        inference, JSON or binary tensor data
 *   POST /v2/models/{name}[/versions/1]/generate     text generation (a {@link TextGenerator}'s model)
 *   POST /v2/models/{name}[/versions/1]/generate_stream  the same, as server-sent events
 *   GET  /v2/models/{name}[/versions/1]/metrics      the serving engine's counters as JSON (GPU backend)
 *   GET  /metrics                                    Prometheus metrics
 * </pre>
 *
 * Every answer is JSON (the metrics scrape excepted), errors as {@code {"error": "…"}}: a malformed
 * request or one over a {@link ServerLimits limit} is a {@code 400} (a body over its limit a
 * {@code 413}, one not received in time a {@code 408}), an unknown model, version or path a
 * {@code 404}, a known path with the wrong method a {@code 405} with {@code Allow}, and a backend
 * that is saturated, unhealthy, shutting down or too slow a {@code 503}. No other {@code 5xx}.
 *
 * <p>The server serves an {@link InferenceBackend}'s model, a {@link TextGenerator}'s, or one of
 * each under two names; {@code infer} is for the first, {@code generate} and {@code generate_stream}
 * ({@link GenerateProtocol}) for the second, and each refuses the other's model with a {@code 400}.
 * A stream's events are written by the request's own thread from a queue the generator's thread
 * fills, and a client gone mid-stream cancels its generation at the next write.
 *
 * <p>What a client can hold is bounded ({@link ServerLimits}): a body takes the memory budget as
 * its bytes arrive, into a buffer that grows with them; once whole, the request takes an in-flight
 * slot and reserves, before it is parsed, what it can hold until its answer is written, reckoned
 * from the body's size; both are given back once the answer is written, which has a deadline of
 * its own. A {@link VirtualMachineError} while serving (out of memory) makes the server report
 * itself neither live nor ready from then on.
 *
 * <p>Thread safety: handlers run concurrently, one virtual thread per request.
 */
final class InferenceService implements HttpService {
    private static final String JSON_TYPE = "application/json";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int READ_CHUNK = 8 << 10;
    /** A body's first buffer; it grows as bytes arrive, never from what a header claims. */
    private static final int FIRST_BUFFER = 4 << 10;
    /** The encoded JSON answer's bytes per value, reckoned: about 12 characters, and room to grow its buffer. */
    private static final long JSON_ANSWER_BYTES = 24;
    /** The most of a refused request's body read and dropped to keep its answer deliverable. */
    private static final long DRAIN_BYTES = 64L << 20;
    /** Ends reads and writes past their timeouts; a cancelled deadline leaves its queue at once. */
    private static final ScheduledThreadPoolExecutor WATCHDOG = new ScheduledThreadPoolExecutor(1,
            Thread.ofPlatform().name("inference-watchdog").daemon().factory());

    static {
        WATCHDOG.setRemoveOnCancelPolicy(true);
    }

    /** The backend's model's name and the backend, or null for a server of a generator only. */
    private final String modelName;
    private final InferenceBackend backend;
    private final KServeProtocol protocol;
    /** The generative model, or null. */
    private final TextGenerator generator;
    private final ServerLimits limits;
    private final ServerMetrics metrics;
    private final Semaphore inFlight;
    /**
     * The memory budget ({@code --max-buffered-bytes}) left, in KiB (a semaphore's permits are ints):
     * bodies as they arrive, then each request's reckoned footprint until its answer is written.
     */
    private final Semaphore bufferedKib;
    /** Set once serving hit a {@link VirtualMachineError} (out of memory): not live, not ready. */
    private volatile Throwable broken;
    private final AtomicInteger running = new AtomicInteger();
    private volatile boolean draining;

    InferenceService(String modelName, InferenceBackend backend, ServerLimits limits) {
        this(modelName, backend, null, limits);
    }

    /**
     * A service of {@code backend}'s model, {@code generator}'s, or both.
     *
     * @param modelName the backend's model's name; null with no backend
     * @param backend null to serve the generator only
     * @param generator null to serve the backend only; its name must differ from {@code modelName}
     * @param limits what the server takes from clients
     */
    InferenceService(String modelName, InferenceBackend backend, TextGenerator generator, ServerLimits limits) {
        if (backend == null && generator == null) {
            throw new IllegalArgumentException("a server needs a backend, a generator or both");
        }
        if ((modelName == null) != (backend == null)) {
            throw new IllegalArgumentException("a backend needs a model name, and a name a backend");
        }
        if (generator != null && generator.name().equals(modelName)) {
            throw new IllegalArgumentException("the backend's model and the generator are both named \"" + modelName
                    + "\"");
        }
        this.modelName = modelName;
        this.backend = backend;
        this.generator = generator;
        this.limits = limits;
        this.protocol = backend == null ? null : new KServeProtocol(modelName, backend.elementType(),
                backend.inputWidth(), backend.outputWidth(), limits);
        this.metrics = backend == null ? new ServerMetrics(generator.name(), Optional::empty, this::ready)
                : new ServerMetrics(modelName, backend::metrics, this::ready);
        this.inFlight = new Semaphore(limits.maxInFlight());
        this.bufferedKib = new Semaphore((int) Math.min(Integer.MAX_VALUE, kib(limits.maxBufferedBytes())));
    }

    @Override
    public void routing(HttpRules rules) {
        String model = "/v2/models/{name}";
        String versioned = model + "/versions/{version}";
        List<String> extensions = generator == null ? List.of("binary_tensor_data")
                : List.of("binary_tensor_data", "generate");
        rules.get("/v2", (req, res) -> send(res, Status.OK_200,
                        KServeProtocol.serverMetadata("cudagraph4j", Cuda.libraryVersion(), extensions)))
                .get("/v2/health/live", (req, res) -> {
                    boolean live = broken == null;
                    json(res, live ? Status.OK_200 : Status.SERVICE_UNAVAILABLE_503, "{\"live\":" + live + "}");
                })
                .get("/v2/health/ready", (req, res) -> {
                    boolean ready = ready();
                    json(res, ready ? Status.OK_200 : Status.SERVICE_UNAVAILABLE_503, "{\"ready\":" + ready + "}");
                })
                .get("/metrics", this::prometheus);
        for (String base : new String[] {model, versioned}) {
            rules.get(base, this::metadata)
                    .get(base + "/ready", this::modelReady)
                    .get(base + "/metrics", this::engineMetrics)
                    .post(base + "/infer", this::infer)
                    .post(base + "/generate", (req, res) -> generate(req, res, false))
                    .post(base + "/generate_stream", (req, res) -> generate(req, res, true));
        }
        for (String path : new String[] {"/v2", "/v2/health/live", "/v2/health/ready", "/metrics", model,
            model + "/ready", model + "/metrics", versioned, versioned + "/ready", versioned + "/metrics"}) {
            rules.any(path, (req, res) -> notAllowed(req, res, "GET"));
        }
        for (String base : new String[] {model, versioned}) {
            for (String action : new String[] {"/infer", "/generate", "/generate_stream"}) {
                rules.any(base + action, (req, res) -> notAllowed(req, res, "POST"));
            }
        }
        rules.any((req, res) -> refuse(req, res, Status.NOT_FOUND_404, "no such endpoint: " + req.prologue().method()
                        .text() + " " + req.path().rawPath()));
    }

    /** Whether requests are taken: every model is healthy and the server is not stopping. */
    boolean ready() {
        return backendReady() && generatorReady();
    }

    private boolean backendReady() {
        return !draining && broken == null && (backend == null || backend.ready());
    }

    private boolean generatorReady() {
        return !draining && broken == null && (generator == null || generator.ready());
    }

    /** The budget's bytes held now by requests, to the KiB. */
    long heldBytes() {
        return (kib(limits.maxBufferedBytes()) - bufferedKib.availablePermits()) << 10;
    }

    /**
     * Records that serving hit {@code error} (out of memory, say): from now on the server is neither
     * live nor ready, so that an orchestrator replaces it.
     */
    private void broke(Throwable error) {
        if (broken == null) {
            broken = error;
            System.getLogger(InferenceService.class.getName()).log(System.Logger.Level.ERROR,
                    "serving failed; the server now reports itself not live and not ready", error);
        }
    }

    private boolean generative(String name) {
        return generator != null && generator.name().equals(name);
    }

    /** From now on, inference requests are answered 503 and readiness is false. */
    void drain() {
        draining = true;
    }

    /**
     * Waits until no inference request is in flight.
     *
     * @param timeout the longest wait
     * @return whether none is in flight
     */
    boolean awaitIdle(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (running.get() > 0) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            Thread.sleep(2);
        }
        return true;
    }

    private void prometheus(ServerRequest req, ServerResponse res) {
        res.header(HeaderNames.CONTENT_TYPE, ServerMetrics.contentType());
        sendWithin(res, Status.OK_200, metrics.scrape());
    }

    private void notAllowed(ServerRequest req, ServerResponse res, String allowed) {
        res.header(HeaderNames.ALLOW, allowed);
        refuse(req, res, Status.METHOD_NOT_ALLOWED_405, req.prologue().method().text() + " is not allowed on "
                + req.path().rawPath() + "; it takes " + allowed);
    }

    /**
     * The model the path names (with its one version, if it names one); null when it names none,
     * and then the 404 is sent.
     */
    private String known(ServerRequest req, ServerResponse res) {
        String name = req.path().pathParameters().get("name");
        if (!name.equals(modelName) && !generative(name)) {
            List<String> served = new ArrayList<>();
            for (String model : new String[] {modelName, generator == null ? null : generator.name()}) {
                if (model != null) {
                    served.add("\"" + model + "\"");
                }
            }
            refuse(req, res, Status.NOT_FOUND_404, "unknown model \"" + name + "\"; this server serves "
                    + String.join(" and ", served));
            return null;
        }
        Optional<String> version = req.path().pathParameters().first("version").asOptional();
        if (version.isPresent() && !version.get().equals(KServeProtocol.VERSION)) {
            refuse(req, res, Status.NOT_FOUND_404, "model \"" + name + "\" has no version \"" + version.get()
                    + "\"; its only version is \"" + KServeProtocol.VERSION + "\"");
            return null;
        }
        return name;
    }

    private void metadata(ServerRequest req, ServerResponse res) {
        String name = known(req, res);
        if (name != null) {
            send(res, Status.OK_200, generative(name) ? GenerateProtocol.metadata(name) : protocol.metadata());
        }
    }

    private void modelReady(ServerRequest req, ServerResponse res) {
        String name = known(req, res);
        if (name != null) {
            boolean ready = generative(name) ? generatorReady() : backendReady();
            send(res, ready ? Status.OK_200 : Status.SERVICE_UNAVAILABLE_503, KServeProtocol.modelReady(name, ready));
        }
    }

    private void engineMetrics(ServerRequest req, ServerResponse res) throws JsonProcessingException {
        String name = known(req, res);
        if (name == null) {
            return;
        }
        if (generative(name)) {
            error(res, Status.NOT_FOUND_404, "model \"" + name + "\" generates text; it has no serving engine metrics");
            return;
        }
        Optional<EngineMetrics> engine = backend.metrics();
        if (engine.isEmpty()) {
            error(res, Status.NOT_FOUND_404, "this server's backend has no serving engine, so no metrics");
            return;
        }
        send(res, Status.OK_200, JSON.writeValueAsBytes(engine.get()));
    }

    private void infer(ServerRequest req, ServerResponse res) {
        long arrived = System.nanoTime();
        String name = known(req, res);
        if (name == null) {
            return;
        }
        if (generative(name)) {
            refuse(req, res, Status.BAD_REQUEST_400, "model \"" + name + "\" generates text: POST /v2/models/" + name
                    + "/generate or /generate_stream");
            return;
        }
        running.incrementAndGet();
        int status;
        try {
            status = inferCounted(req, res);
        } finally {
            running.decrementAndGet();
        }
        metrics.request(status, System.nanoTime() - arrived);
    }

    /**
     * Why a request cannot be taken now, the server draining or {@code --max-in-flight} reached; or
     * null, with one of the in-flight slots taken, which the caller gives back.
     */
    private Refusal admit() {
        if (draining) {
            return new Refusal(Status.SERVICE_UNAVAILABLE_503, "the server is shutting down");
        }
        if (broken != null) {
            return new Refusal(Status.SERVICE_UNAVAILABLE_503, "the server is unhealthy: " + broken);
        }
        if (!inFlight.tryAcquire()) {
            return new Refusal(Status.SERVICE_UNAVAILABLE_503, "the server has " + limits.maxInFlight()
                    + " inference requests in flight, its limit (--max-in-flight); try again later");
        }
        return null;
    }

    /**
     * Serves an inference request that has passed the path checks; the status it was answered with.
     * The body is read first, its bytes counted against the memory budget as they arrive; only then
     * does the request take an in-flight slot and reserve, before it is parsed, the memory it will
     * hold until its answer is written, reckoned from the body's size ({@link #footprint}). Both are
     * given back once the answer is written, or its writing failed.
     */
    private int inferCounted(ServerRequest req, ServerResponse res) {
        if (draining) {
            return refuse(req, res, Status.SERVICE_UNAVAILABLE_503, "the server is shutting down");
        }
        int heldKib = 0;
        boolean admitted = false;
        ServerEvents.Infer event = new ServerEvents.Infer();
        event.begin();
        long startedAt = System.nanoTime();
        try {
            Body read = readBody(req);
            heldKib = read.heldKib();
            if (read.refusal() != null) {
                return refuse(req, res, read.refusal().status(), read.refusal().message());
            }
            Refusal refused = admit();
            if (refused != null) {
                return error(res, refused.status(), refused.message());
            }
            admitted = true;
            String headerLength = req.headers().first(HeaderNames.create(KServeProtocol.HEADER_LENGTH)).orElse(null);
            // Reckoned pessimistically from the size; a request reckoned past the whole budget runs alone.
            int wanted = (int) Math.min(kib(footprint(read.bytes().length, headerLength != null, false)),
                    kib(limits.maxBufferedBytes()));
            if (wanted > heldKib) {
                if (!bufferedKib.tryAcquire(wanted - heldKib)) {
                    return error(res, Status.SERVICE_UNAVAILABLE_503, busy().message());
                }
                heldKib = wanted;
            }
            long readAt = System.nanoTime();
            KServeProtocol.Request request = protocol.parse(read.bytes(), headerLength);
            long parsedAt = System.nanoTime();
            // Now that the rows are known, hold what this request needs, no more.
            long exact = read.bytes().length + footprintOfRows(request.rows(), request.binaryOutput());
            if (exact > limits.maxBufferedBytes()) {
                return error(res, Status.REQUEST_ENTITY_TOO_LARGE_413, "the request would hold " + exact
                        + " bytes until answered, over the server's limit of " + limits.maxBufferedBytes()
                        + " (--max-buffered-bytes)");
            }
            int needed = (int) Math.min(heldKib, kib(exact));
            bufferedKib.release(heldKib - needed);
            heldKib = needed;
            if (!backendReady()) {
                return error(res, Status.SERVICE_UNAVAILABLE_503, draining ? "the server is shutting down"
                        : "the model is not ready");
            }
            KServeProtocol.Response response = protocol.response(request);
            answer(request, response.output());
            long answeredAt = System.nanoTime();
            if (response.headerLength() < 0) {
                send(res, Status.OK_200, response.body());
            } else {
                res.header(KServeProtocol.HEADER_LENGTH, Integer.toString(response.headerLength()));
                res.header(HeaderNames.CONTENT_TYPE, "application/octet-stream");
                sendWithin(res, Status.OK_200, response.body());
            }
            if (event.shouldCommit()) {
                event.readNanos = readAt - startedAt;
                event.parseNanos = parsedAt - readAt;
                event.engineNanos = answeredAt - parsedAt;
                event.writeNanos = System.nanoTime() - answeredAt;
                event.bodyBytes = read.bytes().length;
                event.binary = response.headerLength() >= 0;
                event.commit();
            }
            return 200;
        } catch (KServeProtocol.ProtocolException e) {
            return error(res, Status.create(e.status), e.getMessage());
        } catch (Unavailable e) {
            return error(res, Status.SERVICE_UNAVAILABLE_503, e.getMessage());
        } catch (VirtualMachineError e) {
            broke(e);
            return error(res, Status.SERVICE_UNAVAILABLE_503, "the server is unhealthy: " + e);
        } finally {
            bufferedKib.release(heldKib);
            if (admitted) {
                inFlight.release();
            }
        }
    }

    /**
     * The most memory a request of {@code bodyBytes} can hold until its answer is written, reckoned
     * from its size alone: the body; its values (at least 2 bytes each in JSON, the element's size in
     * binary data), parsed as floats and copied once for the backend; and per output value the
     * backend's answer, the output buffer and the encoded answer (JSON unless told otherwise).
     */
    long footprint(long bodyBytes, boolean binaryInput, boolean binaryOutput) {
        long values = Math.min(limits.maxElements(), binaryInput ? bodyBytes / backend.elementType().byteSize()
                : bodyBytes / 2 + 1);
        long rows = Math.min(limits.maxRows(), (values + backend.inputWidth() - 1) / backend.inputWidth());
        return bodyBytes + footprintOfRows(rows, binaryOutput);
    }

    /** What {@code rows} rows hold beyond the body: see {@link #footprint}. */
    private long footprintOfRows(long rows, boolean binaryOutput) {
        long inputs = rows * backend.inputWidth();
        long outputs = rows * backend.outputWidth();
        return inputs * Float.BYTES * 2
                + outputs * (Float.BYTES * 2 + (binaryOutput ? backend.elementType().byteSize() : JSON_ANSWER_BYTES));
    }

    private void generate(ServerRequest req, ServerResponse res, boolean streaming) {
        long arrived = System.nanoTime();
        String name = known(req, res);
        if (name == null) {
            return;
        }
        if (!generative(name)) {
            refuse(req, res, Status.BAD_REQUEST_400, "model \"" + name + "\" does not generate text; it takes POST "
                    + "/v2/models/" + name + "/infer");
            return;
        }
        running.incrementAndGet();
        int status;
        try {
            status = generateCounted(req, res, streaming);
        } finally {
            running.decrementAndGet();
        }
        metrics.request(name, status, System.nanoTime() - arrived);
    }

    /** Serves a generate request that has passed the path checks, within the inference limits. */
    private int generateCounted(ServerRequest req, ServerResponse res, boolean streaming) {
        if (draining) {
            return refuse(req, res, Status.SERVICE_UNAVAILABLE_503, "the server is shutting down");
        }
        int heldKib = 0;
        boolean admitted = false;
        try {
            Body read = readBody(req);
            heldKib = read.heldKib();
            if (read.refusal() != null) {
                return refuse(req, res, read.refusal().status(), read.refusal().message());
            }
            Refusal refused = admit();
            if (refused != null) {
                return error(res, refused.status(), refused.message());
            }
            admitted = true;
            GenerateProtocol.Request request = GenerateProtocol.parse(read.bytes(), streaming);
            bufferedKib.release(heldKib);
            heldKib = 0;
            if (!generatorReady()) {
                return error(res, Status.SERVICE_UNAVAILABLE_503, draining ? "the server is shutting down"
                        : "the model is not ready");
            }
            return streaming ? stream(res, request) : complete(res, request);
        } catch (KServeProtocol.ProtocolException e) {
            return error(res, Status.create(e.status), e.getMessage());
        } catch (VirtualMachineError e) {
            broke(e);
            return error(res, Status.SERVICE_UNAVAILABLE_503, "the server is unhealthy: " + e);
        } finally {
            bufferedKib.release(heldKib);
            if (admitted) {
                inFlight.release();
            }
        }
    }

    /** What a generation's text pieces, its end or its failure put on the queue its request's thread reads. */
    private record Failure(Throwable cause) {}

    /** Starts {@code request} on the generator, each piece of text going to {@code pieces}. */
    private TextGenerator.Generation start(GenerateProtocol.Request request,
            Consumer<String> pieces) throws Unavailable {
        try {
            return generator.generate(request.textInput(), request.parameters(), pieces);
        } catch (RejectedExecutionException e) {
            throw new Unavailable(String.valueOf(e.getMessage()));
        }
    }

    /** {@code generate}: waits for the whole text, within the request timeout. */
    private int complete(ServerResponse res, GenerateProtocol.Request request) {
        StringBuffer text = new StringBuffer(); // appended on the generator's thread
        TextGenerator.Generation generation;
        try {
            generation = start(request, text::append);
        } catch (IllegalArgumentException e) {
            return error(res, Status.BAD_REQUEST_400, e.getMessage());
        } catch (Unavailable e) {
            return error(res, Status.SERVICE_UNAVAILABLE_503, e.getMessage());
        }
        TextGenerator.Completion done;
        try {
            done = generation.completion().get(limits.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            generation.cancel();
            return error(res, Status.SERVICE_UNAVAILABLE_503, "no answer within " + limits.requestTimeout()
                    + " (--request-timeout)");
        } catch (ExecutionException | CancellationException e) {
            return error(res, Status.SERVICE_UNAVAILABLE_503, failure(e));
        } catch (InterruptedException e) {
            generation.cancel();
            Thread.currentThread().interrupt();
            return error(res, Status.SERVICE_UNAVAILABLE_503, "interrupted");
        }
        return send(res, Status.OK_200, GenerateProtocol.response(generator.name(), text.toString(), done));
    }

    /**
     * {@code generate_stream}: an event per piece of text as it comes, written here from a queue the
     * generator's thread fills (its thread must never wait on a socket). A failure before the first
     * piece is still an ordinary error answer; after it, an error event ends the stream. The request
     * timeout bounds the wait for each event, not the whole stream.
     */
    private int stream(ServerResponse res, GenerateProtocol.Request request) {
        BlockingQueue<Object> events = new LinkedBlockingQueue<>();
        TextGenerator.Generation generation;
        try {
            generation = start(request, events::add);
        } catch (IllegalArgumentException e) {
            return error(res, Status.BAD_REQUEST_400, e.getMessage());
        } catch (Unavailable e) {
            return error(res, Status.SERVICE_UNAVAILABLE_503, e.getMessage());
        }
        generation.completion().whenComplete((done, failure) -> events.add(done != null ? done : new Failure(failure)));
        String model = generator.name();
        try {
            Object event = next(events, generation);
            if (event instanceof Failure failure) {
                return error(res, Status.SERVICE_UNAVAILABLE_503, failure(failure.cause()));
            }
            res.header(HeaderNames.CONTENT_TYPE, "text/event-stream");
            res.header(HeaderNames.CACHE_CONTROL, "no-cache");
            res.status(Status.OK_200);
            // Each event's write is bounded by the write timeout: a client that stops reading loses
            // its connection, which cancels the generation.
            Watch watch = watch(limits.writeTimeout());
            try (OutputStream out = res.outputStream()) {
                while (true) {
                    switch (event) {
                        case String piece -> out.write(GenerateProtocol.event(model, piece));
                        case TextGenerator.Completion done -> {
                            out.write(GenerateProtocol.lastEvent(model, done));
                            return 200;
                        }
                        case Failure failure -> {
                            out.write(GenerateProtocol.errorEvent(failure(failure.cause())));
                            return 200;
                        }
                        default -> throw new AssertionError("not an event: " + event);
                    }
                    out.flush();
                    watch.close();
                    event = next(events, generation);
                    watch = watch(limits.writeTimeout());
                }
            } finally {
                watch.close();
            }
        } catch (IOException | RuntimeException e) {
            // The client went away (Helidon's socket writes fail unchecked): the finally below frees
            // what the generation holds; the 200 has been sent.
            return 200;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 200;
        } finally {
            generation.cancel();
        }
    }

    /** The next event, or a failure once the request timeout passes without one (which cancels). */
    private Object next(BlockingQueue<Object> events, TextGenerator.Generation generation) throws InterruptedException {
        Object event = events.poll(limits.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
        if (event == null) {
            generation.cancel();
            return new Failure(new TimeoutException("no text within " + limits.requestTimeout()
                    + " (--request-timeout)"));
        }
        return event;
    }

    /** Why a generation failed, in words: a cancellation is the model stopping. */
    private static String failure(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof ExecutionException || cause instanceof CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof CancellationException) {
            return "the generation was cancelled: " + (cause.getMessage() == null ? "the model stopped"
                    : cause.getMessage());
        }
        return String.valueOf(cause.getMessage());
    }

    /** A refusal of a request body: its status and message. */
    private record Refusal(Status status, String message) {}

    /** A body as read: its bytes or why it was refused, and the budget it holds (to give back). */
    private record Body(byte[] bytes, Refusal refusal, int heldKib) {}

    /** Reads the body, refused at once when its declared length is over {@code --max-body-bytes}. */
    private Body readBody(ServerRequest req) {
        long declared = req.headers().contentLength().orElse(-1);
        if (declared > limits.maxBodyBytes()) {
            return new Body(null, new Refusal(Status.REQUEST_ENTITY_TOO_LARGE_413, "the request body of " + declared
                    + " bytes is over the limit of " + limits.maxBodyBytes() + " (--max-body-bytes)"), 0);
        }
        return readBody(req, declared);
    }

    /**
     * Reads the body within {@link ServerLimits#readTimeout()}, into a buffer that grows as its bytes
     * arrive (never sized from the declared length), each growth counted against the memory budget.
     */
    private Body readBody(ServerRequest req, long declared) {
        long most = declared >= 0 ? declared : limits.maxBodyBytes() + 1;
        int first = (int) Math.min(most, FIRST_BUFFER);
        int held = (int) kib(first);
        if (!bufferedKib.tryAcquire(held)) {
            return new Body(null, busy(), 0);
        }
        // A read that blocks past the deadline is ended by interrupting this (virtual) thread, which
        // closes the connection: a client that stops sending holds nothing of the server's past it.
        ReadDeadline deadline = new ReadDeadline(Thread.currentThread());
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(deadline::expire, limits.readTimeout().toNanos(),
                TimeUnit.NANOSECONDS);
        byte[] buffer = new byte[first];
        int size = 0;
        try (InputStream in = req.content().inputStream()) {
            while (declared < 0 || size < declared) {
                if (size == buffer.length) {
                    if (size > limits.maxBodyBytes()) {
                        return new Body(null, new Refusal(Status.REQUEST_ENTITY_TOO_LARGE_413, "the request body is "
                                + "over the limit of " + limits.maxBodyBytes() + " bytes (--max-body-bytes)"), held);
                    }
                    int grown = (int) Math.min(2L * size, most);
                    int more = (int) kib(grown) - held;
                    if (more > 0) {
                        if (!bufferedKib.tryAcquire(more)) {
                            return new Body(null, busy(), held);
                        }
                        held += more;
                    }
                    buffer = Arrays.copyOf(buffer, grown);
                }
                int n = in.read(buffer, size, buffer.length - size);
                if (n < 0) {
                    break;
                }
                size += n;
            }
        } catch (IOException | RuntimeException e) {
            // A read cut off by the watchdog, a client gone, or Helidon's refusal of the entity (a
            // malformed chunk, a body past the connection's end).
            Throwable cause = e instanceof UncheckedIOException u ? u.getCause() : e;
            return new Body(null, deadline.expired()
                    ? new Refusal(Status.REQUEST_TIMEOUT_408, "the request body did not arrive within "
                            + limits.readTimeout() + " (--read-timeout)")
                    : new Refusal(Status.BAD_REQUEST_400, "cannot read the request body: " + cause.getMessage()), held);
        } finally {
            watchdog.cancel(false);
            deadline.finish();
        }
        return new Body(size == buffer.length ? buffer : Arrays.copyOf(buffer, size), null, held);
    }

    /** A deadline on this thread's blocking read or write; closing it ends it, at most once. */
    private record Watch(ReadDeadline deadline, ScheduledFuture<?> watchdog) {
        void close() {
            watchdog.cancel(false);
            deadline.finish();
        }
    }

    private static Watch watch(Duration timeout) {
        ReadDeadline deadline = new ReadDeadline(Thread.currentThread());
        return new Watch(deadline, WATCHDOG.schedule(deadline::expire, timeout.toNanos(), TimeUnit.NANOSECONDS));
    }

    /** Interrupts a body's reader (or an answer's writer) once, unless it has finished first. */
    private static final class ReadDeadline {
        private final Thread reader;
        private boolean finished;
        private boolean expired;

        ReadDeadline(Thread reader) {
            this.reader = reader;
        }

        synchronized void expire() {
            if (!finished) {
                expired = true;
                reader.interrupt();
            }
        }

        synchronized boolean expired() {
            return expired;
        }

        /** Called by the reader: no interrupt comes after this, and one that came is cleared. */
        synchronized void finish() {
            finished = true;
            if (expired) {
                Thread.interrupted();
            }
        }
    }

    private Refusal busy() {
        return new Refusal(Status.SERVICE_UNAVAILABLE_503, "the server holds its limit of "
                + limits.maxBufferedBytes() + " bytes for requests in flight (--max-buffered-bytes); try again later");
    }

    /** A backend that cannot answer now: saturated, unhealthy, closing or too slow. */
    private static final class Unavailable extends Exception {
        private static final long serialVersionUID = 1L;

        Unavailable(String message) {
            super(message, null, false, false);
        }
    }

    /** Waits for the backend to write the answer to {@code request} into {@code output}. */
    private void answer(KServeProtocol.Request request, MemorySegment output) throws Unavailable {
        CompletableFuture<MemorySegment> future;
        try {
            future = backend.infer(request.data(), output);
        } catch (RuntimeException e) {
            throw new Unavailable("the model cannot take the request: " + e.getMessage());
        }
        try {
            future.get(limits.requestTimeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            future.cancel(false); // its rows leave the engine's queue
            throw new Unavailable("no answer within " + limits.requestTimeout() + " (--request-timeout)");
        } catch (ExecutionException e) {
            // Saturated (a full queue), unhealthy, timed out in the engine, closed, or its batch failed.
            if (e.getCause() instanceof VirtualMachineError error) {
                broke(error);
                throw new Unavailable("the server is unhealthy: " + error);
            }
            throw new Unavailable(String.valueOf(e.getCause().getMessage()));
        } catch (CancellationException e) {
            throw new Unavailable("the request was cancelled");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Unavailable("interrupted");
        }
    }

    /** The last resort for an exception no handler expected: still JSON, and logged with its trace. */
    void unexpected(ServerRequest req, ServerResponse res, Throwable failure) {
        if (failure instanceof VirtualMachineError error) {
            broke(error);
        }
        System.getLogger(InferenceService.class.getName()).log(System.Logger.Level.ERROR,
                "unexpected failure serving " + req.path().rawPath(), failure);
        error(res, Status.INTERNAL_SERVER_ERROR_500, "internal error: " + failure);
    }

    private static long kib(long bytes) {
        return (bytes + 1023) >> 10;
    }

    private void json(ServerResponse res, Status status, String json) {
        send(res, status, json.getBytes(StandardCharsets.UTF_8));
    }

    private int error(ServerResponse res, Status status, String message) {
        return send(res, status, KServeProtocol.error(message));
    }

    /**
     * An error answered before the request's body was read. The rest of the body, up to
     * {@link #DRAIN_BYTES} and within the read timeout, is read and dropped first: closing a
     * connection with request bytes unread resets it, and the reset can discard the answer before
     * the client reads it. A body past that bound closes the connection after the answer.
     */
    private int refuse(ServerRequest req, ServerResponse res, Status status, String message) {
        if (!req.content().consumed() && !drain(req)) {
            res.header(HeaderNames.CONNECTION, "close");
        }
        return error(res, status, message);
    }

    /** Reads and drops what is left of the body; whether all of it was read. */
    private boolean drain(ServerRequest req) {
        long declared = req.headers().contentLength().orElse(-1);
        if (declared < 0 || declared > DRAIN_BYTES) {
            return false;
        }
        ReadDeadline deadline = new ReadDeadline(Thread.currentThread());
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(deadline::expire, limits.readTimeout().toNanos(),
                TimeUnit.NANOSECONDS);
        try (InputStream in = req.content().inputStream()) {
            byte[] sink = new byte[READ_CHUNK];
            while (in.read(sink) >= 0) {
                // dropped
            }
            return true;
        } catch (IOException | RuntimeException e) {
            return false;
        } finally {
            watchdog.cancel(false);
            deadline.finish();
        }
    }

    private int send(ServerResponse res, Status status, byte[] body) {
        res.header(HeaderNames.CONTENT_TYPE, JSON_TYPE);
        return sendWithin(res, status, body);
    }

    /**
     * Sends the answer within {@link ServerLimits#writeTimeout()}: a client that does not read it in
     * time has its connection closed (the blocked write is ended by interrupting this virtual
     * thread), so that it holds neither its in-flight slot nor its answer's memory past that.
     */
    private int sendWithin(ServerResponse res, Status status, byte[] body) {
        ReadDeadline deadline = new ReadDeadline(Thread.currentThread());
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(deadline::expire, limits.writeTimeout().toNanos(),
                TimeUnit.NANOSECONDS);
        try {
            res.status(status).send(body);
        } catch (RuntimeException e) {
            if (deadline.expired()) {
                throw new CloseConnectionException("the client did not read its answer within "
                        + limits.writeTimeout() + " (--write-timeout)", e);
            }
            throw e;
        } finally {
            watchdog.cancel(false);
            deadline.finish();
        }
        return status.code();
    }
}
