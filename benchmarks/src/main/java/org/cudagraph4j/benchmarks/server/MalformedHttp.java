package org.cudagraph4j.benchmarks.server;

import io.helidon.http.DirectHandler;
import io.helidon.http.HeaderNames;
import io.helidon.http.ServerResponseHeaders;
import io.helidon.http.Status;
import io.helidon.webserver.http.DirectHandlers;

/**
 * Answers for what Helidon refuses before routing (a request line, a header or a framing it cannot
 * parse): the protocol's JSON error, and the connection closed. Helidon answers some of these, such
 * as an invalid method token, with an empty {@code 500}; coming from the request's own bytes, each
 * is a client error here, a {@code 400} unless Helidon named another 4xx.
 */
final class MalformedHttp implements DirectHandler {
    static DirectHandlers handlers() {
        DirectHandlers.Builder handlers = DirectHandlers.builder();
        MalformedHttp handler = new MalformedHttp();
        for (EventType type : EventType.values()) {
            handlers.addHandler(type, handler);
        }
        return handlers.build();
    }

    @Override
    public TransportResponse handle(TransportRequest request, EventType eventType, Status status,
            ServerResponseHeaders headers, String message) {
        Status answered = status.code() >= 400 && status.code() < 500 ? status : Status.BAD_REQUEST_400;
        String reason = message == null || message.isBlank() ? answered.reasonPhrase() : message;
        return TransportResponse.builder()
                .status(answered)
                .headers(headers)
                .header(HeaderNames.CONTENT_TYPE, "application/json")
                .keepAlive(false)
                .entity(KServeProtocol.error("malformed HTTP request: " + reason))
                .build();
    }
}
