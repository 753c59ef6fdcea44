package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
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
 * <p>Thread safety: handlers run concurrently, one virtual thread per request.
 */
final class InferenceService implements HttpService {
    private static final String JSON_TYPE = "application/json";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int READ_CHUNK = 64 << 10;
    /** The most of a refused request's body read and dropped to keep its answer deliverable. */
    private static final long DRAIN_BYTES = 64L << 20;
    private static final ScheduledExecutorService WATCHDOG = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("inference-read-watchdog").daemon().factory());

    private final String modelName;
    private final InferenceBackend backend;
    private final KServeProtocol protocol;
    private final ServerLimits limits;
    private final ServerMetrics metrics;
    private final Semaphore inFlight;
    /** Request-body bytes held now, in KiB (a semaphore's permits are ints). */
    private final Semaphore bufferedKib;
    private final AtomicInteger running = new AtomicInteger();
    private volatile boolean draining;

    InferenceService(String modelName, InferenceBackend backend, ServerLimits limits) {
        this.modelName = modelName;
        this.backend = backend;
        this.limits = limits;
        this.protocol = new KServeProtocol(modelName, backend.elementType(), backend.inputWidth(),
                backend.outputWidth(), limits);
        this.metrics = new ServerMetrics(modelName, backend::metrics, this::ready);
        this.inFlight = new Semaphore(limits.maxInFlight());
        this.bufferedKib = new Semaphore((int) Math.min(Integer.MAX_VALUE, kib(limits.maxBufferedBytes())));
    }

    @Override
    public void routing(HttpRules rules) {
        String model = "/v2/models/{name}";
        String versioned = model + "/versions/{version}";
        rules.get("/v2", (req, res) -> send(res, Status.OK_200,
                        KServeProtocol.serverMetadata("cudagraph4j", Cuda.libraryVersion())))
                .get("/v2/health/live", (req, res) -> json(res, Status.OK_200, "{\"live\":true}"))
                .get("/v2/health/ready", (req, res) -> {
                    boolean ready = ready();
                    json(res, ready ? Status.OK_200 : Status.SERVICE_UNAVAILABLE_503, "{\"ready\":" + ready + "}");
                })
                .get("/metrics", this::prometheus);
        for (String base : new String[] {model, versioned}) {
            rules.get(base, this::metadata)
                    .get(base + "/ready", this::modelReady)
                    .get(base + "/metrics", this::engineMetrics)
                    .post(base + "/infer", this::infer);
        }
        for (String path : new String[] {"/v2", "/v2/health/live", "/v2/health/ready", "/metrics", model,
            model + "/ready", model + "/metrics", versioned, versioned + "/ready", versioned + "/metrics"}) {
            rules.any(path, (req, res) -> notAllowed(req, res, "GET"));
        }
        rules.any(model + "/infer", (req, res) -> notAllowed(req, res, "POST"))
                .any(versioned + "/infer", (req, res) -> notAllowed(req, res, "POST"))
                .any((req, res) -> refuse(req, res, Status.NOT_FOUND_404, "no such endpoint: " + req.prologue().method()
                        .text() + " " + req.path().rawPath()));
    }

    /** Whether inference requests are taken: the backend is healthy and the server is not stopping. */
    boolean ready() {
        return !draining && backend.ready();
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
        res.status(Status.OK_200).send(metrics.scrape());
    }

    private void notAllowed(ServerRequest req, ServerResponse res, String allowed) {
        res.header(HeaderNames.ALLOW, allowed);
        refuse(req, res, Status.METHOD_NOT_ALLOWED_405, req.prologue().method().text() + " is not allowed on "
                + req.path().rawPath() + "; it takes " + allowed);
    }

    /** Whether the path names this model (and its one version); if not, the 404 is sent. */
    private boolean known(ServerRequest req, ServerResponse res) {
        String name = req.path().pathParameters().get("name");
        if (!modelName.equals(name)) {
            refuse(req, res, Status.NOT_FOUND_404, "unknown model \"" + name + "\"; this server serves \"" + modelName
                    + "\"");
            return false;
        }
        Optional<String> version = req.path().pathParameters().first("version").asOptional();
        if (version.isPresent() && !version.get().equals(KServeProtocol.VERSION)) {
            refuse(req, res, Status.NOT_FOUND_404, "model \"" + modelName + "\" has no version \"" + version.get()
                    + "\"; its only version is \"" + KServeProtocol.VERSION + "\"");
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
            boolean ready = ready();
            send(res, ready ? Status.OK_200 : Status.SERVICE_UNAVAILABLE_503, protocol.modelReady(ready));
        }
    }

    private void engineMetrics(ServerRequest req, ServerResponse res) throws JsonProcessingException {
        if (!known(req, res)) {
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
        if (!known(req, res)) {
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

    /** Serves an inference request that has passed the path checks; the status it was answered with. */
    private int inferCounted(ServerRequest req, ServerResponse res) {
        if (draining) {
            return refuse(req, res, Status.SERVICE_UNAVAILABLE_503, "the server is shutting down");
        }
        if (!inFlight.tryAcquire()) {
            return refuse(req, res, Status.SERVICE_UNAVAILABLE_503, "the server has " + limits.maxInFlight()
                    + " inference requests in flight, its limit (--max-in-flight); try again later");
        }
        int heldKib = 0;
        ServerEvents.Infer event = new ServerEvents.Infer();
        event.begin();
        long startedAt = System.nanoTime();
        try {
            long declared = req.headers().contentLength().orElse(-1);
            if (declared > limits.maxBodyBytes()) {
                return refuse(req, res, Status.REQUEST_ENTITY_TOO_LARGE_413, "the request body of " + declared
                        + " bytes is over the limit of " + limits.maxBodyBytes() + " (--max-body-bytes)");
            }
            Body read = readBody(req, declared);
            heldKib = read.heldKib();
            if (read.refusal() != null) {
                return refuse(req, res, read.refusal().status(), read.refusal().message());
            }
            long readAt = System.nanoTime();
            KServeProtocol.Request request = protocol.parse(read.bytes(),
                    req.headers().first(HeaderNames.create(KServeProtocol.HEADER_LENGTH)).orElse(null));
            long parsedAt = System.nanoTime();
            // The budget bounds bodies being read; while a request waits, --max-in-flight bounds what it
            // holds (its rows, which for binary data are its body's bytes, and its response's).
            bufferedKib.release(heldKib);
            heldKib = 0;
            if (!ready()) {
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
                res.status(Status.OK_200).send(response.body());
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
        } finally {
            bufferedKib.release(heldKib);
            inFlight.release();
        }
    }

    /** A refusal of a request body: its status and message. */
    private record Refusal(Status status, String message) {}

    /** A body as read: its bytes or why it was refused, and the budget it holds (to give back). */
    private record Body(byte[] bytes, Refusal refusal, int heldKib) {}

    /**
     * Reads the body within {@link ServerLimits#readTimeout()}, counting its bytes against the
     * buffered-bytes budget as they arrive (or all at once when the length is declared).
     */
    private Body readBody(ServerRequest req, long declared) {
        int held = 0;
        if (declared >= 0) {
            held = (int) kib(declared);
            if (!bufferedKib.tryAcquire(held)) {
                return new Body(null, busy(), 0);
            }
        }
        // A read that blocks past the deadline is ended by interrupting this (virtual) thread, which
        // closes the connection: a client that stops sending holds nothing of the server's past it.
        ReadDeadline deadline = new ReadDeadline(Thread.currentThread());
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(deadline::expire, limits.readTimeout().toNanos(),
                TimeUnit.NANOSECONDS);
        byte[] buffer = new byte[(int) Math.min(declared >= 0 ? declared : READ_CHUNK, limits.maxBodyBytes() + 1)];
        int size = 0;
        try (InputStream in = req.content().inputStream()) {
            while (declared < 0 || size < declared) {
                if (size == buffer.length) {
                    if (size > limits.maxBodyBytes()) {
                        return new Body(null, new Refusal(Status.REQUEST_ENTITY_TOO_LARGE_413, "the request body is "
                                + "over the limit of " + limits.maxBodyBytes() + " bytes (--max-body-bytes)"), held);
                    }
                    int grown = (int) Math.min(Math.max(2L * size, READ_CHUNK), limits.maxBodyBytes() + 1);
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

    /** Interrupts a body's reader once, unless it has finished first. */
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
                + limits.maxBufferedBytes() + " bytes of request bodies (--max-buffered-bytes); try again later");
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
        System.getLogger(InferenceService.class.getName()).log(System.Logger.Level.ERROR,
                "unexpected failure serving " + req.path().rawPath(), failure);
        error(res, Status.INTERNAL_SERVER_ERROR_500, "internal error: " + failure);
    }

    private static long kib(long bytes) {
        return (bytes + 1023) >> 10;
    }

    private static void json(ServerResponse res, Status status, String json) {
        send(res, status, json.getBytes(StandardCharsets.UTF_8));
    }

    private static int error(ServerResponse res, Status status, String message) {
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

    private static int send(ServerResponse res, Status status, byte[] body) {
        res.header(HeaderNames.CONTENT_TYPE, JSON_TYPE);
        res.status(status).send(body);
        return status.code();
    }
}
