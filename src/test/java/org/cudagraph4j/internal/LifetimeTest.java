package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LifetimeTest {
    private final AtomicInteger frees = new AtomicInteger();
    private final Lifetime lifetime = new Lifetime("test resource", frees::incrementAndGet);

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
    void retainedSetHoldsEachResourceOnceHoweverOftenAdded() {
        RetainedSet set = new RetainedSet();
        for (int i = 0; i < 1000; i++) {
            set.add(lifetime);
        }
        lifetime.close();
        assertEquals(0, frees.get());
        set.releaseAll();
        assertEquals(1, frees.get(), "one release frees it: it was retained once");
    }

    @Test
    void adoptingADuplicateReleasesTheExtraReference() {
        RetainedSet set = new RetainedSet();
        set.add(lifetime);
        lifetime.retain();
        set.adopt(List.of(lifetime));
        lifetime.close();
        set.releaseAll();
        assertEquals(1, frees.get());
    }
}
