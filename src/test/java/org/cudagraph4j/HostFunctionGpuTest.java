package org.cudagraph4j;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.EnableRefusals;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.GraphNodeType;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;

/**
 * Java callbacks in stream order and as graph host nodes: they run after the work before them, in
 * order, as often as launched; an exception they throw comes back at the stream's next
 * synchronization instead of ending the JVM; a CUDA call from inside one is refused; and what they
 * hold is let go with the last graph or executable (the leak check counts host functions).
 */
@GpuTest
class HostFunctionGpuTest {
    @Test
    void callbacksRunInStreamOrderAfterTheWorkBeforeThem() {
        CudaDevice device = TestData.device();
        int n = 4096;
        float[] values = TestData.randomFloats(n, TestData.newSeed());
        List<float[]> seen = new CopyOnWriteArrayList<>();
        List<Integer> order = new CopyOnWriteArrayList<>();
        try (CudaStream stream = device.createStream();
                DeviceBuffer buffer = TestData.upload(device, values);
                PinnedBuffer pinned = Cuda.allocatePinned((long) n * Float.BYTES)) {
            pinned.segment().fill((byte) 0x7f); // NaN-like poison the callback must not see
            buffer.copyToAsync(pinned.segment(), stream);
            stream.launchHostFunction(() -> seen.add(pinned.segment().toArray(JAVA_FLOAT)));
            for (int i = 0; i < 100; i++) {
                int index = i;
                stream.launchHostFunction(() -> order.add(index));
            }
            stream.synchronize();
        }
        assertEquals(1, seen.size());
        assertArrayEquals(values, seen.get(0), "the copy before the callback had completed");
        assertEquals(IntStream.range(0, 100).boxed().toList(), order);
    }

    @Test
    void anExceptionInACallbackIsRaisedByTheNextSynchronizationOnly() {
        CudaDevice device = TestData.device();
        AtomicInteger after = new AtomicInteger();
        try (CudaStream stream = device.createStream()) {
            stream.launchHostFunction(() -> {
                throw new IllegalStateException("boom in a host function");
            });
            stream.launchHostFunction(() -> {
                throw new ArithmeticException("second");
            });
            stream.launchHostFunction(after::incrementAndGet);
            HostFunctionException e = assertThrows(HostFunctionException.class, stream::synchronize);
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertEquals("boom in a host function", e.getCause().getMessage());
            assertEquals(1, e.getCause().getSuppressed().length, "the second failure rides along");
            assertTrue(e.getMessage().contains(stream.toString()), e.getMessage());
            assertEquals(1, after.get(), "later work still ran");
            stream.synchronize(); // reported once
            stream.launchHostFunction(after::incrementAndGet);
            stream.synchronize();
            assertEquals(2, after.get());
        }
    }

    @Test
    void aCudaCallFromInsideACallbackIsRefusedAndReported() {
        CudaDevice device = TestData.device();
        try (CudaStream stream = device.createStream(); CudaStream other = device.createStream()) {
            stream.launchHostFunction(other::synchronize);
            HostFunctionException e = assertThrows(HostFunctionException.class, stream::synchronize);
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(e.getCause().getMessage().startsWith("cudaStreamSynchronize was called from inside a host "
                    + "function, and CUDA forbids CUDA calls there"), e.getCause().getMessage());
            stream.launchHostFunction(() -> device.allocateFloats(16).close());
            e = assertThrows(HostFunctionException.class, stream::synchronize);
            assertTrue(e.getCause().getMessage().contains("was called from inside a host function"),
                    e.getCause().getMessage());
        }
    }

    @Test
    void aGraphHostNodeRunsAtEveryLaunchAfterItsDependenciesAndLivesAsLongAsTheExecutable() {
        CudaDevice device = TestData.device();
        List<String> order = new CopyOnWriteArrayList<>();
        LiveResources before = Cuda.liveResources();
        try (CudaStream stream = device.createStream(); DeviceBuffer buffer = device.allocateFloats(1024)) {
            GraphExec exec;
            try (CudaGraph graph = CudaGraph.create()) {
                GraphNode set = graph.addMemset(buffer, 0x3f);
                GraphNode first = graph.addHostFunction(() -> order.add("first"), set);
                GraphNode second = graph.addHostFunction(() -> order.add("second"), first);
                assertEquals(GraphNodeType.HOST, second.type());
                exec = graph.instantiate();
                assertEquals(before.hostFunctions() + 2, Cuda.liveResources().hostFunctions());
            }
            try (exec) {
                for (int i = 0; i < 3; i++) {
                    exec.launch(stream);
                }
                stream.synchronize();
                assertEquals(before.hostFunctions() + 2, Cuda.liveResources().hostFunctions(),
                        "the executable still holds the callbacks after its graph closed");
            }
        }
        assertEquals(List.of("first", "second", "first", "second", "first", "second"), order);
        assertEquals(before.hostFunctions(), Cuda.liveResources().hostFunctions());
    }

    @Test
    void aCallbackLaunchedDuringACaptureBecomesAHostNodeOfTheGraph() {
        CudaDevice device = TestData.device();
        AtomicInteger calls = new AtomicInteger();
        try (CudaStream stream = device.createStream()) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                stream.launchHostFunction(calls::incrementAndGet);
                stream.launchHostFunction(() -> {
                    if (calls.get() == 2) {
                        throw new IllegalStateException("second launch");
                    }
                });
                graph = capture.end();
            }
            assertEquals(0, calls.get(), "captured, not run");
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(List.of(GraphNodeType.HOST, GraphNodeType.HOST),
                        graph.nodes().stream().map(GraphNode::type).toList());
                exec.launch(stream);
                stream.synchronize();
                exec.launch(stream);
                HostFunctionException e = assertThrows(HostFunctionException.class, stream::synchronize);
                assertEquals("second launch", e.getCause().getMessage());
                assertEquals(2, calls.get());
            }
        }
    }

    @Test
    void nodesOfAnExecutableAreDisabledAndEnabledWithoutAnUpdate() {
        CudaDevice device = TestData.device();
        int n = 256;
        try (CudaStream stream = device.createStream(); DeviceBuffer buffer = device.allocateFloats(n);
                CudaGraph graph = CudaGraph.create(); CudaGraph other = CudaGraph.create()) {
            GraphNode set = graph.addMemset(buffer, 0x40);
            GraphNode host = graph.addHostFunction(() -> { }, set);
            GraphNode foreign = other.addEmpty();
            try (GraphExec exec = graph.instantiate()) {
                assertTrue(exec.isEnabled(set));
                exec.setEnabled(set, false);
                assertFalse(exec.isEnabled(set));
                buffer.memset(0);
                exec.launch(stream);
                stream.synchronize();
                assertArrayEquals(new float[n], buffer.toFloatArray(), "the disabled memset did nothing");
                exec.setEnabled(set, true);
                exec.launch(stream);
                stream.synchronize();
                float[] expected = new float[n];
                Arrays.fill(expected, Float.intBitsToFloat(0x40404040));
                assertArrayEquals(expected, buffer.toFloatArray());
                EnableRefusals.assertRefused(exec, host, "HOST", foreign);
            }
            EnableRefusals.assertClosedRefuses(graph, set);
        }
    }

    @Test
    void hostFunctionsAreRefusedOnClosedStreamsAndGraphsAndInConditionalBodies() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        CudaStream closed = device.createStream();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.launchHostFunction(() -> { }));
        try (CudaStream open = device.createStream()) {
            assertThrows(NullPointerException.class, () -> open.launchHostFunction(null));
        }
        CudaGraph closedGraph = CudaGraph.create();
        closedGraph.close();
        assertThrows(IllegalStateException.class, () -> closedGraph.addHostFunction(() -> { }));
        try (CudaGraph graph = CudaGraph.create()) {
            CudaGraph body = graph.ifThen(graph.conditionalHandle(0, true)).body();
            IllegalStateException inBody = assertThrows(IllegalStateException.class,
                    () -> body.addHostFunction(() -> { }));
            assertTrue(inBody.getMessage().contains("not a HOST node"), inBody.getMessage());
        }
        assertEquals(before.hostFunctions(), Cuda.liveResources().hostFunctions(),
                "no refused callback stays registered");
    }

    @Test
    void manyThreadsQueueingCallbacksEachSeeTheirOwnRunExactlyOnce() throws Exception {
        CudaDevice device = TestData.device();
        int threads = 8;
        int perThread = 200;
        AtomicInteger[] counts = new AtomicInteger[threads];
        try (CudaStream stream = device.createStream()) {
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                AtomicInteger count = counts[t] = new AtomicInteger();
                workers.add(Thread.ofPlatform().start(() -> {
                    for (int i = 0; i < perThread; i++) {
                        stream.launchHostFunction(count::incrementAndGet);
                    }
                }));
            }
            for (Thread worker : workers) {
                worker.join();
            }
            stream.synchronize();
        }
        for (AtomicInteger count : counts) {
            assertEquals(perThread, count.get());
        }
    }
}
