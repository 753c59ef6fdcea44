package org.cudagraph4j.internal.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The capture bookkeeping each stream holds in its slot; no GPU needed. */
class CaptureTrackerTest {
    private final CaptureTracker.Slot stream = new CaptureTracker.Slot();
    private final CaptureTracker.Slot forked = new CaptureTracker.Slot();

    @Test
    void aStreamRecordsIntoItsCaptureUntilItEnds() {
        assertNull(CaptureTracker.of(stream));
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        assertSame(capture, CaptureTracker.of(stream));
        assertTrue(CaptureTracker.describeRunning().contains("capture A"), CaptureTracker.describeRunning());
        CaptureTracker.end(capture);
        assertNull(CaptureTracker.of(stream));
        assertFalse(CaptureTracker.describeRunning().contains("capture A"), CaptureTracker.describeRunning());
    }

    @Test
    void aSecondCaptureOnACapturingStreamIsRefusedNamingTheFirst() {
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> CaptureTracker.begin(stream, "capture B", String.class));
            assertEquals("stream is already capturing: capture A", e.getMessage());
            assertSame(capture, CaptureTracker.of(stream), "the refused begin changed nothing");
        } finally {
            CaptureTracker.end(capture);
        }
    }

    @Test
    void aStreamThatJoinedLeavesWhenTheCaptureEnds() {
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        CaptureTracker.join(forked, capture);
        CaptureTracker.join(forked, capture); // waiting on a second event of the same capture
        assertSame(capture, CaptureTracker.of(forked));
        CaptureTracker.end(capture);
        assertNull(CaptureTracker.of(forked));
        assertNull(CaptureTracker.of(stream));
        CaptureTracker.end(CaptureTracker.begin(forked, "capture B", String.class)); // free for a capture of its own
    }

    @Test
    void waitingOnAnEventOfAnEndedCaptureJoinsNothing() {
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        CaptureTracker.end(capture);
        CaptureTracker.join(forked, capture);
        assertNull(CaptureTracker.of(forked));
    }

    @Test
    void kernelNodesComeBackInCaptureOrderAndTheirUsesAreHeldUntilHandedOver() {
        AtomicInteger frees = new AtomicInteger();
        Lifetime library = new Lifetime(LiveCounters.Kind.EVENT, 0, "library", frees::incrementAndGet);
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        capture.recordKernelNode(0x20, List.of(library), "launch 1");
        capture.recordKernelNode(0x10, List.of(library), "launch 2");
        CaptureTracker.end(capture);
        assertEquals(List.of(0x20L, 0x10L), capture.kernelNodes().stream().map(CaptureTracker.KernelNode::node)
                .toList());
        assertThrows(ClassCastException.class, () -> capture.recordKernelNode(0x30, List.of(library), 42),
                "a launch of another type than the capture began with");

        library.close();
        assertEquals(0, frees.get(), "the capture holds the library for its nodes");
        HeldResources graph = capture.handOver();
        capture.releaseAll();
        assertEquals(0, frees.get(), "handed to the graph, which holds it now");
        assertThrows(IllegalStateException.class, capture::handOver);
        graph.dropAll();
        assertEquals(1, frees.get());
    }
}
