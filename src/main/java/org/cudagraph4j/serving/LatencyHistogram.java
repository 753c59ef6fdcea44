package org.cudagraph4j.serving;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Latencies in µs, counted in buckets of 1/16 of a power of two (so a percentile is within about
 * 6% of the true value), lock-free for concurrent recorders.
 */
final class LatencyHistogram {
    private static final int SUB_BUCKETS = 16;
    private static final int OCTAVES = 40;
    private final AtomicLongArray counts = new AtomicLongArray(OCTAVES * SUB_BUCKETS);

    void record(long micros) {
        counts.incrementAndGet(index(Math.max(0, micros)));
    }

    /** The value below which {@code fraction} of the recorded ones fall; 0 when none is recorded. */
    long percentile(double fraction) {
        long total = 0;
        for (int i = 0; i < counts.length(); i++) {
            total += counts.get(i);
        }
        if (total == 0) {
            return 0;
        }
        long rank = (long) Math.ceil(fraction * total);
        long seen = 0;
        for (int i = 0; i < counts.length(); i++) {
            seen += counts.get(i);
            if (seen >= rank) {
                return upperBound(i);
            }
        }
        return upperBound(counts.length() - 1);
    }

    static int index(long micros) {
        if (micros < SUB_BUCKETS) {
            return (int) micros;
        }
        int octave = 63 - Long.numberOfLeadingZeros(micros) - 3; // micros >= 16: octave >= 1
        int sub = (int) (micros >>> (octave - 1)) - SUB_BUCKETS;  // 0 .. 15
        return Math.min(OCTAVES * SUB_BUCKETS - 1, octave * SUB_BUCKETS + sub);
    }

    /** The largest value that falls in bucket {@code index}. */
    static long upperBound(int index) {
        if (index < SUB_BUCKETS) {
            return index;
        }
        int octave = index / SUB_BUCKETS;
        int sub = index % SUB_BUCKETS;
        return (((long) (SUB_BUCKETS + sub + 1)) << (octave - 1)) - 1;
    }
}
