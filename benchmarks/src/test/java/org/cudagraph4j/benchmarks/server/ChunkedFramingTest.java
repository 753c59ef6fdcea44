package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A chunked body whose framing is wrong is answered {@code 400} with {@code Connection: close}, and
 * the connection is closed: nothing after the error is read as a request of its own.
 */
class ChunkedFramingTest {
    private static final MlpWeights MODEL = MlpWeights.random(4, 2, 9);
    private static final String HEAD = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n";
    /** A request that, read on its own, would be answered 200. */
    private static final String FOLLOWING = "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n";
    private static final Pattern STATUS_LINE = Pattern.compile("HTTP/1\\.[01] (\\d{3}) ");

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

    private static void assertOneRefusalAndClosed(String answer) {
        Matcher status = STATUS_LINE.matcher(answer);
        assertTrue(status.find(), answer);
        assertEquals("400", status.group(1), answer);
        assertTrue(!status.find(), "one answer only, nothing after the error read as a request: " + answer);
        assertTrue(answer.toLowerCase(Locale.ROOT).contains("\r\nconnection: close\r\n"), answer);
    }

    @Test
    void aWellFramedChunkedBodyIsAnswered() throws IOException {
        String body = TestClient.request(1, 4, 1, 2, 3, 4);
        String answer = exchange(HEAD.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
                + Integer.toHexString(body.length()) + "\r\n" + body + "\r\n0\r\n\r\n");
        assertTrue(answer.startsWith("HTTP/1.1 200 "), answer);
    }

    @Test
    void aBadChunkSizeLineIsA400AndTheRestIsNotReadAsARequest() throws IOException {
        assertOneRefusalAndClosed(exchange(HEAD + "zz\r\n" + FOLLOWING));
    }

    @Test
    void bytesOtherThanCrlfAfterChunkDataAreA400AndTheConnectionCloses() throws IOException {
        String body = TestClient.request(1, 4, 1, 2, 3, 4);
        String answer = exchange(HEAD + Integer.toHexString(body.length()) + "\r\n" + body + "XY" + "0\r\n\r\n"
                + FOLLOWING);
        assertOneRefusalAndClosed(answer);
        assertTrue(answer.contains("chunk data is not followed by CRLF"), answer);
    }

    @Test
    void chunkedBodiesOnOneConnectionAreEachAnswered() throws IOException {
        String body = TestClient.request(1, 4, 1, 2, 3, 4);
        String chunks = Integer.toHexString(10) + "\r\n" + body.substring(0, 10) + "\r\n"
                + Integer.toHexString(body.length() - 10) + "\r\n" + body.substring(10) + "\r\n0\r\n\r\n";
        String answer = exchange(HEAD + chunks + HEAD.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
                + chunks);
        Matcher status = STATUS_LINE.matcher(answer);
        for (int i = 0; i < 2; i++) {
            assertTrue(status.find(), answer);
            assertEquals("200", status.group(1), answer);
        }
    }
}
