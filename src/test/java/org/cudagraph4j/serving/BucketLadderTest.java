package org.cudagraph4j.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class BucketLadderTest {
    @Test
    void aBatchRunsOnTheSmallestBucketThatHoldsIt() {
        BucketLadder ladder = BucketLadder.of(8, 1, 4, 2);
        assertEquals(List.of(1, 2, 4, 8), ladder.sizes());
        assertEquals(1, ladder.bucketFor(1));
        assertEquals(4, ladder.bucketFor(3));
        assertEquals(8, ladder.bucketFor(5));
        assertEquals(8, ladder.bucketFor(8));
        IllegalArgumentException above = assertThrows(IllegalArgumentException.class, () -> ladder.bucketFor(9));
        assertEquals("a batch has 1 to 8 rows here, got 9", above.getMessage());
    }

    @Test
    void theDefaultLadderIsVllms() {
        List<Integer> sizes = BucketLadder.defaultLadder().sizes();
        assertEquals(35, sizes.size());
        assertEquals(List.of(1, 2, 4, 8, 16, 24), sizes.subList(0, 6));
        assertEquals(256, BucketLadder.defaultLadder().largest());
        assertThrows(IllegalArgumentException.class, () -> BucketLadder.powersThenStepsOf8(12));
    }

    @Test
    void aRequestAboveTheLargestBucketIsSplitInOrder() {
        BucketLadder ladder = BucketLadder.of(1, 2, 4, 8, 16, 32, 64);
        assertEquals(List.of(64, 64, 22), ladder.pieces(150));
        assertEquals(List.of(7), ladder.pieces(7));
        assertEquals(List.of(64), ladder.pieces(64));
    }

    @Test
    void badLaddersAndOptionsAreNamed() {
        assertEquals("bucket size 4 is given twice",
                assertThrows(IllegalArgumentException.class, () -> BucketLadder.of(4, 2, 4)).getMessage());
        assertEquals("bucket sizes must be at least 1, got 0",
                assertThrows(IllegalArgumentException.class, () -> BucketLadder.of(0, 2)).getMessage());
        assertThrows(IllegalArgumentException.class, BucketLadder::of);
        ServingOptions defaults = ServingOptions.defaults();
        assertThrows(IllegalArgumentException.class, () -> defaults.withLanes(0));
        assertThrows(IllegalArgumentException.class, () -> defaults.withQueueCapacity(0));
        assertThrows(IllegalArgumentException.class, () -> defaults.withRequestTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> defaults.withMaxWait(Duration.ofMillis(-1)));
    }

    @Test
    void graphArchivesAreOffByDefaultAndKeptThroughTheOtherWithers() {
        ServingOptions defaults = ServingOptions.defaults();
        assertEquals(null, defaults.graphArchives());
        Path dir = Path.of("archives");
        ServingOptions kept = defaults.withGraphArchives(dir).withLanes(3).withMaxWait(Duration.ZERO);
        assertEquals(dir, kept.graphArchives());
        assertEquals(3, kept.lanes());
        assertEquals(null, kept.withGraphArchives(null).graphArchives());
        assertEquals(defaults, new ServingOptions(defaults.ladder(), defaults.capturePolicy(), defaults.maxWait(),
                defaults.queueCapacity(), defaults.lanes(), defaults.requestTimeout(), defaults.closeTimeout()));
    }

    @Test
    void latencyPercentilesAreWithinTheirBucket() {
        LatencyHistogram histogram = new LatencyHistogram();
        for (int micros = 1; micros <= 1000; micros++) {
            histogram.record(micros);
        }
        assertEquals(500, histogram.percentile(0.5), 500 * 0.07);
        assertEquals(990, histogram.percentile(0.99), 990 * 0.07);
        assertEquals(0, new LatencyHistogram().percentile(0.5));
        for (long v : new long[] {0, 1, 15, 16, 17, 31, 32, 33, 1000, 123_456_789}) {
            long upper = LatencyHistogram.upperBound(LatencyHistogram.index(v));
            assertEquals(true, upper >= v && upper <= Math.max(v, 16) * 1.07, v + " -> " + upper);
        }
    }
}
