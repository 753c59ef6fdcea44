package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.GraphNodeType;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Memory;
import org.cudagraph4j.internal.Streams;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Streams, events, device and pinned memory that another library created, borrowed: used like
 * the library's own, never freed by it, and refused with the reason where they do not fit. The
 * lender here is the runtime called directly, as any other CUDA library would call it.
 */
@GpuTest
class BorrowedHandlesGpuTest {
    private static final int N = 4096;

    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void aBorrowedStreamCapturesAndReplaysAndOutlivesItsWrapper() {
        CudaDevice device = gpu.device();
        Devices.use(device.ordinal());
        MemorySegment lent = Streams.create(0);
        try (DeviceBuffer x = TestData.upload(device, TestData.randomFloats(N, TestData.newSeed()));
                DeviceBuffer y = device.allocateFloats(N)) {
            float[] xs = x.toFloatArray();
            try (CudaStream stream = CudaStream.borrow(device, lent)) {
                assertTrue(stream.isBorrowed());
                assertEquals(Streams.id(lent), stream.id());
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    gpu.saxpy().launch(stream, LaunchConfig.of(Dim3.of(N / 256), Dim3.of(256)), N, 2f, x, y);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    GraphNode saxpy = graph.nodes().getFirst();
                    assertTrue(saxpy.kernelParams().isPresent(), "a launch on a borrowed stream is recorded");
                    y.copyFrom(TestData.nans(N));
                    y.memsetAsync(0, stream);
                    exec.launch(stream);
                    stream.synchronize();
                    float[] expected = new float[N];
                    for (int i = 0; i < N; i++) {
                        expected[i] = 2f * xs[i];
                    }
                    assertArrayEquals(expected, y.toFloatArray());
                }
            }
            Streams.synchronize(lent); // closing the wrapper left the lender's stream alive
            assertEquals(device.ordinal(), Streams.device(lent));
        } finally {
            Streams.destroy(lent);
        }
    }

    @Test
    void twoWrappersOfOneStreamShareItsCapture() {
        CudaDevice device = gpu.device();
        Devices.use(device.ordinal());
        MemorySegment lent = Streams.create(0);
        try (CudaStream first = CudaStream.borrow(device, lent); CudaStream second = CudaStream.borrow(device, lent);
                DeviceBuffer y = device.allocateFloats(N)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(first, CaptureMode.GLOBAL)) {
                gpu.writePattern().launch(second, LaunchConfig.of(Dim3.of(N / 256), Dim3.of(256)), y, N, 1f, 0f);
                assertThrows(IllegalStateException.class, () -> StreamCapture.begin(second, CaptureMode.GLOBAL),
                        "the second wrapper knows its stream is capturing");
                graph = capture.end();
            }
            try (graph) {
                GraphNode node = graph.nodes().getFirst();
                assertEquals(GraphNodeType.KERNEL, node.type());
                assertTrue(node.kernelParams().isPresent(), "the launch through the other wrapper was recorded");
            }
        } finally {
            Streams.destroy(lent);
        }
    }

    @Test
    void borrowedMemoryIsUsedLikeOwnedAndNeverFreed() {
        CudaDevice device = gpu.device();
        Devices.use(device.ordinal());
        long lent = Memory.malloc(4L * N);
        try {
            float[] values = TestData.randomFloats(N, TestData.newSeed());
            DeviceBuffer borrowed = DeviceBuffer.borrow(device, lent, ElementType.FLOAT32, N);
            try (CudaStream stream = device.createStream(); DeviceBuffer y = device.allocateFloats(N)) {
                assertTrue(borrowed.isBorrowed() && borrowed.isAllocation());
                assertTrue(borrowed.slice(8, 16).isBorrowed());
                borrowed.copyFrom(values);
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    y.memsetAsync(0, stream);
                    gpu.saxpy().launch(stream, LaunchConfig.of(Dim3.of(N / 256), Dim3.of(256)), N, 3f,
                            borrowed, y);
                    graph = capture.end();
                }
                borrowed.close(); // the graph keeps the wrapper's lifetime; the lender keeps the memory
                assertThrows(IllegalStateException.class, borrowed::address);
                try (graph; GraphExec exec = graph.instantiate()) {
                    y.copyFrom(TestData.nans(N));
                    exec.launch(stream);
                    stream.synchronize();
                    float[] result = y.toFloatArray();
                    for (int i = 0; i < N; i++) {
                        assertEquals(3f * values[i], result[i], 0f, "element " + i);
                    }
                }
            }
            float[] back = new float[N];
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(4L * N);
                Memory.copy(host.address(), lent, 4L * N);
                MemorySegment.copy(host, ValueLayout.JAVA_FLOAT, 0, back, 0, N);
            }
            assertArrayEquals(values, back, "closing the wrapper freed nothing");
        } finally {
            Memory.free(lent);
        }
    }

    @Test
    void aBorrowedAllocationTooSmallForTheViewIsRefusedWithItsSize() {
        CudaDevice device = gpu.device();
        Devices.use(device.ordinal());
        long lent = Memory.malloc(1000);
        try {
            IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.borrow(device, lent, ElementType.FLOAT32, 251));
            assertTrue(tooLong.getMessage().contains("does not fit its allocation")
                    && tooLong.getMessage().contains("holds 1000 bytes, 1000 of them from 0x"), tooLong.getMessage());
            IllegalArgumentException pastEnd = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.borrow(device, lent + 512, ElementType.FLOAT32, 123));
            assertTrue(pastEnd.getMessage().contains("488 of them from"), pastEnd.getMessage());
            try (DeviceBuffer inside = DeviceBuffer.borrow(device, lent + 512, ElementType.FLOAT32, 122)) {
                assertEquals(488, inside.byteSize());
            }
            assertTrue(assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.borrow(device, lent + 2, ElementType.FLOAT32, 4)).getMessage()
                    .contains("not aligned"));
            assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(device, 0, ElementType.FLOAT32, 4));
            assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(device, lent, ElementType.FLOAT32, 0));
        } finally {
            Memory.free(lent);
        }
    }

    @Test
    void hostMemoryIsNotBorrowedAsDeviceMemory() {
        CudaDevice device = gpu.device();
        try (Arena arena = Arena.ofConfined(); PinnedBuffer pinned = Cuda.allocatePinned(4096)) {
            MemorySegment pageable = arena.allocate(4096);
            IllegalArgumentException unregistered = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.borrow(device, pageable.address(), ElementType.FLOAT32, 16));
            assertTrue(unregistered.getMessage().contains("not device memory"), unregistered.getMessage());
            IllegalArgumentException host = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.borrow(device, pinned.segment().address(), ElementType.FLOAT32, 16));
            assertTrue(host.getMessage().contains("pinned host memory, not device memory"), host.getMessage());
        }
    }

    @Test
    void borrowedPinnedMemoryCopiesAsynchronouslyAndPageableMemoryIsRefused() {
        CudaDevice device = gpu.device();
        MemorySegment lent = Memory.mallocHost(4L * N);
        try {
            float[] values = TestData.randomFloats(N, TestData.newSeed());
            PinnedBuffer pinned = PinnedBuffer.borrow(lent.reinterpret(4L * N));
            try (pinned; CudaStream stream = device.createStream(); DeviceBuffer buffer = device.allocateFloats(N)) {
                assertTrue(pinned.isBorrowed());
                MemorySegment.copy(values, 0, pinned.segment(), ValueLayout.JAVA_FLOAT, 0, N);
                buffer.copyFromAsync(pinned.segment(), stream);
                stream.synchronize();
                assertArrayEquals(values, buffer.toFloatArray());
            }
            assertThrows(IllegalStateException.class, () -> pinned.segment().get(ValueLayout.JAVA_FLOAT, 0),
                    "the wrapper's segment ends with it");
            assertEquals(values[N - 1], lent.reinterpret(4L * N).getAtIndex(ValueLayout.JAVA_FLOAT, N - 1),
                    "the lender's memory is untouched");
            try (Arena arena = Arena.ofConfined()) {
                IllegalArgumentException pageable = assertThrows(IllegalArgumentException.class,
                        () -> PinnedBuffer.borrow(arena.allocate(4096)));
                assertTrue(pageable.getMessage().contains("not all page-locked"), pageable.getMessage());
                IllegalArgumentException pastEnd = assertThrows(IllegalArgumentException.class,
                        () -> PinnedBuffer.borrow(lent.reinterpret(4L * N + (1 << 20))));
                assertTrue(pastEnd.getMessage().contains("not all page-locked"), pastEnd.getMessage());
            }
        } finally {
            Memory.freeHost(lent);
        }
    }

    @Test
    void aBorrowedEventTimesJoinsCapturesAndIsNotDestroyed() {
        CudaDevice device = gpu.device();
        Devices.use(device.ordinal());
        MemorySegment start = Streams.createEvent(0);
        MemorySegment fork = Streams.createEvent(0);
        try (CudaStream stream = device.createStream(); CudaStream side = device.createStream();
                DeviceBuffer y = device.allocateFloats(N); CudaEvent end = device.createEvent()) {
            try (CudaEvent borrowedStart = CudaEvent.borrow(device, start);
                    CudaEvent borrowedFork = CudaEvent.borrow(device, fork)) {
                assertTrue(borrowedStart.isBorrowed());
                borrowedStart.record(stream);
                y.memsetAsync(0, stream);
                end.record(stream);
                end.synchronize();
                assertTrue(end.elapsedMillisSince(borrowedStart) >= 0);
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    borrowedFork.record(stream);
                    side.waitFor(borrowedFork); // the side stream joins the capture through the borrowed event
                    gpu.writePattern().launch(side, LaunchConfig.of(Dim3.of(N / 256), Dim3.of(256)), y, N,
                            2f, 1f);
                    end.record(side);
                    stream.waitFor(end);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    y.copyFrom(TestData.nans(N));
                    exec.launch(stream);
                    stream.synchronize();
                    float[] result = y.toFloatArray();
                    assertFalse(Float.isNaN(result[0]) || Float.isNaN(result[N - 1]), "the forked kernel ran");
                }
            }
            assertTrue(Streams.isComplete(start), "closing the wrappers destroyed no event");
            Streams.record(fork, stream.handle()); // recorded last in a capture, it can be recorded again
            Streams.synchronizeEvent(fork);
        } finally {
            Streams.destroyEvent(start);
            Streams.destroyEvent(fork);
        }
    }

    @Test
    void aClosedWrapperRefusesUseAndANullEventIsRefused() {
        CudaDevice device = gpu.device();
        Devices.use(device.ordinal());
        MemorySegment lent = Streams.create(0);
        try {
            CudaStream stream = CudaStream.borrow(device, lent);
            stream.close();
            stream.close();
            assertFalse(stream.isOpen());
            assertThrows(IllegalStateException.class, stream::synchronize);
            assertThrows(IllegalStateException.class, () -> StreamCapture.begin(stream, CaptureMode.GLOBAL));
            assertThrows(IllegalArgumentException.class, () -> CudaEvent.borrow(device, MemorySegment.NULL));
        } finally {
            Streams.destroy(lent);
        }
    }

    @Test
    void aWrapperOnTheWrongDeviceIsRefusedNamingBoth() {
        int devices = Cuda.deviceCount();
        assumeTrue(devices >= 2, "needs two GPUs; this host has " + devices);
        CudaDevice home = Cuda.device(0);
        CudaDevice other = Cuda.device(1);
        Devices.use(0);
        MemorySegment lent = Streams.create(0);
        long memory = Memory.malloc(1024);
        try {
            IllegalArgumentException stream = assertThrows(IllegalArgumentException.class,
                    () -> CudaStream.borrow(other, lent));
            assertTrue(stream.getMessage().contains("belongs to device 0, not " + other), stream.getMessage());
            IllegalArgumentException buffer = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBuffer.borrow(other, memory, ElementType.FLOAT32, 16));
            assertTrue(buffer.getMessage().contains("memory of device 0, not of " + other), buffer.getMessage());
            try (CudaStream right = CudaStream.borrow(home, lent)) {
                assertEquals(home, right.device());
            }
        } finally {
            Devices.use(0);
            Memory.free(memory);
            Streams.destroy(lent);
        }
    }
}
