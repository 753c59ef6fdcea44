package org.cudagraph4j.benchmarks.server;

import java.time.Duration;
import java.util.Objects;

/**
 * What the inference server takes from its clients before it refuses: each limit is checked before
 * anything is allocated or queued for it, and each refusal names the limit (and its option).
 *
 * @param maxBodyBytes the largest request body; a larger one is a {@code 413} ({@code --max-body-bytes})
 * @param maxBufferedBytes the memory all inference requests hold at once: each request's body as its
 *     bytes arrive, then, before it is parsed, an estimate of everything it will hold until its answer is
 *     written (the body, its parsed values and their copy, the output and the encoded answer, all
 *     reckoned from the body's size); past it a request is a {@code 503} ({@code --max-buffered-bytes})
 * @param maxRows rows per request; more is a {@code 400} ({@code --max-rows})
 * @param maxElements values per request; more is a {@code 400} ({@code --max-elements})
 * @param maxInFlight inference requests whose body has arrived, queued, computed or being answered
 *     at once; past it a {@code 503} ({@code --max-in-flight}). A request takes its slot only once its
 *     whole body has arrived, so clients that declare a body and send nothing hold none
 * @param maxConnections TCP connections open at once; past it new ones wait in the listen backlog
 *     ({@code --max-connections}). A connection that does not finish a request head within
 *     {@code headerTimeout} is closed, so idle and slow clients cannot keep these
 * @param requestTimeout how long a request may wait for its answer once read; then a {@code 503}, and
 *     its rows are dropped from the engine's queue ({@code --request-timeout})
 * @param readTimeout how long a request's body may take to arrive; past it the connection is closed
 *     and the request counted as a {@code 408}, its in-flight slot and buffered bytes given back
 *     ({@code --read-timeout})
 * @param shutdownTimeout how long a stop lets requests in flight finish before it answers the rest
 *     with {@code 503} ({@code --shutdown-timeout})
 * @param headerTimeout how long a connection may take to send a whole request head (request line and
 *     headers), counted from when the server starts waiting for it (a new connection, or the previous
 *     answer written); past it the connection is closed ({@code --header-timeout})
 * @param writeTimeout how long writing an answer may take; a client that does not read it past this
 *     loses its connection, and the request's slot and memory are given back ({@code --write-timeout})
 * @param computeThreads the platform threads that run the model on the CPU backend, apart from the
 *     threads that serve HTTP ({@code --compute-threads})
 */
public record ServerLimits(long maxBodyBytes, long maxBufferedBytes, int maxRows, long maxElements,
        int maxInFlight, int maxConnections, Duration requestTimeout, Duration readTimeout, Duration shutdownTimeout,
        Duration headerTimeout, Duration writeTimeout, int computeThreads) {

    /** The default {@code headerTimeout}. */
    static final Duration HEADER_TIMEOUT = Duration.ofSeconds(10);
    /** The default {@code writeTimeout}. */
    static final Duration WRITE_TIMEOUT = Duration.ofSeconds(30);

    /**
     * Limits with the default header and write timeouts, and a compute thread per processor.
     *
     * @throws IllegalArgumentException naming the first limit that is out of range
     */
    public ServerLimits(long maxBodyBytes, long maxBufferedBytes, int maxRows, long maxElements, int maxInFlight,
            int maxConnections, Duration requestTimeout, Duration readTimeout, Duration shutdownTimeout) {
        this(maxBodyBytes, maxBufferedBytes, maxRows, maxElements, maxInFlight, maxConnections, requestTimeout,
                readTimeout, shutdownTimeout, HEADER_TIMEOUT, WRITE_TIMEOUT, Runtime.getRuntime().availableProcessors());
    }

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
        positive("headerTimeout", Objects.requireNonNull(headerTimeout, "headerTimeout").toNanos());
        positive("writeTimeout", Objects.requireNonNull(writeTimeout, "writeTimeout").toNanos());
        positive("computeThreads", computeThreads);
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
     * The defaults: 8 MiB bodies, 256 MiB for requests in flight (at most half the heap), 4,096 rows and 4 Mi values per request,
     * 1,024 requests in flight, 10,000 connections, 60 s to answer, 30 s for a body to arrive, 10 s
     * to drain on stop, 10 s for a request head, 30 s to write an answer, a compute thread per processor.
     *
     * @return them
     */
    public static ServerLimits defaults() {
        return new ServerLimits(8L << 20, defaultBudget(), 4096, 4L << 20, 1024, 10_000, Duration.ofSeconds(60),
                Duration.ofSeconds(30), Duration.ofSeconds(10));
    }

    /**
     * The default {@code maxBufferedBytes}: 256 MiB, or half the heap this JVM may grow to where that
     * is less (and at least the default body limit, 8 MiB), so that requests at the budget leave the
     * server room to run.
     */
    private static long defaultBudget() {
        return Math.max(8L << 20, Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 2));
    }

    /**
     * These limits with another body limit, and room for 32 such bodies at once.
     *
     * @param bytes the largest request body
     * @return the new limits
     */
    public ServerLimits withMaxBodyBytes(long bytes) {
        return new ServerLimits(bytes, Math.max(maxBufferedBytes, 32 * bytes), maxRows, maxElements, maxInFlight,
                maxConnections, requestTimeout, readTimeout, shutdownTimeout, headerTimeout, writeTimeout,
                computeThreads);
    }

    /**
     * These limits with other header and write timeouts.
     *
     * @param header the new {@code headerTimeout}
     * @param write the new {@code writeTimeout}
     * @return the new limits
     */
    public ServerLimits withTimeouts(Duration header, Duration write) {
        return new ServerLimits(maxBodyBytes, maxBufferedBytes, maxRows, maxElements, maxInFlight, maxConnections,
                requestTimeout, readTimeout, shutdownTimeout, header, write, computeThreads);
    }

    /**
     * These limits with another number of compute threads.
     *
     * @param threads the new {@code computeThreads}
     * @return the new limits
     */
    public ServerLimits withComputeThreads(int threads) {
        return new ServerLimits(maxBodyBytes, maxBufferedBytes, maxRows, maxElements, maxInFlight, maxConnections,
                requestTimeout, readTimeout, shutdownTimeout, headerTimeout, writeTimeout, threads);
    }
}
