package org.cudagraph4j.benchmarks.server;

import static org.cudagraph4j.benchmarks.server.TestClient.error;
import static org.cudagraph4j.benchmarks.server.TestClient.infer;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A graceful stop: what was in flight is answered once, what comes after is a 503, and the process exits 0. */
class ShutdownTest {
    private static final MlpWeights MODEL = MlpWeights.random(4, 2, 9);

    /** Holds every request until opened; closing fails what it still holds, as the engine does. */
    private static final class Held extends TestBackend {
        final CountDownLatch open = new CountDownLatch(1);
        final AtomicInteger computed = new AtomicInteger();
        final List<CompletableFuture<float[]>> pending = new ArrayList<>();
        final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
        volatile boolean closed;

        Held() {
            super(4);
        }

        @Override
        public boolean ready() {
            return !closed;
        }

        @Override
        public synchronized CompletableFuture<float[]> infer(float[] rows) {
            CompletableFuture<float[]> answer = new CompletableFuture<>();
            pending.add(answer);
            threads.execute(() -> {
                try {
                    open.await();
                    computed.incrementAndGet();
                    answer.complete(MODEL.forward(rows));
                } catch (InterruptedException e) {
                    answer.completeExceptionally(e);
                }
            });
            return answer;
        }

        synchronized int held() {
            return pending.size();
        }

        @Override
        public synchronized void close() {
            closed = true;
            pending.forEach(f -> f.completeExceptionally(new IllegalStateException("the backend closed before "
                    + "serving it")));
            threads.shutdownNow();
        }
    }

    private static float[] row(int i) {
        return new float[] {i, 1, -i, 2};
    }

    private static void awaitHeld(Held backend, int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (backend.held() < count && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(count, backend.held());
    }

    /** Sends rows 0 to {@code count - 1}, one request each, and returns once the backend holds them all. */
    private static List<Future<HttpResponse<byte[]>>> holdInFlight(ExecutorService clients, InferenceServer server,
            Held backend, int count) throws InterruptedException {
        List<Future<HttpResponse<byte[]>>> inFlight = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String request = TestClient.request(1, 4, row(i));
            inFlight.add(clients.submit(() -> infer(server, request)));
        }
        awaitHeld(backend, count);
        return inFlight;
    }

    @Test
    void requestsInFlightFinishAndLaterOnesAreA503() throws Exception {
        Held backend = new Held();
        ServerLimits limits = ServerLimits.defaults();
        InferenceServer server = new InferenceServer("mlp", backend, 0, limits);
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<HttpResponse<byte[]>>> inFlight = holdInFlight(clients, server, backend, 8);
            Future<Boolean> stopping = clients.submit(server::shutdown);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            HttpResponse<byte[]> ready;
            do {
                ready = TestClient.get(server, "/v2/models/mlp/ready");
            } while (ready.statusCode() == 200 && System.nanoTime() < deadline);
            assertEquals(503, ready.statusCode());
            assertEquals("{\"name\":\"mlp\",\"ready\":false}", new String(ready.body(), StandardCharsets.UTF_8));
            HttpResponse<byte[]> late = infer(server, TestClient.request(1, 4, row(9)));
            assertEquals(503, late.statusCode());
            assertEquals("the server is shutting down", error(late));
            backend.open.countDown();
            for (int i = 0; i < 8; i++) {
                HttpResponse<byte[]> answer = inFlight.get(i).get();
                assertEquals(200, answer.statusCode(), new String(answer.body(), StandardCharsets.UTF_8));
                float[] output = new float[4];
                for (int j = 0; j < 4; j++) {
                    output[j] = TestClient.json(answer).path("outputs").get(0).path("data").get(j).floatValue();
                }
                assertArrayEquals(MODEL.forward(row(i)), output);
            }
            assertTrue(stopping.get(), "every request in flight finished within the shutdown timeout");
            assertEquals(8, backend.computed.get(), "each request was computed once, the late one never");
        }
    }

    @Test
    void requestsStillInFlightAtTheTimeoutAreA503AndNoneIsLost() throws Exception {
        Held backend = new Held();
        ServerLimits limits = new ServerLimits(1 << 20, 64 << 20, 64, 4096, 64, 100, Duration.ofSeconds(30),
                Duration.ofSeconds(5), Duration.ofMillis(200));
        InferenceServer server = new InferenceServer("mlp", backend, 0, limits);
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<HttpResponse<byte[]>>> inFlight = holdInFlight(clients, server, backend, 6);
            assertFalse(server.shutdown(), "the backend never answered: not drained");
            for (Future<HttpResponse<byte[]>> answer : inFlight) {
                HttpResponse<byte[]> response = answer.get();
                assertEquals(503, response.statusCode());
                assertEquals("the backend closed before serving it", error(response));
            }
            assertEquals(0, backend.computed.get());
        }
    }

    @Test
    void sigtermStopsTheProcessGracefullyWithExitZero(@TempDir Path dir) throws Exception {
        Path model = dir.resolve("mlp.safetensors");
        MODEL.save(model);
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process process = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                InferenceServer.class.getName(), "--model", model.toString(), "--backend", "cpu", "--port", "0")
                .redirectError(dir.resolve("server.log").toFile()).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String serving = out.readLine();
            assertTrue(serving != null && serving.startsWith("serving mlp on http://127.0.0.1:"), serving);
            int port = Integer.parseInt(serving.replaceFirst(".*:(\\d+) on .*", "$1"));
            byte[] body = TestClient.request(1, 4, row(3)).getBytes(StandardCharsets.UTF_8);
            TestClient.Raw answer = TestClient.raw(port, ("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                    + "Content-Length: " + body.length + "\r\nConnection: close\r\n\r\n" + new String(body,
                    StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(10));
            assertEquals(200, answer.status());
            process.toHandle().destroy(); // SIGTERM, leaving the streams open (Process.destroy closes them)
            assertEquals("stopped", out.readLine());
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "stopped within 30 s");
            assertEquals(0, process.exitValue());
        } finally {
            process.destroyForcibly();
        }
    }
}
