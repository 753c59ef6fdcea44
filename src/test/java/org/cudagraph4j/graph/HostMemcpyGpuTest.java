package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Memcpy nodes between device buffers and host memory, both directions: page-locked
 * ({@link PinnedBuffer}), which the graph keeps allocated, and the caller's own segments, which it
 * borrows. Every launch reads the host input as it is then and writes the host output, through a
 * device buffer or the graph's own memory.
 */
@GpuTest
class HostMemcpyGpuTest {
    private static final int N = 4099;
    private static CudaLibrary kernels;

    @BeforeAll
    static void load() {
        kernels = TestData.testKernels();
    }

    @AfterAll
    static void unload() {
        kernels.close();
    }

    private static float[] tripled(float[] x) {
        float[] expected = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            expected[i] = (float) Math.fma(2.0, x[i], x[i]);
        }
        return expected;
    }

    private static void assertTripled(float[] x, MemorySegment out) {
        float[] expected = tripled(x);
        float[] actual = out.toArray(ValueLayout.JAVA_FLOAT);
        for (int i = 0; i < x.length; i++) {
            assertEquals(expected[i], actual[i], Math.ulp(expected[i]), "element " + i);
        }
    }

    /** y = 2x + y after both copies in; with y = x that is 3x. */
    private static GraphNode buildTriple(CudaGraph graph, DeviceBuffer x, DeviceBuffer y, GraphNode in,
            GraphNode inToo) {
        CudaKernel saxpy = kernels.kernel("saxpy");
        return graph.addKernel(KernelLaunch.of(saxpy, LaunchConfig.of(Dim3.of((N + 255) / 256), Dim3.of(256)), N, 2.0f, x,
                y), in, inToo);
    }

    /** Three launches, each on fresh values written to {@code input} first, each leaving 3x in {@code output}. */
    private static void assertTriplesAtEveryLaunch(GraphExec exec, CudaStream stream, MemorySegment input,
            MemorySegment output) {
        for (int launch = 0; launch < 3; launch++) {
            float[] values = TestData.randomFloats(N, TestData.newSeed());
            MemorySegment.copy(values, 0, input, ValueLayout.JAVA_FLOAT, 0, N);
            output.fill((byte) 0xFF);
            exec.launch(stream);
            stream.synchronize();
            assertTripled(values, output);
        }
    }

    @Test
    void pinnedBuffersInAndOutAreCopiedAtEveryLaunchAndKeptAllocatedByTheGraph() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        try (CudaStream stream = device.createStream(); DeviceBuffer x = device.allocateFloats(N);
                DeviceBuffer y = device.allocateFloats(N)) {
            PinnedBuffer input = Cuda.allocatePinned((long) N * Float.BYTES);
            PinnedBuffer output = Cuda.allocatePinned((long) N * Float.BYTES);
            GraphExec exec;
            try (CudaGraph graph = CudaGraph.create()) {
                GraphNode toX = graph.addMemcpy(x, input);
                GraphNode toY = graph.addMemcpy(y, input);
                assertEquals(GraphNodeType.MEMCPY, toX.type());
                GraphNode kernel = buildTriple(graph, x, y, toX, toY);
                graph.addMemcpy(output, y, kernel);
                exec = graph.instantiate();
            }
            try (exec) {
                assertTriplesAtEveryLaunch(exec, stream, input.segment(), output.segment());
                input.close();
                output.close();
                assertFalse(input.isOpen());
                assertEquals(before.pinnedBuffers() + 2, Cuda.liveResources().pinnedBuffers(),
                        "the executable keeps both pinned buffers allocated past their close()");
                exec.launch(stream); // copies to and from memory the executable still holds
                stream.synchronize();
            }
        }
        assertEquals(before, Cuda.liveResources(), "the pinned buffers went with the executable");
    }

    @Test
    void pinnedBuffersCopiedInACaptureAreKeptAllocatedByTheGraph() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        CudaKernel saxpy = kernels.kernel("saxpy");
        try (CudaStream stream = device.createStream(); DeviceBuffer x = device.allocateFloats(N);
                DeviceBuffer y = device.allocateFloats(N)) {
            PinnedBuffer input = Cuda.allocatePinned((long) N * Float.BYTES);
            PinnedBuffer output = Cuda.allocatePinned((long) N * Float.BYTES);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                x.copyFromAsync(input, stream);
                y.copyFromAsync(input, stream);
                saxpy.launch(stream, LaunchConfig.of(Dim3.of((N + 255) / 256), Dim3.of(256)), N, 2.0f, x, y);
                y.copyToAsync(output, stream);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                assertTriplesAtEveryLaunch(exec, stream, input.segment(), output.segment());
                input.close();
                output.close();
                assertEquals(before.pinnedBuffers() + 2, Cuda.liveResources().pinnedBuffers(),
                        "the captured graph and its executable keep both pinned buffers allocated");
                exec.launch(stream);
                stream.synchronize();
            }
        }
        assertEquals(before, Cuda.liveResources(), "the pinned buffers went with the graph and the executable");
    }

    @Test
    void theCallersSegmentsInAndOutAreCopiedAtEveryLaunch() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        try (Arena arena = Arena.ofConfined(); CudaStream stream = device.createStream();
                DeviceBuffer x = device.allocateFloats(N); DeviceBuffer y = device.allocateFloats(N)) {
            MemorySegment input = arena.allocate((long) N * Float.BYTES, 16);
            MemorySegment output = arena.allocate((long) N * Float.BYTES, 16);
            try (CudaGraph graph = CudaGraph.create()) {
                GraphNode toX = graph.addMemcpy(x, input);
                GraphNode toY = graph.addMemcpy(y, input);
                graph.addMemcpy(output, y, buildTriple(graph, x, y, toX, toY));
                try (GraphExec exec = graph.instantiate()) {
                    assertTriplesAtEveryLaunch(exec, stream, input, output);
                }
            }
        }
        assertEquals(before, Cuda.liveResources());
    }

    @Test
    void aGraphReadsIntoAndOutOfItsOwnMemoryFromTheHost() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream();
                PinnedBuffer input = Cuda.allocatePinned((long) N * Float.BYTES);
                PinnedBuffer output = Cuda.allocatePinned((long) N * Float.BYTES);
                CudaGraph graph = CudaGraph.create()) {
            GraphAllocation x = graph.addMemAlloc(ElementType.FLOAT32, N);
            GraphAllocation y = graph.addMemAlloc(ElementType.FLOAT32, N);
            GraphNode toX = graph.addMemcpy(x.buffer(), input, x.node());
            GraphNode toY = graph.addMemcpy(y.buffer(), input, y.node());
            GraphNode kernel = buildTriple(graph, x.buffer(), y.buffer(), toX, toY);
            GraphNode back = graph.addMemcpy(output, y.buffer(), kernel);
            graph.addMemFree(x.buffer(), back);
            graph.addMemFree(y.buffer(), back);
            try (GraphExec exec = graph.instantiate()) {
                assertTriplesAtEveryLaunch(exec, stream, input.segment(), output.segment());
            }
        }
    }

    @Test
    void jacobisSumCopiedToAHostVariableOfAnAutomaticArena() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream(); DeviceBuffer sum = device.allocate(ElementType.FLOAT64, 1);
                CudaGraph graph = CudaGraph.create()) {
            MemorySegment host = Arena.ofAuto().allocate(ValueLayout.JAVA_DOUBLE);
            sum.copyFrom(new double[] {42.5});
            graph.addMemcpy(host, sum);
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            assertEquals(42.5, host.get(ValueLayout.JAVA_DOUBLE, 0));
        }
    }

    @Test
    void aCapturedCopyToAnAutomaticArenasSegmentIsBorrowedByTheGraph() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream(); DeviceBuffer sum = device.allocate(ElementType.FLOAT64, 1)) {
            sum.copyFrom(new double[] {-7.25});
            MemorySegment host = Arena.ofAuto().allocate(ValueLayout.JAVA_DOUBLE);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                sum.copyToAsync(host, stream);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            assertEquals(-7.25, host.get(ValueLayout.JAVA_DOUBLE, 0));
        }
    }

    @Test
    void hostCopiesThatCannotWorkAreRefusedByName() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (Arena arena = Arena.ofConfined(); DeviceBuffer x = device.allocateFloats(16);
                PinnedBuffer small = Cuda.allocatePinned(60); PinnedBuffer pinned = Cuda.allocatePinned(64);
                CudaGraph graph = CudaGraph.create(); CudaGraph other = CudaGraph.create()) {
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> graph.addMemcpy(x, small));
            assertEquals("memcpy node: the device buffer has 64 bytes but the pinned buffer has 60; copy through a "
                    + "slice of the device buffer for part of it", size.getMessage());
            IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                    () -> graph.addMemcpy(MemorySegment.ofArray(new float[16]), x));
            assertTrue(heap.getMessage().contains("not a heap segment"), heap.getMessage());
            IllegalArgumentException deviceMemory = assertThrows(IllegalArgumentException.class,
                    () -> graph.addMemcpy(x, MemorySegment.ofAddress(x.address()).reinterpret(64)));
            assertTrue(deviceMemory.getMessage().contains("is device memory, not host memory"),
                    deviceMemory.getMessage());
            DeviceBuffer foreign = other.addMemAlloc(ElementType.FLOAT32, 16).buffer();
            assertThrows(IllegalArgumentException.class, () -> graph.addMemcpy(pinned, foreign));
            assertThrows(IllegalArgumentException.class, () -> graph.addMemcpy(arena.allocate(64), foreign));
            ConditionalNode condition = graph.ifThen(graph.conditionalHandle(1, true));
            IllegalArgumentException pageable = assertThrows(IllegalArgumentException.class,
                    () -> condition.body().addMemcpy(x, arena.allocate(64)));
            assertTrue(pageable.getMessage().contains("is pageable host memory, and " + condition.body()
                    + " is a conditional node's body"), pageable.getMessage());
            assertEquals(GraphNodeType.MEMCPY, condition.body().addMemcpy(x, pinned).type(),
                    "a body copies from page-locked host memory");
            pinned.close();
            assertThrows(IllegalStateException.class, () -> graph.addMemcpy(x, pinned));
            other.addMemFree(foreign);
        }
    }
}
