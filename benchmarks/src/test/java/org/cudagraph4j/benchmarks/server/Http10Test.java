package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Locale;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * HTTP/1.0 requests (as nginx's proxy_pass and ApacheBench send them) are answered in HTTP/1.0, and
 * the connection is closed after the answer unless the request asked for {@code keep-alive}.
 */
class Http10Test {
    private static final MlpWeights MODEL = MlpWeights.random(4, 2, 9);

    private InferenceServer server;

    @BeforeEach
    void start() {
        server = new InferenceServer("mlp", new CpuBackend(MODEL), 0, ServerLimits.defaults());
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private String exchange(String request) throws IOException {
        return TestClient.untilClosed(server.port(), request);
    }

    @Test
    void aGetWithoutHostIsAnsweredInHttp10AndTheConnectionCloses() throws IOException {
        String answer = exchange("GET /v2/health/ready HTTP/1.0\r\n\r\n");
        assertTrue(answer.startsWith("HTTP/1.0 200 "), answer);
        assertTrue(answer.toLowerCase(Locale.ROOT).contains("\r\nconnection: close\r\n"), answer);
        assertTrue(answer.endsWith("{\"ready\":true}") || answer.contains("\"ready\":true"), answer);
    }

    @Test
    void anInferenceWithContentLengthIsAnsweredInHttp10() throws IOException {
        String body = TestClient.request(1, 4, 1, 2, 3, 4);
        String answer = exchange("POST /v2/models/mlp/infer HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length() + "\r\n\r\n" + body);
        assertTrue(answer.startsWith("HTTP/1.0 200 "), answer);
        assertTrue(answer.contains("\"outputs\""), answer);
    }

    @Test
    void keepAliveIsKeptOnlyWhenAsked() throws IOException {
        String ready = "GET /v2/health/ready HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
        String answer = exchange(ready + "GET /v2/health/live HTTP/1.0\r\n\r\n");
        assertTrue(answer.startsWith("HTTP/1.0 200 "), answer);
        int second = answer.indexOf("HTTP/1.0 200 ", 1);
        assertTrue(second > 0, "the keep-alive connection answered a second request: " + answer);
        assertTrue(answer.toLowerCase(Locale.ROOT).substring(0, second).contains("\r\nconnection: keep-alive\r\n"),
                answer);
        assertTrue(answer.substring(second).contains("{\"live\":true}"), answer);
        assertEquals(-1, answer.indexOf("HTTP/1.1"), answer);
    }

    @Test
    void http11IsAnsweredInHttp11() throws IOException {
        String answer = exchange("GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertTrue(answer.startsWith("HTTP/1.1 200 "), answer);
    }
}
