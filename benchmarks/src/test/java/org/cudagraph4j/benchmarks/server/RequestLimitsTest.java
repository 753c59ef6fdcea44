package org.cudagraph4j.benchmarks.server;

import static org.cudagraph4j.benchmarks.server.TestClient.error;
import static org.cudagraph4j.benchmarks.server.TestClient.infer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What a client's claims can cost the server: nothing before the bytes behind them have arrived. */
class RequestLimitsTest {
    private static final MlpWeights MODEL = MlpWeights.random(512, 2, 5);
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

    private static String claim(String shape) {
        return "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":" + shape + ",\"data\":[1]}]}";
    }

    private static long heapUsed() {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        return memory.getHeapMemoryUsage().getUsed();
    }

    @Test
    void aShortRequestClaimingAHugeShapeIsRefusedAtOnceWithoutAllocatingIt() throws Exception {
        InferenceServer server = start(new CpuBackend(MODEL), ServerLimits.defaults());
        String[][] cases = {
            {"[4194305,512]", "input \"input\" has 4194305 rows, over the limit of 4096 rows per request (--max-rows)"},
            {"[2000000,512]", "input \"input\" has 2000000 rows, over the limit of 4096 rows per request (--max-rows)"},
            // rows x width past 2^32: the old int arithmetic wrapped around to a small count.
            {"[8388609,512]", "input \"input\" has 8388609 rows, over the limit of 4096 rows per request (--max-rows)"},
            {"[9223372036854775807,512]", "input \"input\" has 9223372036854775807 rows, over the limit of 4096 rows "
                + "per request (--max-rows)"},
            {"[99999999999999999999,512]", "input \"input\" needs shape [n, 512], got [99999999999999999999,512]"},
            {"[4096,512]", "input \"input\" of shape [4096,512] needs 2097152 values, got 1"},
        };
        for (String[] c : cases) {
            String body = claim(c[0]);
            assertTrue(body.length() < 120, "a short request: " + body.length() + " bytes");
            long before = heapUsed();
            long start = System.nanoTime();
            HttpResponse<byte[]> response = infer(server, body);
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertEquals(400, response.statusCode(), c[0]);
            assertEquals(c[1], error(response));
            assertTrue(millis < 2000, c[0] + " took " + millis + " ms");
            assertTrue(heapUsed() - before < 64L << 20, c[0] + " grew the heap by " + (heapUsed() - before) + " bytes");
        }
    }

    @Test
    void manyHugeClaimsAtOnceAreAllRefusedAndTheServerStillAnswers() throws Exception {
        InferenceServer server = start(new CpuBackend(MODEL), ServerLimits.defaults());
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<HttpResponse<byte[]>>> answers = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                answers.add(clients.submit(() -> infer(server, claim("[4194305,512]"))));
            }
            for (Future<HttpResponse<byte[]>> answer : answers) {
                assertEquals(400, answer.get().statusCode());
            }
        }
        float[] row = new float[512];
        row[0] = 1;
        assertEquals(200, infer(server, TestClient.request(1, 512, row)).statusCode());
    }

    @Test
    void theLimitsOnElementsAndBodyBytesNameTheirOption() throws Exception {
        ServerLimits limits = new ServerLimits(1 << 20, 64 << 20, 100, 1024, 16, 100, Duration.ofSeconds(5),
                Duration.ofSeconds(5), Duration.ofSeconds(1));
        InferenceServer server = start(new CpuBackend(MODEL), limits);
        HttpResponse<byte[]> elements = infer(server, claim("[3,512]"));
        assertEquals(400, elements.statusCode());
        assertEquals("input \"input\" of shape [3,512] holds 1536 values, over the limit of 1024 per request "
                + "(--max-elements)", error(elements));
        // Values past the limit are refused as they are read, whatever the shape claims.
        StringBuilder many = new StringBuilder("{\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"data\":[");
        for (int i = 0; i < 2000; i++) {
            many.append(i == 0 ? "1" : ",1");
        }
        HttpResponse<byte[]> values = infer(server, many.append("],\"shape\":[1,512]}]}").toString());
        assertEquals(400, values.statusCode());
        assertEquals("input \"input\" holds more than 1024 values, over the limit per request (--max-elements)",
                error(values));
        HttpResponse<byte[]> body = TestClient.post(server, "/v2/models/mlp/infer", new byte[(1 << 20) + 1]);
        assertEquals(413, body.statusCode());
        assertEquals("the request body of 1048577 bytes is over the limit of 1048576 (--max-body-bytes)", error(body));
    }

    @Test
    void aChunkedBodyIsCountedAsItArrives() throws Exception {
        InferenceServer server = start(new CpuBackend(MODEL), ServerLimits.defaults().withMaxBodyBytes(4096));
        byte[] head = ("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        StringBuilder chunks = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            chunks.append("800\r\n").append("x".repeat(0x800)).append("\r\n");
        }
        chunks.append("0\r\n\r\n");
        byte[] tail = chunks.toString().getBytes(StandardCharsets.US_ASCII);
        byte[] request = new byte[head.length + tail.length];
        System.arraycopy(head, 0, request, 0, head.length);
        System.arraycopy(tail, 0, request, head.length, tail.length);
        assertEquals(413, TestClient.raw(server.port(), request, Duration.ofSeconds(10)).status());
    }

    /** A backend that answers only when let go, to hold requests in flight. */
    private static final class Gate extends TestBackend {
        final CountDownLatch open = new CountDownLatch(1);
        final CountDownLatch arrived = new CountDownLatch(2);
        final CpuBackend cpu = new CpuBackend(MODEL);

        Gate() {
            super(512);
        }

        @Override
        public CompletableFuture<float[]> infer(float[] rows) {
            arrived.countDown();
            return CompletableFuture.runAsync(() -> {
                try {
                    open.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }).thenCompose(ignored -> cpu.infer(rows));
        }

        @Override
        public void close() {
            open.countDown();
            cpu.close();
        }
    }

    @Test
    void requestsPastTheInFlightLimitAreA503AndTheOthersStillGetTheirAnswers() throws Exception {
        Gate gate = new Gate();
        ServerLimits limits = new ServerLimits(8 << 20, 256 << 20, 4096, 4 << 20, 2, 100, Duration.ofSeconds(20),
                Duration.ofSeconds(5), Duration.ofSeconds(5));
        InferenceServer server = start(gate, limits);
        float[] row = new float[512];
        row[1] = 2;
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<HttpResponse<byte[]>> first = clients.submit(() -> infer(server, TestClient.request(1, 512, row)));
            Future<HttpResponse<byte[]>> second = clients.submit(() -> infer(server, TestClient.request(1, 512, row)));
            assertTrue(gate.arrived.await(10, java.util.concurrent.TimeUnit.SECONDS), "both held in the backend");
            HttpResponse<byte[]> third = infer(server, TestClient.request(1, 512, row));
            assertEquals(503, third.statusCode());
            assertEquals("the server has 2 inference requests in flight, its limit (--max-in-flight); try again later",
                    error(third));
            gate.open.countDown();
            assertEquals(200, first.get().statusCode());
            assertEquals(200, second.get().statusCode());
        }
    }

    @Test
    void aRequestPastItsTimeoutIsA503() throws Exception {
        Gate gate = new Gate();
        ServerLimits limits = new ServerLimits(8 << 20, 256 << 20, 4096, 4 << 20, 16, 100, Duration.ofMillis(300),
                Duration.ofSeconds(5), Duration.ofSeconds(1));
        InferenceServer server = start(gate, limits);
        float[] row = new float[512];
        HttpResponse<byte[]> late = infer(server, TestClient.request(1, 512, row));
        assertEquals(503, late.statusCode());
        assertEquals("no answer within PT0.3S (--request-timeout)", error(late));
    }

    @Test
    void aStalledClientHoldsNeitherTheEngineNorAnInFlightSlot() throws Exception {
        ServerLimits limits = new ServerLimits(8 << 20, 256 << 20, 4096, 4 << 20, 1, 100, Duration.ofSeconds(5),
                Duration.ofMillis(500), Duration.ofSeconds(1));
        InferenceServer server = start(new CpuBackend(MODEL), limits);
        float[] row = new float[512];
        row[3] = 1;
        String good = TestClient.request(1, 512, row);
        // Headers that never end: the connection waits, and the one in-flight slot stays free.
        try (Socket headers = new Socket("127.0.0.1", server.port());
             Socket body = new Socket("127.0.0.1", server.port())) {
            headers.getOutputStream().write("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            assertEquals(200, infer(server, good).statusCode());
            // A body that never arrives: cut off at the read timeout, and the slot is given back.
            body.setSoTimeout(5000);
            body.getOutputStream().write(("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                    + "\r\n{\"inputs\":").getBytes(StandardCharsets.US_ASCII));
            long start = System.nanoTime();
            String answer = new String(body.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
            long millis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(answer.isEmpty() || answer.equals("HTTP/1.1 408"), answer);
            assertTrue(millis < 3000, "the stalled body held its connection for " + millis + " ms");
            // The handler gives its slot back as it unwinds, which may be just after the client sees the close.
            int status = TestClient.inferOnNewConnection(server, good).statusCode();
            for (long deadline = System.nanoTime() + 2_000_000_000L; status == 503 && System.nanoTime() < deadline; ) {
                Thread.sleep(10);
                status = TestClient.inferOnNewConnection(server, good).statusCode();
            }
            assertEquals(200, status, "the stalled request's in-flight slot was given back");
        }
    }
}
