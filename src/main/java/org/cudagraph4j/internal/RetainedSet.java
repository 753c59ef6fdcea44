package org.cudagraph4j.internal;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The resources an owner keeps alive, each retained once however often it is added, so that an
 * executable graph updated a million times holds as many references as distinct resources.
 * Thread-safe.
 */
public final class RetainedSet {
    private final Set<Lifetime> lifetimes = new LinkedHashSet<>();

    /** Retains {@code lifetime} unless this set already holds it. */
    public synchronized void add(Lifetime lifetime) {
        if (!lifetimes.contains(lifetime)) {
            lifetime.retain();
            lifetimes.add(lifetime);
        }
    }

    /** Takes over references the caller already retained; duplicates are released. */
    public synchronized void adopt(List<Lifetime> retained) {
        for (Lifetime lifetime : retained) {
            if (!lifetimes.add(lifetime)) {
                lifetime.release();
            }
        }
    }

    /** Retains everything {@code other} holds. */
    public void addAll(RetainedSet other) {
        for (Lifetime lifetime : other.snapshot()) {
            add(lifetime);
        }
    }

    /** Releases every reference held. */
    public synchronized void releaseAll() {
        lifetimes.forEach(Lifetime::release);
        lifetimes.clear();
    }

    private synchronized List<Lifetime> snapshot() {
        return new ArrayList<>(lifetimes);
    }
}
