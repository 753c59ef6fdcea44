package org.cudagraph4j.benchmarks.server;

import java.time.Duration;
import java.util.Objects;

/**
 * What the inference server takes from its clients before it refuses: each limit is checked before
 * anything is allocated or queued for it, and each refusal names the limit (and its option).
 *
 * @param maxBodyBytes the largest request body; a larger one is a {@code 413} ({@code --max-body-bytes})
 * @param maxBufferedBytes request-body bytes held by all requests at once, read or being read; past it
 *     a request is a {@code 503} ({@code --max-buffered-bytes}), which bounds the heap that bodies take
 * @param maxRows rows per request; more is a {@code 400} ({@code --max-rows})
 * @param maxElements values per request; more is a {@code 400} ({@code --max-elements})
 * @param maxInFlight inference requests being read, queued or computed at once; past it a {@code 503}
 *     ({@code --max-in-flight}). An HTTP/1.1 connection carries one request at a time, so this is also
 *     the most connections that can hold the engine's attention
 * @param maxConnections TCP connections open at once; past it new ones wait in the listen backlog
 *     ({@code --max-connections}). A client that opens a connection and never finishes its headers
 *     holds one of these, and nothing else
 * @param requestTimeout how long a request may wait for its answer once read; then a {@code 503}, and
 *     its rows are dropped from the engine's queue ({@code --request-timeout})
 * @param readTimeout how long a request's body may take to arrive; past it the connection is closed
 *     and the request counted as a {@code 408}, its in-flight slot and buffered bytes given back
 *     ({@code --read-timeout})
 * @param shutdownTimeout how long a stop lets requests in flight finish before it answers the rest
 *     with {@code 503} ({@code --shutdown-timeout})
 */
public record ServerLimits(long maxBodyBytes, long maxBufferedBytes, int maxRows, long maxElements,
        int maxInFlight, int maxConnections, Duration requestTimeout, Duration readTimeout, Duration shutdownTimeout) {

    /**
     * Checks the limits.
     *
     * @throws IllegalArgumentException naming the first limit that is out of range
     * @throws NullPointerException if a duration is null
     */
    public ServerLimits {
        positive("maxBodyBytes", maxBodyBytes);
        positive("maxBufferedBytes", maxBufferedBytes);
        positive("maxRows", maxRows);
        positive("maxElements", maxElements);
        positive("maxInFlight", maxInFlight);
        positive("maxConnections", maxConnections);
        positive("requestTimeout", Objects.requireNonNull(requestTimeout, "requestTimeout").toNanos());
        positive("readTimeout", Objects.requireNonNull(readTimeout, "readTimeout").toNanos());
        if (Objects.requireNonNull(shutdownTimeout, "shutdownTimeout").isNegative()) {
            throw new IllegalArgumentException("shutdownTimeout must not be negative, got " + shutdownTimeout);
        }
        if (maxBodyBytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("maxBodyBytes must fit in one Java array, got " + maxBodyBytes);
        }
        if (maxBufferedBytes < maxBodyBytes) {
            throw new IllegalArgumentException("maxBufferedBytes (" + maxBufferedBytes + ") must hold at least one "
                    + "body of maxBodyBytes (" + maxBodyBytes + ")");
        }
    }

    private static void positive(String name, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }

    /**
     * The defaults: 8 MiB bodies, 256 MiB of bodies at once, 4,096 rows and 4 Mi values per request,
     * 1,024 requests in flight, 10,000 connections, 60 s to answer, 30 s for a body to arrive, 10 s
     * to drain on stop.
     *
     * @return them
     */
    public static ServerLimits defaults() {
        return new ServerLimits(8L << 20, 256L << 20, 4096, 4L << 20, 1024, 10_000, Duration.ofSeconds(60),
                Duration.ofSeconds(30), Duration.ofSeconds(10));
    }

    /**
     * These limits with another body limit, and room for 32 such bodies at once.
     *
     * @param bytes the largest request body
     * @return the new limits
     */
    public ServerLimits withMaxBodyBytes(long bytes) {
        return new ServerLimits(bytes, Math.max(maxBufferedBytes, 32 * bytes), maxRows, maxElements, maxInFlight,
                maxConnections, requestTimeout, readTimeout, shutdownTimeout);
    }
}
