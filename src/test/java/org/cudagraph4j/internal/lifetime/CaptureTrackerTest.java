package org.cudagraph4j.internal.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The capture bookkeeping each stream holds in its slot; no GPU needed. */
class CaptureTrackerTest {
    private final CaptureTracker.Slot stream = new CaptureTracker.Slot(MemorySegment.ofAddress(0x1000));
    private final CaptureTracker.Slot forked = new CaptureTracker.Slot(MemorySegment.ofAddress(0x2000));

    @Test
    void aCaptureIntoAnExistingGraphSharesItsMemoryAndHandsOverWithoutClosingIt() {
        GraphAllocations graphMemory = new GraphAllocations();
        Lifetime view = new Lifetime(LiveCounters.Kind.DEVICE_BUFFER, 0, "the graph's own allocation", () -> { });
        graphMemory.allocated(view);
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture into a graph", String.class,
                graphMemory, false);
        assertSame(graphMemory, capture.allocations(), "the captured work may use the graph's memory");
        synchronized (stream) {
            assertTrue(capture.needsFirstNode(stream), "after nodes of the graph, the first node is asked for");
        }
        capture.handOver().dropAll();
        assertSame(null, CaptureTracker.of(stream));
        assertTrue(view.isOpen(), "the graph's allocation is still the graph's");
        capture.releaseAll(); // after handOver: nothing
        assertTrue(view.isOpen());
        graphMemory.closeViews();
    }

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
    void launchesAreHeldUntilHandedOverAndTheirRunsComeBackInOrder() {
        AtomicInteger frees = new AtomicInteger();
        Lifetime library = new Lifetime(LiveCounters.Kind.EVENT, 0, "library", frees::incrementAndGet);
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        CaptureTracker.join(forked, capture);
        assertFalse(capture.needsFirstNode(stream), "the stream that began the capture has no dependencies yet");
        assertTrue(capture.needsFirstNode(forked), "a stream that joined depends on another's nodes");
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(library), "launch 1");
        capture.recordKernelLaunch(forked, 0x30, List.of(library), "launch 2");
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(library), "launch 3");
        assertFalse(capture.needsFirstNode(stream), "a run is open");
        capture.endRun(stream, 0x20);
        assertTrue(capture.needsFirstNode(stream), "after a run ends, the next one starts at a known node");
        capture.endRun(forked, 0x30);
        CaptureTracker.end(capture);
        Chain chain = new Chain(Map.of(0x20L, 0x10L), Set.of(0x10L, 0x20L, 0x30L));
        assertEquals(List.of(List.of(0x10L, 0x20L), List.of(0x30L)), capture.runs().stream()
                .map(run -> run.resolve(chain).stream().map(CaptureTracker.KernelNode::node).toList()).toList());
        assertThrows(ClassCastException.class, () -> capture.recordKernelLaunch(stream, 0, List.of(library), 42),
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

    @Test
    void aRunAtTheCaptureStartPassesOverOtherNodesToTheRoot() {
        // memset 1 <- kernel 2 <- copy 3 <- kernel 4 <- kernel 5 <- memset 6
        Chain chain = new Chain(Map.of(2L, 1L, 3L, 2L, 4L, 3L, 5L, 4L, 6L, 5L), Set.of(2L, 4L, 5L));
        assertEquals(List.of(2L, 4L, 5L), nodes(runAtStart(3, 6), chain));
        assertEquals(List.of(), nodes(runAtStart(2, 6), chain), "a kernel before the run's first launch");
        assertEquals(List.of(), nodes(runAtStart(4, 6), chain), "fewer kernel nodes than launches");
    }

    @Test
    void aRunFromAKnownNodeMustMeetItAfterOneKernelPerLaunch() {
        // kernel 10 <- kernel 11 <- empty 12 <- kernel 13
        Chain chain = new Chain(Map.of(11L, 10L, 12L, 11L, 13L, 12L), Set.of(10L, 11L, 13L));
        assertEquals(List.of(10L, 11L, 13L), nodes(runFrom(10, 3, 13), chain));
        assertEquals(List.of(), nodes(runFrom(11, 3, 13), chain), "another kernel between the first and the rest");
        assertEquals(List.of(13L), nodes(runFrom(13, 1, 13), chain), "a run of one launch is its first node");
        assertEquals(List.of(), nodes(runFrom(10, 3, CaptureTracker.NO_NODE), chain), "no single last node");
        assertEquals(List.of(), nodes(runFrom(CaptureTracker.UNKNOWN_NODE, 3, 13), chain), "no first node");
    }

    @Test
    void aNodeWithSeveralDependenciesOnTheWayLeavesTheRunUnresolved() {
        Chain chain = new Chain(Map.of(11L, 10L, 12L, CaptureTracker.UNKNOWN_NODE), Set.of(10L, 11L, 12L));
        assertEquals(List.of(), nodes(runFrom(10, 3, 12), chain));
    }

    @Test
    void anUnrecordedLaunchTakesItsNodeButIsNotReturned() {
        Chain chain = new Chain(Map.of(2L, 1L, 3L, 2L), Set.of(1L, 2L, 3L));
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(), "launch 1");
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(), null); // a cluster launch
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(), "launch 3");
        capture.endRun(stream, 3);
        CaptureTracker.end(capture);
        List<CaptureTracker.KernelNode<String>> resolved = capture.runs().getFirst().resolve(chain);
        assertEquals(List.of(1L, 3L), resolved.stream().map(CaptureTracker.KernelNode::node).toList());
        assertEquals(List.of("launch 1", "launch 3"), resolved.stream().map(CaptureTracker.KernelNode::launch).toList());
    }

    @Test
    void aCaptureOfOneStreamEndsItsRunAtTheGraphsOnlySinkWithoutAsking() {
        // memset 1 <- kernel 2 <- kernel 3 <- copy 4
        Chain chain = new Chain(Map.of(2L, 1L, 3L, 2L, 4L, 3L), Set.of(2L, 3L));
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(), "launch 1");
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(), "launch 2");
        capture.endRuns(slotStream -> fail("a capture of one stream asks for no last node"));
        CaptureTracker.end(capture);
        CaptureTracker.Run<String> run = capture.runs().getFirst();
        assertEquals(List.of(2L, 3L), nodes(run, chain));
        Chain twoSinks = new Chain(Map.of(2L, 1L, 3L, 2L, 5L, 1L), Set.of(2L, 3L));
        assertEquals(List.of(), nodes(run, twoSinks), "no single sink: the last node is not known");
    }

    @Test
    void aCaptureThatAnotherStreamJoinedAsksEachStreamForItsLastNode() {
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        CaptureTracker.join(forked, capture);
        capture.recordKernelLaunch(forked, 10, List.of(), "launch 1");
        capture.recordKernelLaunch(forked, 10, List.of(), "launch 2");
        List<MemorySegment> asked = new ArrayList<>();
        capture.endRuns(slotStream -> {
            asked.add(slotStream);
            return 11;
        });
        CaptureTracker.end(capture);
        assertEquals(List.of(forked.stream()), asked, "only a stream with an open run is asked");
        Chain chain = new Chain(Map.of(11L, 10L, 12L, 11L), Set.of(10L, 11L));
        assertEquals(List.of(10L, 11L), nodes(capture.runs().getFirst(), chain));
    }

    @Test
    void aRunThatAnotherLibrarysKernelsInterleaveIsMatchedKernelByKernel() {
        // foreign 1 <- launch 0 at 2 <- foreign 3 <- memset 4 <- launch 1 at 5 <- foreign 6
        Chain chain = new Chain(Map.of(2L, 1L, 3L, 2L, 4L, 3L, 5L, 4L, 6L, 5L), Set.of(1L, 2L, 3L, 5L, 6L));
        CaptureTracker.LaunchMatcher<String> matcher = launchedAt(Map.of(2L, "launch 0", 5L, "launch 1"));
        CaptureTracker.Run<String> run = runAtStart(2, 6);
        assertEquals(List.of(), nodes(run, chain), "the plain walk takes no foreign kernel for a launch");
        List<CaptureTracker.KernelNode<String>> resolved = run.resolve(chain, matcher);
        assertEquals(List.of(2L, 5L), resolved.stream().map(CaptureTracker.KernelNode::node).toList());
        assertEquals(List.of("launch 0", "launch 1"), resolved.stream().map(CaptureTracker.KernelNode::launch).toList());
    }

    @Test
    void aRunFromAKnownNodeIsMatchedPastForeignKernelsToThatNode() {
        // launch 0 at 10 <- foreign 11 <- launch 1 at 12
        Chain chain = new Chain(Map.of(11L, 10L, 12L, 11L), Set.of(10L, 11L, 12L));
        CaptureTracker.Run<String> run = runFrom(10, 2, 12);
        assertEquals(List.of(10L, 12L), run.resolve(chain, launchedAt(Map.of(10L, "launch 0", 12L, "launch 1")))
                .stream().map(CaptureTracker.KernelNode::node).toList());
        Chain elsewhere = new Chain(Map.of(11L, 9L, 12L, 11L), Set.of(9L, 11L, 12L));
        assertEquals(List.of(), runFrom(10, 2, 12).resolve(elsewhere, launchedAt(Map.of(12L, "launch 1"))),
                "the walk must end at the run's first node");
    }

    @Test
    void aLaunchWhoseKernelIsNotFoundLeavesTheInterleavedRunUnresolved() {
        // foreign 1 <- launch 0 at 2 <- foreign 3
        Chain chain = new Chain(Map.of(2L, 1L, 3L, 2L), Set.of(1L, 2L, 3L));
        assertEquals(List.of(), runAtStart(2, 3).resolve(chain, launchedAt(Map.of(2L, "launch 1"))),
                "launch 0's kernel is at no node");
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        capture.recordKernelLaunch(stream, CaptureTracker.UNKNOWN_NODE, List.of(), null);
        capture.endRun(stream, 3);
        CaptureTracker.end(capture);
        assertEquals(List.of(), capture.runs().getFirst().resolve(chain, (node, launch) -> true),
                "a launch the library does not record cannot be matched");
    }

    @Test
    void wrappersOfOneForeignStreamShareItsSlotUntilAStreamIsCreatedThere() {
        MemorySegment handle = MemorySegment.ofAddress(0x7000);
        CaptureTracker.Slot first = CaptureTracker.sharedSlot(handle);
        assertSame(first, CaptureTracker.sharedSlot(handle));
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(first, "capture A", String.class);
        assertSame(capture, CaptureTracker.of(CaptureTracker.sharedSlot(handle)), "a second wrapper sees the capture");
        CaptureTracker.end(capture);
        CaptureTracker.Slot owned = CaptureTracker.ownSlot(handle); // the lender destroyed it, the library made one there
        assertNotSame(first, owned);
        assertSame(owned, CaptureTracker.sharedSlot(handle), "a wrapper of the library's own stream shares its slot");
        CaptureTracker.retire(owned);
        assertNotSame(owned, CaptureTracker.sharedSlot(handle), "a destroyed stream's slot is not handed out again");
    }

    /** Matches a kernel node to the launch recorded at it, by the launch's description. */
    private static CaptureTracker.LaunchMatcher<String> launchedAt(Map<Long, String> launches) {
        return (node, launch) -> launch.equals(launches.get(node));
    }

    /** A run of {@code launches} that began the capture, ending at {@code last}. */
    private CaptureTracker.Run<String> runAtStart(int launches, long last) {
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        return run(capture, stream, CaptureTracker.UNKNOWN_NODE, launches, last);
    }

    /** A run of {@code launches} of a stream that joined a capture, from {@code first} to {@code last}. */
    private CaptureTracker.Run<String> runFrom(long first, int launches, long last) {
        CaptureTracker.Capture<String> capture = CaptureTracker.begin(stream, "capture A", String.class);
        CaptureTracker.join(forked, capture);
        return run(capture, forked, first, launches, last);
    }

    private static CaptureTracker.Run<String> run(CaptureTracker.Capture<String> capture, CaptureTracker.Slot slot,
            long first, int launches, long last) {
        for (int i = 0; i < launches; i++) {
            capture.recordKernelLaunch(slot, first, List.of(), "launch " + i);
        }
        capture.endRun(slot, last);
        CaptureTracker.end(capture);
        return capture.runs().getFirst();
    }

    private static List<Long> nodes(CaptureTracker.Run<String> run, Chain chain) {
        return run.resolve(chain).stream().map(CaptureTracker.KernelNode::node).toList();
    }

    /** A graph given as each node's one dependency (none if absent) and its kernel nodes. */
    private record Chain(Map<Long, Long> dependency, Set<Long> kernels) implements CaptureTracker.Chain {
        @Override
        public long onlyDependency(long node) {
            return dependency.getOrDefault(node, CaptureTracker.NO_NODE);
        }

        @Override
        public boolean isKernel(long node) {
            return kernels.contains(node);
        }

        @Override
        public long onlySink() {
            Set<Long> nodes = new HashSet<>(kernels);
            nodes.addAll(dependency.keySet());
            nodes.addAll(dependency.values());
            nodes.removeAll(dependency.values());
            return nodes.size() == 1 ? nodes.iterator().next()
                    : nodes.isEmpty() ? CaptureTracker.NO_NODE : CaptureTracker.UNKNOWN_NODE;
        }
    }
}
