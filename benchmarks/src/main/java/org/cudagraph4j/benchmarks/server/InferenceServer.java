package org.cudagraph4j.benchmarks.server;

import io.helidon.http.HeaderValues;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http1.Http1Config;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;
import java.io.PrintWriter;
import java.time.Duration;

/**
 * A Helidon SE web server (one virtual thread per request) that serves one model over the HTTP/REST
 * side of the Open Inference Protocol (KServe v2), through {@link InferenceService}, a generative
 * model through the protocol's generate extension, or one of each; its command line is
 * {@link ServerCommand}. HTTP/1.0 requests are answered in HTTP/1.0 and chunked bodies are framed
 * strictly, by {@link Http1Framing} in front of Helidon's HTTP/1.1, which also closes a connection
 * whose request head does not arrive within {@link ServerLimits#headerTimeout()}.
 *
 * <p>Stopping is graceful ({@link #shutdown()}, also on {@code SIGTERM} from the command line):
 * readiness turns false and new inference requests are answered {@code 503}, requests in flight
 * finish within {@link ServerLimits#shutdownTimeout()}, then the backend and the generator are
 * closed (which fails what they still hold, answered {@code 503} or, mid-stream, an error event),
 * and the listener stops.
 *
 * <p>Thread safety: {@link #shutdown()} and {@link #close()} may be called from any thread, once or
 * more; the first stops the server and the others return at once.
 */
public final class InferenceServer implements AutoCloseable {
    private static final Duration LAST_ANSWERS = Duration.ofSeconds(2);

    private final InferenceBackend backend;
    private final TextGenerator generator;
    private final InferenceService service;
    private final ServerLimits limits;
    private final WebServer server;
    private boolean stopped;

    /**
     * Starts serving {@code backend} as model {@code modelName}.
     *
     * @param modelName the model's name in the URLs
     * @param backend what runs the model; the server closes it
     * @param host the address to listen on ({@code 0.0.0.0} for every interface)
     * @param port the TCP port, or 0 for any free one
     * @param limits what the server takes from clients
     */
    public InferenceServer(String modelName, InferenceBackend backend, String host, int port, ServerLimits limits) {
        this(modelName, backend, null, host, port, limits);
    }

    /**
     * Starts serving {@code backend} as model {@code modelName}, {@code generator} as its own model,
     * or both.
     *
     * @param modelName the backend's model's name in the URLs; null with no backend
     * @param backend what runs the model, or null for a server of the generator only; the server closes it
     * @param generator the generative model, or null; the server closes it
     * @param host the address to listen on ({@code 0.0.0.0} for every interface)
     * @param port the TCP port, or 0 for any free one
     * @param limits what the server takes from clients
     * @throws IllegalArgumentException if there is neither a backend nor a generator, or both have one name
     */
    public InferenceServer(String modelName, InferenceBackend backend, TextGenerator generator, String host, int port,
            ServerLimits limits) {
        this.backend = backend;
        this.generator = generator;
        this.limits = limits;
        this.service = new InferenceService(modelName, backend, generator, limits);
        this.server = WebServer.builder()
                .host(host)
                .port(port)
                .shutdownHook(false) // the command line stops it, draining first
                // Helidon's HTTP/1.1, behind the framing that serves HTTP/1.0 and checks chunked bodies.
                .protocolsDiscoverServices(false)
                .addConnectionSelector(new Http1Framing(Http1Config.create(), limits.headerTimeout()))
                .useNio(false).idleConnectionTimeout(limits.readTimeout())
                .idleConnectionPeriod(limits.readTimeout().dividedBy(4))
                // Without TCP_NODELAY (Helidon's default leaves Nagle on), a large binary answer's last
                // segment waited for the client's delayed ACK: on an H200 on 2026-11-29 the 1-64 row
                // binary mix had a p50 of 42 ms at 800 requests/s and more. aiohttp sets it by default.
                .connectionOptions(options -> options.tcpNoDelay(true))
                // A client that never finishes its headers costs a connection (a virtual thread and a
                // socket) until the header timeout closes it (Http1Framing), never engine resources.
                .maxTcpConnections(limits.maxConnections())
                .directHandlers(MalformedHttp.handlers())
                .routing(routing -> routing.addFilter(InferenceServer::closeWhenAnswerSaysSo).register(service)
                        .error(Throwable.class, service::unexpected))
                .build()
                .start();
    }

    /**
     * Starts serving on loopback.
     *
     * @param modelName the model's name in the URLs
     * @param backend what runs the model; the server closes it
     * @param port the TCP port, or 0 for any free one
     * @param limits what the server takes from clients
     */
    public InferenceServer(String modelName, InferenceBackend backend, int port, ServerLimits limits) {
        this(modelName, backend, "127.0.0.1", port, limits);
    }

    /**
     * Starts serving {@code generator} alone on loopback.
     *
     * @param generator the generative model; the server closes it
     * @param port the TCP port, or 0 for any free one
     * @param limits what the server takes from clients
     */
    public InferenceServer(TextGenerator generator, int port, ServerLimits limits) {
        this(null, null, generator, "127.0.0.1", port, limits);
    }

    /**
     * Closes the connection after an answer that says {@code Connection: close}. Helidon 4.5 writes
     * the header but reads on, so the bytes after a body it could not frame (a bad chunk) would be
     * read as a request of their own.
     */
    private static void closeWhenAnswerSaysSo(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        chain.proceed();
        if (res.isSent() && res.headers().contains(HeaderValues.CONNECTION_CLOSE)) {
            throw new CloseConnectionException("the answer closes the connection");
        }
    }

    /** The memory budget's bytes that requests hold now ({@code --max-buffered-bytes}), to the KiB. */
    long heldBytes() {
        return service.heldBytes();
    }

    /** The port the server listens on. */
    public int port() {
        return server.port();
    }

    /**
     * Stops gracefully, as the class describes; returns once the listener has stopped.
     *
     * @return whether every request in flight finished within {@link ServerLimits#shutdownTimeout()}
     */
    public synchronized boolean shutdown() {
        if (stopped) {
            return true;
        }
        stopped = true;
        service.drain();
        boolean drained = false;
        try {
            drained = service.awaitIdle(limits.shutdownTimeout());
            closeModels();
            service.awaitIdle(LAST_ANSWERS); // the 503s of what the backend failed on closing
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeModels();
        } finally {
            server.stop();
        }
        return drained;
    }

    private void closeModels() {
        try {
            if (backend != null) {
                backend.close();
            }
        } finally {
            if (generator != null) {
                generator.close();
            }
        }
    }

    /**
     * Runs the command line ({@link ServerCommand}) and exits with its status.
     *
     * @param args the options; {@code --help} lists them
     */
    public static void main(String[] args) {
        System.exit(ServerCommand.run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /** Stops the server, as {@link #shutdown()} does. */
    @Override
    public void close() {
        shutdown();
    }
}
