package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.CONFIG;
import static org.cudagraph4j.FaultChecks.N;
import static org.cudagraph4j.FaultChecks.assertAllNaN;
import static org.cudagraph4j.FaultChecks.assertExecWritesPattern;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.cudagraph4j.FaultChecks.assertStreamRecoveredFromCapture;
import static org.cudagraph4j.FaultChecks.patternGraph;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Use after close: a closed stream, event, buffer, slice, pinned buffer, library, argument block,
 * graph, executable or capture refuses every use with a message that names it, and a second close
 * does nothing. Fault injection as {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class UseAfterCloseFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void useAfterCloseOfStreamThrowsAndNamesTheStreamAndDoubleCloseIsIdempotent() {
        LiveResources before = Cuda.liveResources();
        CudaStream closed = gpu.device().createStream();
        String name = closed.toString();
        closed.close();
        closed.close();
        assertFalse(closed.isOpen());
        assertEquals(before, Cuda.liveResources(), "closing twice destroys the stream once");

        assertRefused(IllegalStateException.class, closed::synchronize, name + " is closed");
        assertTrue(name.startsWith("CudaStream 0x") && name.endsWith(" on device " + gpu.device().ordinal()), name);
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            out.memset(0xFF);
            assertRefused(IllegalStateException.class, () -> gpu.writePattern().launch(closed, CONFIG, out, N, 1f, 0f),
                    name + " is closed");
            assertRefused(IllegalStateException.class, () -> StreamCapture.begin(closed, CaptureMode.GLOBAL),
                    name + " is closed");
            assertAllNaN(out, "a launch on a closed stream");
        }
        assertHealthy(gpu);
    }

    @Test
    void useAfterCloseOfEventThrowsAndNamesTheEventAndDoubleCloseIsIdempotent() {
        LiveResources before = Cuda.liveResources();
        CudaEvent event = gpu.device().createEvent();
        event.record(gpu.stream());
        event.synchronize();
        String name = event.toString();
        event.close();
        event.close();
        assertFalse(event.isOpen());
        assertEquals(before, Cuda.liveResources(), "closing twice destroys the event once");

        assertAll(
                () -> assertEquals(name + " is closed",
                        assertThrows(IllegalStateException.class, event::synchronize).getMessage()),
                () -> assertEquals(name + " is closed",
                        assertThrows(IllegalStateException.class, () -> event.record(gpu.stream())).getMessage()),
                () -> assertEquals(name + " is closed",
                        assertThrows(IllegalStateException.class, () -> gpu.stream().waitFor(event)).getMessage()),
                () -> assertEquals(name + " is closed",
                        assertThrows(IllegalStateException.class, event::isComplete).getMessage()));
        assertTrue(name.startsWith("CudaEvent 0x"), name);
        assertHealthy(gpu);
    }

    @Test
    void useAfterCloseOfDeviceBufferThrowsAndNamesTheBufferAndDoubleCloseIsIdempotent() {
        LiveResources before = Cuda.liveResources();
        DeviceBuffer buffer = gpu.device().allocateFloats(16);
        String name = buffer.toString();
        buffer.close();
        buffer.close();
        assertFalse(buffer.isOpen());
        assertEquals(before, Cuda.liveResources(), "closing twice frees the allocation once");
        assertTrue(name.startsWith("DeviceBuffer 0x")
                && name.endsWith(" (16 x FLOAT32) on device " + gpu.device().ordinal()), name);

        assertAll(
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> buffer.copyFrom(new float[16])).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> buffer.copyTo(new float[16])).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> buffer.memset(0)).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> buffer.memsetAsync(0, gpu.stream())).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        buffer::address).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> buffer.slice(0, 1)).getMessage()),
                // A one-shot launch writes the address into its argument block: refused there.
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> gpu.writePattern().launch(gpu.stream(), CONFIG, buffer, 16, 1f, 0f)).getMessage()));
        gpu.stream().synchronize();
        assertHealthy(gpu);
    }

    @Test
    void sliceOfAClosedBufferIsUnusableAndClosingTheSliceDoesNothing() {
        DeviceBuffer buffer = gpu.device().allocateFloats(100);
        DeviceBuffer slice = buffer.slice(40, 10);
        slice.close(); // a slice owns nothing: this must not free the allocation
        slice.close();
        assertTrue(buffer.isOpen());
        assertTrue(slice.isOpen());
        float[] data = TestData.randomFloats(10, TestData.newSeed());
        slice.copyFrom(data);
        float[] back = TestData.nans(10);
        slice.copyTo(back);
        assertEquals(Arrays.toString(data), Arrays.toString(back));

        String name = buffer.toString();
        buffer.close();
        assertFalse(slice.isOpen());
        assertRefused(IllegalStateException.class, slice::address, name + " is closed");
        assertRefused(IllegalStateException.class, () -> slice.copyFrom(data), name + " is closed");
        assertRefused(IllegalStateException.class, () -> slice.slice(0, 1), name + " is closed");
        assertEquals("slice [40, 50) of " + name, slice.toString());
        assertHealthy(gpu);
    }

    @Test
    void pinnedBufferSegmentIsInaccessibleAfterCloseAndDoubleCloseIsIdempotent() {
        LiveResources before = Cuda.liveResources();
        PinnedBuffer pinned = Cuda.allocatePinned(4L * 16);
        MemorySegment segment = pinned.segment();
        segment.set(ValueLayout.JAVA_FLOAT, 0, 1.5f);
        assertEquals(1.5f, segment.get(ValueLayout.JAVA_FLOAT, 0));
        pinned.close();
        pinned.close();
        assertFalse(pinned.isOpen());
        assertEquals(before, Cuda.liveResources(), "closing twice frees the pinned memory once");

        IllegalStateException read = assertThrows(IllegalStateException.class,
                () -> segment.get(ValueLayout.JAVA_FLOAT, 0));
        assertEquals("Already closed", read.getMessage()); // the FFM API's own message for a closed arena
        assertRefused(IllegalStateException.class, () -> pinned.segment().fill((byte) 0), "Already closed");
        try (DeviceBuffer buffer = gpu.device().allocateFloats(16)) {
            buffer.memset(0xFF);
            IllegalStateException copy = assertThrows(IllegalStateException.class,
                    () -> buffer.copyFromAsync(segment, gpu.stream()));
            assertEquals("the host segment's arena is closed", copy.getMessage());
            assertRefused(IllegalStateException.class, () -> buffer.copyToAsync(segment, gpu.stream()),
                    "the host segment's arena is closed");
            gpu.stream().synchronize();
            assertAllNaN(buffer, "a refused copy from closed pinned memory");
        }
        assertHealthy(gpu);
    }

    @Test
    void kernelLookupAfterLibraryCloseThrowsAndNamesTheLibraryAndDoubleCloseIsIdempotent() {
        LiveResources before = Cuda.liveResources();
        CudaLibrary own = TestData.testKernels();
        CudaKernel kernel = own.kernel("write_pattern");
        String name = own.toString();
        own.close();
        own.close();
        assertFalse(own.isOpen());
        assertEquals(before, Cuda.liveResources(), "closing twice unloads the library once");
        assertEquals("CudaLibrary test_kernels.fatbin", name);

        assertAll(
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> own.kernel("saxpy")).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        () -> own.kernel("write_pattern")).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        own::kernelNames).getMessage()),
                () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                        kernel::handle).getMessage()));
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            out.memset(0xFF);
            IllegalStateException launch = assertThrows(IllegalStateException.class,
                    () -> kernel.launch(gpu.stream(), CONFIG, out, N, 1f, 0f));
            assertEquals(name + " is closed", launch.getMessage());
            gpu.stream().synchronize();
            assertAllNaN(out, "a launch of a closed library's kernel");
        }
        assertHealthy(gpu);
    }

    @Test
    void launchWithClosedKernelArgumentsThrowsAndNamesTheKernelAndDoubleCloseIsIdempotent() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            out.memset(0xFF);
            LiveResources before = Cuda.liveResources();
            KernelArguments arguments = gpu.writePattern().arguments(out, N, 1f, 0f);
            arguments.close();
            arguments.close();
            assertFalse(arguments.isOpen());
            assertEquals(before, Cuda.liveResources(), "closing twice frees the argument block once");

            IllegalStateException launch = assertThrows(IllegalStateException.class,
                    () -> gpu.writePattern().launch(gpu.stream(), CONFIG, arguments));
            assertEquals("KernelArguments for write_pattern are closed", launch.getMessage());
            assertRefused(IllegalStateException.class, () -> arguments.set(1, 8),
                    "KernelArguments for write_pattern are closed");
            gpu.stream().synchronize();
            assertAllNaN(out, "a launch with closed arguments");
        }
        assertHealthy(gpu);
    }

    @Test
    void useAfterCloseOfGraphThrowsAndNamesTheGraphAndDoubleCloseIsIdempotent() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            LiveResources before = Cuda.liveResources();
            CudaGraph graph = patternGraph(gpu, out, 1f, 0f);
            String name = graph.toString();
            graph.close();
            graph.close();
            assertFalse(graph.isOpen());
            assertEquals(before, Cuda.liveResources(), "closing twice destroys the graph once");
            assertTrue(name.startsWith("CudaGraph 0x"), name);

            assertAll(
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            graph::instantiate).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            graph::nodes).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> graph.addEmpty()).getMessage()));
            assertEquals(before, Cuda.liveResources(), "a refused instantiation holds nothing");
        }
        assertHealthy(gpu);
    }

    @Test
    void launchOfClosedGraphExecThrowsAndNamesItAndDoubleCloseIsIdempotent() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = patternGraph(gpu, out, 1f, 0f)) {
            LiveResources before = Cuda.liveResources();
            GraphExec exec = graph.instantiate();
            String name = exec.toString();
            exec.close();
            exec.close();
            assertFalse(exec.isOpen());
            assertEquals(before, Cuda.liveResources(), "closing twice destroys the executable once");
            assertTrue(name.startsWith("GraphExec 0x"), name);

            out.memset(0xFF);
            IllegalStateException launch = assertThrows(IllegalStateException.class, () -> exec.launch(gpu.stream()));
            assertEquals(name + " is closed", launch.getMessage());
            assertRefused(IllegalStateException.class, () -> exec.upload(gpu.stream()), name + " is closed");
            IllegalStateException update = assertThrows(IllegalStateException.class, () -> exec.update(graph));
            assertEquals(name + " is closed", update.getMessage());
            assertEquals(before, Cuda.liveResources(), "a refused update holds nothing");
            gpu.stream().synchronize();
            assertAllNaN(out, "a launch of a closed executable");
        }
        assertHealthy(gpu);
    }

    @Test
    void endingACaptureTwiceThrowsCaptureAlreadyEndedAndCloseIsIdempotent() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N);
                StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            String description = capture.toString();
            gpu.writePattern().launch(gpu.stream(), CONFIG, out, N, 0.5f, 1f);
            try (CudaGraph graph = capture.end()) {
                assertEquals(1, graph.nodes().size());
                assertRefused(IllegalStateException.class, capture::end, "capture already ended: " + description);
                assertTrue(description.contains("GLOBAL capture on " + gpu.stream()), description);
                capture.close(); // after end: nothing to do
                capture.close();
                assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
                try (GraphExec exec = graph.instantiate()) {
                    assertExecWritesPattern(gpu, exec, out, 0.5f, 1f);
                }
            }
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void endAfterCloseWithoutEndThrowsCaptureAlreadyEnded() {
        StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL);
        String description = capture.toString();
        capture.close();
        capture.close();
        assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
        assertRefused(IllegalStateException.class, capture::end, "capture already ended: " + description);
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }
}
