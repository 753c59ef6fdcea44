package org.cudagraph4j.benchmarks;

import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * Open-loop arrivals for the load generators: a Poisson process of intended arrival times that
 * does not wait for answers, so latency measured from each intended arrival includes any queueing
 * a stalled server causes (no coordinated omission).
 */
public final class OpenLoop {
    private OpenLoop() {}

    /**
     * The intended arrival after {@code previous}: an exponential gap of mean {@code 1 / perSecond}.
     *
     * @param previous the previous arrival, in {@link System#nanoTime()} nanoseconds
     * @param perSecond the offered rate
     * @param random the source of the gaps
     * @return the next arrival, in nanoseconds
     */
    public static double next(double previous, double perSecond, SplittableRandom random) {
        return previous - Math.log(1 - random.nextDouble()) * 1e9 / perSecond;
    }

    /**
     * Waits until {@link System#nanoTime()} reaches {@code arrival}: parked while far, spinning for the last tens of
     * µs, which parking cannot hit.
     *
     * @param arrival the intended arrival, in nanoseconds
     */
    public static void await(long arrival) {
        long wait = arrival - System.nanoTime();
        if (wait > 50_000) {
            LockSupport.parkNanos(wait - 20_000);
        }
        while (System.nanoTime() < arrival) {
            Thread.onSpinWait();
        }
    }
}
