package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;

/** The server's tests' client: the JDK's HTTP client for well-formed HTTP, a raw socket for the rest. */
final class TestClient {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private TestClient() {}

    static HttpResponse<byte[]> get(InferenceServer server, String path) throws Exception {
        return send(server, "GET", path, null);
    }

    static HttpResponse<byte[]> post(InferenceServer server, String path, byte[] body, String... headers)
            throws Exception {
        return send(server, "POST", path, body, headers);
    }

    static HttpResponse<byte[]> infer(InferenceServer server, String json) throws Exception {
        return post(server, "/v2/models/mlp/infer", json.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * {@link #infer} on a connection of its own: after a wait longer than the server's idle timeout,
     * a pooled keep-alive connection may be one the server is closing, and the JDK's client does not
     * retry a POST that met the close ("header parser received no bytes").
     */
    static HttpResponse<byte[]> inferOnNewConnection(InferenceServer server, String json) throws Exception {
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            return client.send(request(server, "POST", "/v2/models/mlp/infer", json.getBytes(StandardCharsets.UTF_8))
                    .build(), HttpResponse.BodyHandlers.ofByteArray());
        }
    }

    static HttpResponse<byte[]> send(InferenceServer server, String method, String path, byte[] body,
            String... headers) throws Exception {
        HttpRequest.Builder request = request(server, method, path, body);
        if (headers.length > 0) {
            request.headers(headers);
        }
        return CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    private static HttpRequest.Builder request(InferenceServer server, String method, String path, byte[] body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(body));
    }

    static JsonNode json(HttpResponse<byte[]> response) throws IOException {
        return JSON.readTree(response.body());
    }

    static String error(HttpResponse<byte[]> response) throws IOException {
        return json(response).path("error").asText();
    }

    /** A JSON request of {@code rows} rows of {@code values}, flat. */
    static String request(int rows, int width, float... values) {
        return request("FP32", rows, width, values);
    }

    /** A JSON request of {@code rows} rows of {@code values} of {@code datatype}, flat. */
    static String request(String datatype, int rows, int width, float... values) {
        StringBuilder data = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            data.append(i == 0 ? "" : ",").append(values[i]);
        }
        return "{\"inputs\":[{\"name\":\"input\",\"datatype\":\"" + datatype + "\",\"shape\":[" + rows + ","
                + width + "],\"data\":[" + data + "]}]}";
    }

    /** A binary-tensor-data body: the JSON header, then the rows in little-endian FP32. */
    static byte[] binaryBody(String json, float[] rows) {
        byte[] header = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer body = ByteBuffer.allocate(header.length + rows.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        body.put(header).asFloatBuffer().put(rows);
        return body.array();
    }

    /** A binary-tensor-data body: the JSON header, then the rows' FP16 or BF16 bits, little-endian. */
    static byte[] binaryBody(String json, short[] rows) {
        byte[] header = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer body = ByteBuffer.allocate(header.length + rows.length * Short.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        body.put(header).asShortBuffer().put(rows);
        return body.array();
    }

    /** What a raw exchange got back: the status (-1 if the connection closed with none) and how long it took. */
    record Raw(int status, String head, long millis) {}

    /**
     * Sends {@code request} bytes as they are on a new connection and reads the answer's status line
     * (the connection is closed after at most {@code timeout}).
     */
    static Raw raw(int port, byte[] request, Duration timeout) throws IOException {
        long start = System.nanoTime();
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            socket.setSoTimeout((int) timeout.toMillis());
            OutputStream out = socket.getOutputStream();
            try {
                out.write(request);
                out.flush();
                socket.shutdownOutput();
            } catch (IOException e) {
                // The server may answer and close before taking every byte: read what it said.
            }
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            try {
                int b;
                while ((b = in.read()) >= 0 && head.size() < 4096) {
                    head.write(b);
                    if (head.size() >= 4 && head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
                        break;
                    }
                }
            } catch (SocketTimeoutException e) {
                return new Raw(-2, head.toString(StandardCharsets.ISO_8859_1), (System.nanoTime() - start) / 1_000_000);
            } catch (IOException e) {
                // reset by the server: no answer
            }
            String text = head.toString(StandardCharsets.ISO_8859_1);
            int status = -1;
            if (text.startsWith("HTTP/1.1 ") && text.length() >= 12) {
                status = Integer.parseInt(text.substring(9, 12));
            }
            return new Raw(status, text.toLowerCase(Locale.ROOT), (System.nanoTime() - start) / 1_000_000);
        }
    }

    /**
     * Sends {@code request} on a new connection and returns everything the server sent until it
     * closed the connection (a reset after the answer counts as closed); fails if the connection stays
     * open 10 s.
     */
    static String untilClosed(int port, String request) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            byte[] buffer = new byte[4096];
            try {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    answer.write(buffer, 0, n);
                }
            } catch (SocketTimeoutException e) {
                throw new AssertionError("the connection stayed open after: "
                        + answer.toString(StandardCharsets.ISO_8859_1), e);
            } catch (IOException e) {
                // reset after the answer: closed
            }
            return answer.toString(StandardCharsets.ISO_8859_1);
        }
    }
}
