package org.cudagraph4j.benchmarks.server;

import io.helidon.common.buffers.BufferData;
import io.helidon.common.buffers.Bytes;
import io.helidon.common.buffers.DataReader;
import io.helidon.common.buffers.DataWriter;
import io.helidon.common.socket.PeerInfo;
import io.helidon.http.DirectHandler.EventType;
import io.helidon.http.RequestException;
import io.helidon.http.Status;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.ListenerContext;
import io.helidon.webserver.ProxyProtocolData;
import io.helidon.webserver.Router;
import io.helidon.webserver.http1.Http1Config;
import io.helidon.webserver.http1.Http1ConnectionSelector;
import io.helidon.webserver.spi.ServerConnection;
import io.helidon.webserver.spi.ServerConnectionSelector;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Helidon's HTTP/1.1 connections, with what they lack for this server in front of them:
 *
 * <ul>
 *   <li>HTTP/1.0 requests are served (Helidon 4.5 refuses them): each is handed to Helidon as
 *       HTTP/1.1 (with a {@code Host} header if it had none, and {@code Connection: close} unless it
 *       asked for {@code keep-alive}), and its answer's status line says {@code HTTP/1.0}.
 *   <li>Chunked request bodies are framed strictly: chunk data must be followed by CRLF (Helidon
 *       skips any two bytes there). A body framed otherwise fails as it is read, which the server
 *       answers {@code 400} with {@code Connection: close}, closing the connection.
 *   <li>A request head must arrive whole within the header timeout, counted from when the connection
 *       starts waiting for it (when it opens, or when Helidon, done with the previous request, reads
 *       on); past it the connection is closed. Helidon 4.5 does not time out a stalled read of a
 *       request head, so without this a client that never ends its headers, or never sends any,
 *       would hold its connection forever.
 * </ul>
 *
 * <p>The request bytes are followed as they pass (request head, then a body of
 * {@code Content-Length} bytes or of chunks), so that each request's head is found; a head or a
 * chunk-size line this does not understand is passed on as it is, and from there on the connection's
 * bytes are, for Helidon to refuse.
 */
final class Http1Framing implements ServerConnectionSelector {
    /** A request head larger than this is passed on unread; Helidon's own limits are smaller. */
    private static final int MAX_HEAD = 64 << 10;
    private static final int MAX_LINE = 4096;

    /** Closes connections whose head is late; a cancelled deadline leaves its queue at once. */
    private static final ScheduledThreadPoolExecutor DEADLINES = new ScheduledThreadPoolExecutor(1,
            Thread.ofPlatform().name("http1-header-deadline").daemon().factory());

    static {
        DEADLINES.setRemoveOnCancelPolicy(true);
    }

    private final Http1ConnectionSelector helidon;
    private final Duration headerTimeout;

    Http1Framing(Http1Config config, Duration headerTimeout) {
        this.helidon = Http1ConnectionSelector.builder().config(config).build();
        this.headerTimeout = headerTimeout;
    }

    @Override
    public int bytesToIdentifyConnection() {
        return helidon.bytesToIdentifyConnection();
    }

    @Override
    public Support supports(BufferData request) {
        int lf = request.indexOf(Bytes.LF_BYTE);
        if (lf == -1) {
            return helidon.supports(request);
        }
        String line = request.readString(lf);
        return line.endsWith(" HTTP/1.1\r") || line.endsWith(" HTTP/1.0\r") ? Support.SUPPORTED : Support.UNSUPPORTED;
    }

    @Override
    public Set<String> supportedApplicationProtocols() {
        return helidon.supportedApplicationProtocols();
    }

    @Override
    public ServerConnection connection(ConnectionContext ctx) {
        return helidon.connection(new Context(ctx, headerTimeout));
    }

    /** The connection's context, its reader and writer replaced by the framing ones. */
    private static final class Context implements ConnectionContext {
        private final ConnectionContext ctx;
        private final DataReader reader;
        private final DataWriter writer;

        Context(ConnectionContext ctx, Duration headerTimeout) {
            this.ctx = ctx;
            Queue<Boolean> answers = new ArrayDeque<>();
            Requests requests = new Requests(ctx.dataReader(), host(ctx.localPeer()), answers);
            requests.headDeadline(headerTimeout, () -> ctx.serverSocket().close());
            this.reader = new DataReader(requests::next);
            this.writer = new Answers(ctx.dataWriter(), answers);
        }

        private static String host(PeerInfo local) {
            SocketAddress address = local.address();
            if (address instanceof InetSocketAddress inet) {
                String name = inet.getHostString();
                return (name.indexOf(':') >= 0 ? "[" + name + "]" : name) + ":" + inet.getPort();
            }
            return "localhost";
        }

        @Override
        public ListenerContext listenerContext() {
            return ctx.listenerContext();
        }

        @Override
        public ExecutorService executor() {
            return ctx.executor();
        }

        @Override
        public DataWriter dataWriter() {
            return writer;
        }

        @Override
        public DataReader dataReader() {
            return reader;
        }

        @Override
        public Router router() {
            return ctx.router();
        }

        @Override
        public Optional<ProxyProtocolData> proxyProtocolData() {
            return ctx.proxyProtocolData();
        }

        @Override
        public io.helidon.common.socket.HelidonSocket serverSocket() {
            return ctx.serverSocket();
        }

        @Override
        public PeerInfo remotePeer() {
            return ctx.remotePeer();
        }

        @Override
        public PeerInfo localPeer() {
            return ctx.localPeer();
        }

        @Override
        public boolean isSecure() {
            return ctx.isSecure();
        }

        @Override
        public String socketId() {
            return ctx.socketId();
        }

        @Override
        public String childSocketId() {
            return ctx.childSocketId();
        }
    }

    /**
     * The request bytes as Helidon reads them: each request head rewritten where it is HTTP/1.0, and
     * each chunked body checked as it passes. Used by the connection's one reading thread.
     */
    static final class Requests {
        private enum State { HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, TRAILER, AS_IS }

        private final DataReader socket;
        private final String host;
        /** Per request head passed on, whether its answer is HTTP/1.0; read by the writer. */
        private final Queue<Boolean> answers;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();
        private State state = State.HEAD;
        private long remaining;
        private boolean failed;
        /** Request heads passed on so far. */
        private long heads;
        private Duration headerTimeout;
        private Runnable close;
        /** The pending close of a connection whose head is late, or null while no head is awaited. */
        private ScheduledFuture<?> headDeadline;

        Requests(DataReader socket, String host, Queue<Boolean> answers) {
            this.socket = socket;
            this.host = host;
            this.answers = answers;
        }

        /** From now on, a head that does not arrive whole within {@code timeout} runs {@code close}. */
        void headDeadline(Duration timeout, Runnable close) {
            this.headerTimeout = timeout;
            this.close = close;
        }

        /** The next bytes for Helidon; throws once the bytes so far are passed on and the framing failed. */
        byte[] next() {
            try {
                return nextBytes();
            } catch (RuntimeException | Error e) {
                cancelDeadline();
                throw e;
            }
        }

        private void cancelDeadline() {
            if (headDeadline != null) {
                headDeadline.cancel(false);
                headDeadline = null;
            }
        }

        private byte[] nextBytes() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            while (out.size() == 0) {
                if (failed) {
                    // A new one each time: Helidon may add one read's failure to another's as suppressed.
                    throw RequestException.builder()
                            .type(EventType.BAD_REQUEST)
                            .status(Status.BAD_REQUEST_400)
                            .setKeepAlive(false)
                            .message("chunk data is not followed by CRLF")
                            .build();
                }
                if (state == State.HEAD && headDeadline == null && close != null) {
                    // Helidon reads for a head only once it is done with the previous request.
                    headDeadline = DEADLINES.schedule(close, headerTimeout.toNanos(), TimeUnit.NANOSECONDS);
                }
                socket.ensureAvailable();
                byte[] in = socket.readBytes(socket.available());
                if (state == State.AS_IS) {
                    cancelDeadline(); // Helidon's to refuse
                    return in;
                }
                long before = heads;
                follow(in, out);
                if (heads != before || state != State.HEAD) {
                    cancelDeadline();
                }
            }
            return out.toByteArray();
        }

        /** Follows {@code in}, writing what Helidon is to read to {@code out}; exposed for tests. */
        void follow(byte[] in, ByteArrayOutputStream out) {
            for (int i = 0; i < in.length; i++) {
                byte b = in[i];
                switch (state) {
                    case AS_IS -> out.write(b);
                    case HEAD -> {
                        line.write(b);
                        if (b == '\n' && endsWithBlankLine()) {
                            head(out);
                        } else if (line.size() > MAX_HEAD) {
                            asIs(out);
                        }
                    }
                    case LENGTH -> {
                        int n = (int) Math.min(remaining, in.length - i);
                        out.write(in, i, n);
                        i += n - 1;
                        remaining -= n;
                        if (remaining == 0) {
                            state = State.HEAD;
                        }
                    }
                    case CHUNK_SIZE -> {
                        out.write(b);
                        line.write(b);
                        if (b == '\n') {
                            chunkSize();
                        } else if (line.size() > MAX_LINE) {
                            state = State.AS_IS;
                        }
                    }
                    case CHUNK_DATA -> {
                        int n = (int) Math.min(remaining, in.length - i);
                        out.write(in, i, n);
                        i += n - 1;
                        remaining -= n;
                        if (remaining == 0) {
                            state = State.CHUNK_END;
                        }
                    }
                    case CHUNK_END -> {
                        if (b != (remaining == 0 ? '\r' : '\n')) {
                            failed = true;
                            return;
                        }
                        out.write(b);
                        if (remaining == 0) {
                            remaining = 1;
                        } else {
                            state = State.CHUNK_SIZE;
                        }
                    }
                    case TRAILER -> {
                        out.write(b);
                        line.write(b);
                        if (b == '\n') {
                            String trailer = line.toString(StandardCharsets.ISO_8859_1);
                            line.reset();
                            if (trailer.equals("\r\n") || trailer.equals("\n")) {
                                state = State.HEAD;
                            }
                        } else if (line.size() > MAX_LINE) {
                            state = State.AS_IS;
                        }
                    }
                }
            }
        }

        private boolean endsWithBlankLine() {
            byte[] head = line.toByteArray();
            int n = head.length;
            // A request head ends with an empty line; the blank lines before a request line are skipped.
            if (n == 2 && head[0] == '\r' || n == 1) {
                return false;
            }
            return n >= 4 && head[n - 4] == '\r' && head[n - 3] == '\n' && head[n - 2] == '\r';
        }

        private void asIs(ByteArrayOutputStream out) {
            out.writeBytes(line.toByteArray());
            line.reset();
            state = State.AS_IS;
        }

        /** A whole head in {@link #line}: passes it on, rewritten if HTTP/1.0, and sets where its body ends. */
        private void head(ByteArrayOutputStream out) {
            String text = line.toString(StandardCharsets.ISO_8859_1);
            List<String> lines = new ArrayList<>(List.of(text.substring(0, text.length() - 4).split("\r\n", -1)));
            String requestLine = lines.getFirst();
            boolean http10 = requestLine.endsWith(" HTTP/1.0");
            boolean chunked = false;
            long length = 0;
            boolean hasHost = false;
            boolean keepAlive = false;
            for (String header : lines.subList(1, lines.size())) {
                int colon = header.indexOf(':');
                if (colon <= 0) {
                    asIs(out); // Helidon refuses it
                    return;
                }
                String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
                String value = header.substring(colon + 1).trim();
                switch (name) {
                    case "transfer-encoding" -> chunked |= value.toLowerCase(Locale.ROOT).contains("chunked");
                    case "content-length" -> {
                        try {
                            length = Long.parseLong(value);
                        } catch (NumberFormatException e) {
                            asIs(out);
                            return;
                        }
                    }
                    case "host" -> hasHost = true;
                    case "connection" -> keepAlive |= value.toLowerCase(Locale.ROOT).contains("keep-alive");
                    default -> { }
                }
            }
            line.reset();
            if (http10) {
                StringBuilder rewritten = new StringBuilder(requestLine.substring(0, requestLine.length() - 3)).append("1.1\r\n");
                for (String header : lines.subList(1, lines.size())) {
                    if (keepAlive || !header.regionMatches(true, 0, "connection:", 0, 11)) {
                        rewritten.append(header).append("\r\n");
                    }
                }
                if (!hasHost) {
                    rewritten.append("Host: ").append(host).append("\r\n");
                }
                if (!keepAlive) {
                    rewritten.append("Connection: close\r\n");
                }
                text = rewritten.append("\r\n").toString();
            }
            answers.add(http10);
            heads++;
            out.writeBytes(text.getBytes(StandardCharsets.ISO_8859_1));
            if (chunked) {
                state = State.CHUNK_SIZE;
            } else if (length > 0) {
                remaining = length;
                state = State.LENGTH;
            } else {
                state = State.HEAD;
            }
        }

        /** A chunk-size line in {@link #line}, already passed on. */
        private void chunkSize() {
            String text = line.toString(StandardCharsets.ISO_8859_1);
            line.reset();
            String size = text.endsWith("\r\n") ? text.substring(0, text.length() - 2) : text;
            int extension = size.indexOf(';');
            if (extension >= 0) {
                size = size.substring(0, extension);
            }
            long chunk;
            try {
                chunk = Long.parseLong(size, 16);
            } catch (NumberFormatException e) {
                state = State.AS_IS; // Helidon refuses it
                return;
            }
            if (chunk < 0) {
                state = State.AS_IS;
            } else if (chunk == 0) {
                state = State.TRAILER;
            } else {
                remaining = chunk;
                state = State.CHUNK_DATA;
            }
        }
    }

    /** Writes Helidon's answers, the status line of each answer to an HTTP/1.0 request saying so. */
    private static final class Answers implements DataWriter {
        private static final byte[] HTTP11 = "HTTP/1.1 ".getBytes(StandardCharsets.US_ASCII);

        private final DataWriter socket;
        private final Queue<Boolean> answers;

        Answers(DataWriter socket, Queue<Boolean> answers) {
            this.socket = socket;
            this.answers = answers;
        }

        private BufferData version(BufferData buffer) {
            if (buffer.available() < HTTP11.length + 1) {
                return buffer;
            }
            for (int i = 0; i < HTTP11.length; i++) {
                if (buffer.get(i) != HTTP11[i]) {
                    return buffer;
                }
            }
            boolean interim = buffer.get(HTTP11.length) == '1';
            Boolean http10 = interim ? answers.peek() : answers.poll();
            if (http10 == null || !http10) {
                return buffer;
            }
            byte[] bytes = buffer.copy().readBytes();
            bytes[HTTP11.length - 2] = '0';
            return BufferData.create(bytes);
        }

        private BufferData[] version(BufferData... buffers) {
            if (buffers.length > 0) {
                buffers[0] = version(buffers[0]);
            }
            return buffers;
        }

        @Override
        public void write(BufferData... buffers) {
            socket.write(version(buffers));
        }

        @Override
        public void write(BufferData buffer) {
            socket.write(version(buffer));
        }

        @Override
        public void writeNow(BufferData... buffers) {
            socket.writeNow(version(buffers));
        }

        @Override
        public void writeNow(BufferData buffer) {
            socket.writeNow(version(buffer));
        }

        @Override
        public void flush() {
            socket.flush();
        }

        @Override
        public void close() {
            socket.close();
        }
    }
}
