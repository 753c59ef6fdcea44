package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** Runtime calls that return their result through one out-parameter: allocated, checked, read. */
final class Out {
    /** One call; {@code arena} is confined scratch for any other arguments it needs. */
    @FunctionalInterface
    interface Call {
        int invoke(Arena arena, MemorySegment out);
    }

    private Out() {}

    static MemorySegment pointer(String function, String context, Call call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Status.check(call.invoke(arena, out), function, context);
            return out.get(ADDRESS, 0);
        }
    }

    static int intValue(String function, String context, Call call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            Status.check(call.invoke(arena, out), function, context);
            return out.get(JAVA_INT, 0);
        }
    }

    static long longValue(String function, String context, Call call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            Status.check(call.invoke(arena, out), function, context);
            return out.get(JAVA_LONG, 0);
        }
    }
}
