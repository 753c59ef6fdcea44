package org.cudagraph4j.internal.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.cudagraph4j.LogCapture;
import org.junit.jupiter.api.Test;

class LifetimeTest {
    private final AtomicInteger frees = new AtomicInteger();
    private final Lifetime lifetime = new Lifetime(LiveCounters.Kind.EVENT, 0, "test resource", frees::incrementAndGet);

    @Test
    void closeIsIdempotentAndFreesOnce() {
        lifetime.close();
        lifetime.close();
        assertEquals(1, frees.get());
        assertFalse(lifetime.isOpen());
        IllegalStateException e = assertThrows(IllegalStateException.class, lifetime::ensureOpen);
        assertEquals("test resource is closed", e.getMessage());
    }

    @Test
    void aRetainedResourceOutlivesItsOwnersClose() {
        lifetime.retain();
        lifetime.close();
        assertEquals(0, frees.get(), "still retained");
        lifetime.release();
        assertEquals(1, frees.get());
    }

    @Test
    void nothingCanBeRetainedAfterClose() {
        lifetime.close();
        assertThrows(IllegalStateException.class, lifetime::retain);
    }

    @Test
    void aHolderRetainsEachResourceOnceAndReleasesItWithTheLastUse() {
        HeldResources held = new HeldResources();
        for (int i = 0; i < 1000; i++) {
            held.hold(List.of(lifetime));
        }
        lifetime.close();
        held.drop(Collections.nCopies(999, lifetime));
        assertEquals(0, frees.get(), "one use is left");
        held.drop(List.of(lifetime));
        assertEquals(1, frees.get(), "the last use frees it: it was retained once");
    }

    @Test
    void aHolderOfManyResourcesReleasesEachWithItsOwnLastUse() {
        int resources = 40; // past the few a holder finds by scanning
        AtomicInteger[] freed = new AtomicInteger[resources];
        List<Lifetime> all = new ArrayList<>();
        for (int i = 0; i < resources; i++) {
            AtomicInteger count = new AtomicInteger();
            freed[i] = count;
            all.add(new Lifetime(LiveCounters.Kind.EVENT, 0, "resource " + i, count::incrementAndGet));
        }
        HeldResources held = new HeldResources();
        held.hold(all);
        held.hold(all.subList(0, resources / 2));
        all.forEach(Lifetime::close);
        assertEquals(resources, held.distinct().size());
        for (int i = resources - 1; i >= 0; i -= 2) { // every other one, so that entries move
            held.drop(List.of(all.get(i)));
        }
        for (int i = 0; i < resources; i++) {
            int expected = i % 2 == 1 && i >= resources / 2 ? 1 : 0;
            assertEquals(expected, freed[i].get(), "resource " + i);
        }
        assertEquals(2, held.counts().get(all.get(0)), "held twice, dropped never");
        assertEquals(1, held.counts().get(all.get(1)), "held twice, dropped once");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> held.drop(List.of(all.get(resources - 1))));
        assertEquals("resource 39 is not held", e.getMessage());
        held.dropAll();
        for (int i = 0; i < resources; i++) {
            assertEquals(1, freed[i].get(), "resource " + i + " is freed exactly once");
        }
    }

    @Test
    void aHolderCanPassOnAResourceWhoseOwnerClosed() {
        HeldResources graph = new HeldResources();
        graph.hold(List.of(lifetime));
        lifetime.close();
        HeldResources executable = new HeldResources();
        executable.hold(List.of(lifetime));
        graph.dropAll();
        assertEquals(0, frees.get(), "the executable still holds it");
        executable.dropAll();
        assertEquals(1, frees.get());
    }

    @Test
    void holdingIsAllOrNothing() {
        Lifetime freed = new Lifetime(LiveCounters.Kind.EVENT, 0, "freed resource", () -> {});
        freed.close();
        HeldResources held = new HeldResources();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> held.hold(List.of(lifetime, freed)));
        assertEquals("freed resource is closed", e.getMessage());
        lifetime.close();
        assertEquals(1, frees.get(), "the partial hold was rolled back");
    }

    @Test
    void countedUsesMoveBetweenHoldersAsTheirUseCountsAndReleaseWithTheLast() {
        AtomicInteger otherFrees = new AtomicInteger();
        Lifetime other = new Lifetime(LiveCounters.Kind.EVENT, 0, "other resource", otherFrees::incrementAndGet);
        HeldResources graph = new HeldResources();
        graph.hold(Collections.nCopies(1000, lifetime));
        graph.hold(List.of(other, other));
        assertEquals(Map.of(lifetime, 1000, other, 2), graph.counts());

        HeldResources executable = new HeldResources();
        executable.holdCounts(graph.counts());
        graph.dropAll();
        lifetime.close();
        other.close();
        assertEquals(0, frees.get() + otherFrees.get(), "the executable holds both");
        executable.dropCounts(Map.of(other, 2));
        assertEquals(1, otherFrees.get(), "its last use dropped");
        executable.dropCounts(Map.of(lifetime, 999));
        assertEquals(0, frees.get(), "one use is left");
        assertThrows(IllegalStateException.class, () -> executable.dropCounts(Map.of(lifetime, 2)),
                "more uses than are held");
        executable.dropCounts(Map.of(lifetime, 1));
        assertEquals(1, frees.get());
    }

    @Test
    void holdingCountsIsAllOrNothing() {
        Lifetime freed = new Lifetime(LiveCounters.Kind.EVENT, 0, "freed resource", () -> {});
        freed.close();
        Map<Lifetime, Integer> counts = new LinkedHashMap<>();
        counts.put(lifetime, 3);
        counts.put(freed, 1);
        HeldResources held = new HeldResources();
        assertThrows(IllegalStateException.class, () -> held.holdCounts(counts));
        assertEquals(Map.of(), held.counts());
        lifetime.close();
        assertEquals(1, frees.get(), "the partial hold was rolled back");
    }

    @Test
    void liveCountsFollowTheNativeResourceNotTheOwner() {
        long before = LiveCounters.count(LiveCounters.Kind.PINNED_BUFFER);
        long bytesBefore = LiveCounters.bytes(LiveCounters.Kind.PINNED_BUFFER);
        Lifetime pinned = new Lifetime(LiveCounters.Kind.PINNED_BUFFER, 4096, "pinned", () -> {});
        assertEquals(before + 1, LiveCounters.count(LiveCounters.Kind.PINNED_BUFFER));
        assertEquals(bytesBefore + 4096, LiveCounters.bytes(LiveCounters.Kind.PINNED_BUFFER));
        pinned.retain();
        pinned.close();
        assertEquals(before + 1, LiveCounters.count(LiveCounters.Kind.PINNED_BUFFER), "still retained");
        pinned.release();
        assertEquals(before, LiveCounters.count(LiveCounters.Kind.PINNED_BUFFER));
        assertEquals(bytesBefore, LiveCounters.bytes(LiveCounters.Kind.PINNED_BUFFER));
    }

    @Test
    void anUnreachableOwnerIsFreedByTheCleaner() throws InterruptedException {
        AtomicInteger cleanerFrees = new AtomicInteger();
        Lifetime forgotten = new Lifetime(LiveCounters.Kind.EVENT, 0, "forgotten resource", cleanerFrees::incrementAndGet);
        try (LogCapture log = LogCapture.of("org.cudagraph4j")) {
            forgotten.watch(new Object());
            for (int i = 0; i < 200 && cleanerFrees.get() == 0; i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertEquals(1, cleanerFrees.get());
            // One warning, before the cleaner frees it (what other tests forgot may be warned of meanwhile).
            List<String> warnings = log.warnings().stream().map(LogCapture.Warning::message)
                    .filter(message -> message.startsWith("forgotten resource ")).toList();
            assertEquals(List.of("forgotten resource was never closed; the cleaner frees it. Close it explicitly"
                    + " (run with -D" + Lifetime.TRACK_PROPERTY + "=true to see where it was created)"), warnings);
        }
        assertFalse(forgotten.isOpen());
        forgotten.close();
        assertEquals(1, cleanerFrees.get(), "close after the cleaner does nothing");
    }

    @Test
    void anExplicitCloseDisarmsTheCleaner() throws InterruptedException {
        lifetime.watch(new Object());
        lifetime.close();
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(5);
        }
        assertEquals(1, frees.get(), "freed once, by close, not again by the cleaner");
    }
}
