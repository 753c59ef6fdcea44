package org.cudagraph4j.benchmarks.server;

import static org.cudagraph4j.benchmarks.server.TestClient.error;
import static org.cudagraph4j.benchmarks.server.TestClient.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The server against clients that try to exhaust it: its memory, its connections, its in-flight
 * slots and its compute. Each attack runs on loopback against small limits, bounded in time, and
 * each test checks that the server still answers and holds nothing afterwards.
 */
class ServerDefencesTest {
    private static final int WIDTH = 512;
    private final List<InferenceServer> servers = new ArrayList<>();

    private InferenceServer start(InferenceBackend backend, ServerLimits limits) {
        InferenceServer server = new InferenceServer("mlp", backend, 0, limits);
        servers.add(server);
        return server;
    }

    @AfterEach
    void stop() {
        servers.forEach(InferenceServer::close);
    }

    private static ServerLimits limits(long maxBody, long budget, int inFlight, Duration requestTimeout) {
        return new ServerLimits(maxBody, budget, 4096, 4L << 20, inFlight, 2000, requestTimeout,
                Duration.ofSeconds(5), Duration.ofSeconds(1));
    }

    /** A JSON request of {@code rows} rows of ones, written as {@code 1}: about 2 bytes a value. */
    private static String ones(int rows) {
        StringBuilder json = new StringBuilder(rows * WIDTH * 2 + 100)
                .append("{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[").append(rows).append(',')
                .append(WIDTH).append("],\"data\":[");
        for (int i = 0; i < rows * WIDTH; i++) {
            json.append(i == 0 ? "1" : ",1");
        }
        return json.append("]}]}").toString();
    }

    private static String one() {
        return ones(1);
    }

    /** A backend that answers zeros after {@code millis}, off the caller's thread. */
    private static TestBackend slowZeros(long millis) {
        return new TestBackend(WIDTH, rows -> CompletableFuture.supplyAsync(() -> new float[rows.length],
                CompletableFuture.delayedExecutor(millis, java.util.concurrent.TimeUnit.MILLISECONDS)));
    }

    private static void awaitNothingHeld(InferenceServer server) throws InterruptedException {
        for (long deadline = System.nanoTime() + 5_000_000_000L; server.heldBytes() != 0
                && System.nanoTime() < deadline; ) {
            Thread.sleep(10);
        }
        assertEquals(0, server.heldBytes(), "budget bytes still held");
    }

    private static long heapAfterGc() throws InterruptedException {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long least = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            least = Math.min(least, memory.getHeapMemoryUsage().getUsed());
        }
        return least;
    }

    /**
     * Sends {@code count} requests of {@code rows} rows at once, each on a connection of its own client
     * (closed afterwards, so that nothing of it stays), and checks each answer: a 200 with the rows,
     * or a 503 naming the budget. Returns how many were served.
     */
    private static int concurrently(InferenceServer server, int count, int rows) throws Exception {
        byte[] body = ones(rows).getBytes(StandardCharsets.US_ASCII);
        int ok = 0;
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
             ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                    + "/v2/models/mlp/infer")).timeout(Duration.ofSeconds(30))
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
            List<Future<HttpResponse<byte[]>>> answers = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                answers.add(clients.submit(() -> client.send(request, HttpResponse.BodyHandlers.ofByteArray())));
            }
            for (Future<HttpResponse<byte[]>> answer : answers) {
                HttpResponse<byte[]> response = answer.get();
                if (response.statusCode() == 200) {
                    ok++;
                    assertEquals(rows * WIDTH, TestClient.json(response).path("outputs").get(0).path("data").size());
                } else {
                    assertEquals(503, response.statusCode());
                    assertTrue(error(response).contains("(--max-buffered-bytes)"), error(response));
                }
            }
        }
        return ok;
    }

    @Test
    void oneBudgetBoundsWhatConcurrentLargeRequestsHoldFromBodyToAnswer() throws Exception {
        long budget = 24L << 20;
        InferenceServer server = start(slowZeros(200), limits(4L << 20, budget, 1024, Duration.ofSeconds(20)));
        assertEquals(200, TestClient.infer(server, one()).statusCode());
        long heapBefore = heapAfterGc();
        AtomicLong peak = new AtomicLong();
        AtomicBoolean done = new AtomicBoolean();
        Thread sampler = Thread.ofPlatform().daemon().start(() -> {
            while (!done.get()) {
                peak.accumulateAndGet(server.heldBytes(), Math::max);
                Thread.onSpinWait();
            }
        });
        int ok;
        try {
            ok = concurrently(server, 40, 512); // each about 512 KiB of JSON, 10.5 MiB reckoned
        } finally {
            done.set(true);
            sampler.join();
        }
        assertTrue(ok >= 1, "some requests are served");
        assertTrue(peak.get() <= budget, "held " + peak.get() + " bytes, over the budget of " + budget);
        assertTrue(peak.get() > 8L << 20, "the budget counted what a request holds after parsing: " + peak.get());
        awaitNothingHeld(server);
        assertEquals(200, get(server, "/v2/health/live").statusCode());
        assertEquals(200, TestClient.infer(server, one()).statusCode());
        long grown = heapAfterGc() - heapBefore;
        assertTrue(grown < 32L << 20, "the heap stayed " + grown + " bytes above its level before");
    }

    @Test
    void aRequestThatWouldHoldMoreThanTheWholeBudgetIsA413() throws Exception {
        // 4 MiB of body may take: 1,024 rows of 512 values reckoned at about 21 MiB, over 8 MiB.
        InferenceServer server = start(slowZeros(0), limits(4L << 20, 8L << 20, 16, Duration.ofSeconds(5)));
        HttpResponse<byte[]> refused = TestClient.infer(server, ones(1024));
        assertEquals(413, refused.statusCode());
        assertTrue(error(refused).endsWith("bytes until answered, over the server's limit of 8388608 "
                + "(--max-buffered-bytes)"), error(refused));
        assertEquals(200, TestClient.infer(server, ones(16)).statusCode());
        awaitNothingHeld(server);
    }

    @Test
    void aServerThatRanOutOfMemoryIsNeitherLiveNorReady() throws Exception {
        TestBackend oom = new TestBackend(WIDTH, rows -> CompletableFuture.failedFuture(
                new OutOfMemoryError("Java heap space (a test's)")));
        InferenceServer server = start(oom, limits(1 << 20, 32L << 20, 16, Duration.ofSeconds(5)));
        assertEquals(200, get(server, "/v2/health/live").statusCode());
        HttpResponse<byte[]> failed = TestClient.infer(server, one());
        assertEquals(503, failed.statusCode());
        assertTrue(error(failed).contains("OutOfMemoryError"), error(failed));
        assertEquals(503, get(server, "/v2/health/live").statusCode());
        assertEquals("{\"live\":false}", new String(get(server, "/v2/health/live").body(), StandardCharsets.UTF_8));
        assertEquals(503, get(server, "/v2/health/ready").statusCode());
        assertEquals(503, get(server, "/v2/models/mlp/ready").statusCode());
    }

    /** Reads until the server closes the connection; how long that took, or -1 if it stayed open past {@code max}. */
    private static long millisUntilClosed(Socket socket, Duration max) throws IOException {
        long start = System.nanoTime();
        socket.setSoTimeout((int) max.toMillis());
        InputStream in = socket.getInputStream();
        try {
            while (in.read() >= 0) {
                // an answer, if any; the close is what counts
            }
        } catch (SocketTimeoutException e) {
            return -1;
        } catch (IOException e) {
            // reset: closed
        }
        return (System.nanoTime() - start) / 1_000_000;
    }

    private static Socket connect(InferenceServer server) throws IOException {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", server.port()), 5000);
        return socket;
    }

    @Test
    void aRequestHeadThatDoesNotArriveInTimeClosesItsConnection() throws Exception {
        ServerLimits limits = limits(1 << 20, 32L << 20, 16, Duration.ofSeconds(5))
                .withTimeouts(Duration.ofMillis(500), Duration.ofSeconds(5));
        InferenceServer server = start(slowZeros(0), limits);
        try (Socket unfinished = connect(server); Socket silent = connect(server); Socket idle = connect(server);
             Socket drip = connect(server)) {
            // A byte every 50 ms: each arrives in time, the head as a whole does not.
            Thread dripper = Thread.ofVirtual().start(() -> {
                try {
                    for (byte b : "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ".getBytes(
                            StandardCharsets.US_ASCII)) {
                        drip.getOutputStream().write(b);
                        Thread.sleep(50);
                    }
                    while (true) {
                        drip.getOutputStream().write('a');
                        Thread.sleep(50);
                    }
                } catch (IOException | InterruptedException e) {
                    // closed by the server
                }
            });
            unfinished.getOutputStream().write("GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            idle.getOutputStream().write("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            long unfinishedMillis = millisUntilClosed(unfinished, Duration.ofSeconds(5));
            long silentMillis = millisUntilClosed(silent, Duration.ofSeconds(5));
            long idleMillis = millisUntilClosed(idle, Duration.ofSeconds(5));
            assertTrue(unfinishedMillis >= 0 && unfinishedMillis < 3000, "unfinished head held " + unfinishedMillis);
            assertTrue(silentMillis >= 0, "a connection that sends nothing stayed open");
            assertTrue(idleMillis >= 0, "an idle keep-alive connection stayed open");
            long dripMillis = millisUntilClosed(drip, Duration.ofSeconds(5));
            assertTrue(dripMillis >= 0, "a head sent a byte at a time stayed open");
            dripper.join(5000);
        }
        assertEquals(200, TestClient.inferOnNewConnection(server, one()).statusCode());
    }

    @Test
    void silentConnectionsFillingTheConnectionLimitAreEvictedAtTheHeaderTimeout() throws Exception {
        ServerLimits base = limits(1 << 20, 32L << 20, 16, Duration.ofSeconds(5));
        ServerLimits limits = new ServerLimits(base.maxBodyBytes(), base.maxBufferedBytes(), base.maxRows(),
                base.maxElements(), base.maxInFlight(), 8, base.requestTimeout(), base.readTimeout(),
                base.shutdownTimeout(), Duration.ofMillis(500), Duration.ofSeconds(5), 1);
        InferenceServer server = start(slowZeros(0), limits);
        List<Socket> silent = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                silent.add(connect(server));
            }
            long start = System.nanoTime();
            assertEquals(200, TestClient.inferOnNewConnection(server, one()).statusCode());
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(millis < 3000, "waited " + millis + " ms for a connection");
        } finally {
            for (Socket socket : silent) {
                socket.close();
            }
        }
    }

    @Test
    void aHeadTimeoutDoesNotCutOffALongComputation() throws Exception {
        ServerLimits limits = limits(1 << 20, 32L << 20, 16, Duration.ofSeconds(5))
                .withTimeouts(Duration.ofMillis(300), Duration.ofSeconds(5));
        InferenceServer server = start(slowZeros(1200), limits);
        assertEquals(200, TestClient.inferOnNewConnection(server, one()).statusCode());
    }

    @Test
    void declaredBodiesThatNeverArriveHoldNeitherSlotsNorBudget() throws Exception {
        int inFlight = 4;
        ServerLimits limits = new ServerLimits(8L << 20, 8L << 20, 4096, 4L << 20, inFlight, 2000,
                Duration.ofSeconds(5), Duration.ofSeconds(20), Duration.ofSeconds(1));
        InferenceServer server = start(slowZeros(0), limits);
        List<Socket> claims = new ArrayList<>();
        try {
            for (int i = 0; i < 40; i++) {
                Socket socket = connect(server);
                claims.add(socket);
                long declared = i % 2 == 0 ? 8L << 20 : 10;
                socket.getOutputStream().write(("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: "
                        + declared + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            }
            Thread.sleep(300); // every claim's handler waiting for its body
            assertTrue(server.heldBytes() <= 40 * 4096, "claims hold " + server.heldBytes() + " bytes of the budget");
            long start = System.nanoTime();
            for (int i = 0; i < 2 * inFlight; i++) {
                assertEquals(200, TestClient.inferOnNewConnection(server, one()).statusCode());
            }
            assertTrue((System.nanoTime() - start) / 1_000_000 < 5000, "served past the claims");
        } finally {
            for (Socket socket : claims) {
                socket.close();
            }
        }
        awaitNothingHeld(server);
    }

    @Test
    void aClientThatDoesNotReadItsAnswerLosesItAtTheWriteTimeout() throws Exception {
        ServerLimits limits = limits(8L << 20, 256L << 20, 1, Duration.ofSeconds(5))
                .withTimeouts(Duration.ofSeconds(5), Duration.ofMillis(500));
        InferenceServer server = start(slowZeros(0), limits);
        byte[] body = ones(4096).getBytes(StandardCharsets.US_ASCII); // about 8 MiB of JSON answer
        try (Socket reader = new Socket()) {
            reader.setReceiveBufferSize(4096);
            reader.connect(new InetSocketAddress("127.0.0.1", server.port()), 5000);
            reader.getOutputStream().write(("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    + "application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            reader.getOutputStream().write(body);
            reader.getOutputStream().flush();
            // Never read: the one in-flight slot is given back once the write times out.
            long start = System.nanoTime();
            int status = TestClient.inferOnNewConnection(server, one()).statusCode();
            while (status == 503 && System.nanoTime() - start < 5_000_000_000L) {
                Thread.sleep(50);
                status = TestClient.inferOnNewConnection(server, one()).statusCode();
            }
            assertEquals(200, status, "the stalled reader's slot was given back");
            assertTrue((System.nanoTime() - start) / 1_000_000 < 4000, "within the write timeout and a little");
            awaitNothingHeld(server);
        }
    }

    @Test
    void longComputationsLeaveLivenessAnsweredAndStopAtTheirDeadline() throws Exception {
        // Each request alone is seconds of work: 4,096 rows through 8 layers of 512 x 512.
        CpuBackend cpu = new CpuBackend(MlpWeights.random(WIDTH, 8, 3), 2);
        ServerLimits limits = limits(8L << 20, 512L << 20, 16, Duration.ofMillis(2500));
        InferenceServer server = start(cpu, limits);
        String big = ones(4096);
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<HttpResponse<byte[]>>> answers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                answers.add(clients.submit(() -> TestClient.infer(server, big)));
            }
            for (long deadline = System.nanoTime() + 5_000_000_000L; cpu.computing() < 2
                    && System.nanoTime() < deadline; ) {
                Thread.sleep(5);
            }
            assertEquals(2, cpu.computing(), "both compute threads busy");
            Thread.sleep(400); // the other two requests parsed, waiting for a compute thread
            for (long until = System.nanoTime() + 1_000_000_000L; System.nanoTime() < until; ) {
                long start = System.nanoTime();
                assertEquals(200, get(server, "/v2/health/live").statusCode());
                long millis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(millis < 1000, "liveness took " + millis + " ms");
                Thread.sleep(50);
            }
            for (Future<HttpResponse<byte[]>> answer : answers) {
                HttpResponse<byte[]> response = answer.get();
                assertEquals(503, response.statusCode());
                assertEquals("no answer within PT2.5S (--request-timeout)", error(response));
            }
        }
        // Past their deadline the requests stop costing: the compute threads are free within a step.
        for (long deadline = System.nanoTime() + 2_000_000_000L; cpu.computing() > 0
                && System.nanoTime() < deadline; ) {
            Thread.sleep(10);
        }
        assertEquals(0, cpu.computing(), "forward passes still running past their deadline");
        awaitNothingHeld(server);
    }

    @Test
    void theCpuBackendStopsCancelledWorkAndFailsWhatItHoldsOnClosing() throws Exception {
        CpuBackend cpu = new CpuBackend(MlpWeights.random(WIDTH, 8, 4), 1);
        float[] rows = new float[4096 * WIDTH];
        CompletableFuture<float[]> running = cpu.infer(rows);
        CompletableFuture<float[]> queued = cpu.infer(rows);
        CompletableFuture<float[]> cancelled = cpu.infer(rows);
        cancelled.cancel(false);
        for (long deadline = System.nanoTime() + 5_000_000_000L; cpu.computing() == 0
                && System.nanoTime() < deadline; ) {
            Thread.sleep(5);
        }
        long start = System.nanoTime();
        cpu.close();
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(running.isCompletedExceptionally() && queued.isCompletedExceptionally(), "failed on closing");
        assertEquals(0, cpu.computing());
        assertTrue(millis < 2000, "closing waited " + millis + " ms for work it had failed");
    }
}
