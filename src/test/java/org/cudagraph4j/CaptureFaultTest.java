package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.CONFIG;
import static org.cudagraph4j.FaultChecks.N;
import static org.cudagraph4j.FaultChecks.THREAD_TIMEOUT;
import static org.cudagraph4j.FaultChecks.assertExecWritesPattern;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.cudagraph4j.FaultChecks.assertSaxpyComputesOn;
import static org.cudagraph4j.FaultChecks.assertStreamRecoveredFromCapture;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.StreamCaptureException;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;

/**
 * Calls that a stream capture forbids are refused as a {@link StreamCaptureException} that names
 * the capture, and the stream computes again once the capture scope is closed. Fault injection as
 * {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class CaptureFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void synchronizingTheCapturingStreamIsRefusedAndTheStreamRecovers() {
        StreamCaptureException e;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            e = assertThrows(StreamCaptureException.class, gpu.stream()::synchronize);
        }
        assertCaptureRefusal(e, "cudaStreamSynchronize", CaptureMode.GLOBAL, gpu.stream());
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void allocatingDuringAGlobalCaptureIsRefusedAndTheStreamRecovers() {
        StreamCaptureException e;
        LiveResources before = Cuda.liveResources();
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            e = assertThrows(StreamCaptureException.class, () -> gpu.device().allocateFloats(16).close());
        }
        assertCaptureRefusal(e, "cudaMalloc", CaptureMode.GLOBAL, gpu.stream());
        assertEquals(CudaError.STREAM_CAPTURE_UNSUPPORTED, e.error(), e.getMessage());
        assertEquals(before, Cuda.liveResources());
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void synchronousCopyDuringAGlobalCaptureIsRefusedAndTheStreamRecovers() {
        try (DeviceBuffer buffer = gpu.device().allocateFloats(16)) {
            buffer.copyFrom(TestData.randomFloats(16, TestData.newSeed()));
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                e = assertThrows(StreamCaptureException.class, () -> buffer.copyTo(new float[16]));
            }
            // expected: the synchronous copy (an async copy on the legacy stream, then a synchronize of
            // the legacy stream) is a potentially unsafe call that a GLOBAL capture forbids; which of
            // the two calls the runtime refuses is not pinned here.
            assertCaptureRefusal(e, null, CaptureMode.GLOBAL, gpu.stream());
            assertTrue(List.of("cudaMemcpyAsync", "cudaStreamSynchronize").contains(e.function()),
                    e.getMessage());
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void synchronizingAnEventRecordedInTheCaptureIsRefusedAndTheStreamRecovers() {
        try (CudaEvent event = gpu.device().createEvent(CudaEvent.Option.DISABLE_TIMING)) {
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                event.record(gpu.stream());
                e = assertThrows(StreamCaptureException.class, event::synchronize);
            }
            assertCaptureRefusal(e, "cudaEventSynchronize", CaptureMode.GLOBAL, gpu.stream());
            // The event is usable again once recorded outside a capture.
            event.record(gpu.stream());
            event.synchronize();
            assertTrue(event.isComplete());
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void queryingTheCapturingStreamIsRefusedAndTheStreamRecovers() {
        StreamCaptureException e;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            e = assertThrows(StreamCaptureException.class, gpu.stream()::isIdle);
        }
        assertCaptureRefusal(e, "cudaStreamQuery", CaptureMode.GLOBAL, gpu.stream());
        assertTrue(gpu.stream().isIdle());
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void synchronizingTheDeviceDuringAGlobalCaptureIsRefusedAndTheStreamRecovers() {
        StreamCaptureException e;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            e = assertThrows(StreamCaptureException.class, gpu.device()::synchronize);
        }
        // expected: cudaDeviceSynchronize is refused like cudaStreamSynchronize of the capturing stream.
        assertCaptureRefusal(e, "cudaDeviceSynchronize", CaptureMode.GLOBAL, gpu.stream());
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void allocatingFromAnotherPlatformThreadDuringAGlobalCaptureIsRefused() {
        StreamCaptureException e;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
            e = assertThrows(StreamCaptureException.class,
                    () -> onAnotherPlatformThread(() -> {
                        gpu.device().allocateFloats(16).close();
                        return null;
                    }));
        }
        assertCaptureRefusal(e, "cudaMalloc", CaptureMode.GLOBAL, gpu.stream());
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void allocatingFromAnotherThreadDuringAThreadLocalCaptureIsAllowed() throws Throwable {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            CudaGraph graph;
            DeviceBuffer allocatedElsewhere;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.THREAD_LOCAL)) {
                gpu.writePattern().launch(gpu.stream(), CONFIG, out, N, 2f, 1f);
                allocatedElsewhere = onAnotherPlatformThread(() -> gpu.device().allocateFloats(N));
                graph = capture.end();
            }
            try (allocatedElsewhere; graph; GraphExec exec = graph.instantiate()) {
                assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
                assertEquals(1, graph.nodes().size());
                float[] data = TestData.randomFloats(N, TestData.newSeed());
                allocatedElsewhere.copyFrom(data);
                assertEquals(Arrays.toString(data), Arrays.toString(allocatedElsewhere.toFloatArray()));
                assertExecWritesPattern(gpu, exec, out, 2f, 1f);
            }
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void allocatingDuringARelaxedCaptureIsAllowed() {
        CudaGraph graph;
        DeviceBuffer scratch;
        try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.RELAXED)) {
            scratch = gpu.device().allocateFloats(N);
            gpu.writePattern().launch(gpu.stream(), CONFIG, scratch, N, 0.25f, 8f);
            graph = capture.end();
        }
        try (scratch; graph; GraphExec exec = graph.instantiate()) {
            assertEquals(1, graph.nodes().size());
            assertExecWritesPattern(gpu, exec, scratch, 0.25f, 8f);
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void endingAGlobalCaptureFromAnotherThreadIsRefusedAndEndsTheCapture() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL);
            try (capture) {
                gpu.writePattern().launch(gpu.stream(), CONFIG, out, N, 1f, 0f);
                StreamCaptureException e = assertThrows(StreamCaptureException.class,
                        () -> onAnotherPlatformThread(() -> {
                            capture.end().close();
                            return null;
                        }));
                // cudaErrorStreamCaptureWrongThread (908) is in the capture range, so it surfaces as
                // the CudaException subclass StreamCaptureException.
                assertCaptureRefusal(e, "cudaStreamEndCapture", CaptureMode.GLOBAL, gpu.stream());
                assertEquals(CudaError.STREAM_CAPTURE_WRONG_THREAD, e.error(), e.getMessage());
                // Seen on the H200 (driver 580): the refused end still ends the capture, so the scope is
                // finished too; a runtime that kept capturing would leave it open instead.
                assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
            }
            IllegalStateException ended = assertThrows(IllegalStateException.class, capture::end);
            assertTrue(ended.getMessage().startsWith("capture already ended: "), ended.getMessage());
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void beginningACaptureOnACapturingStreamIsRefusedAndTheFirstCaptureGoesOn() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                assertRefused(IllegalStateException.class,
                        () -> StreamCapture.begin(gpu.stream(), CaptureMode.RELAXED).close(),
                        "stream is already capturing: GLOBAL capture on " + gpu.stream());
                assertEquals(CaptureStatus.ACTIVE, gpu.stream().captureStatus());
                gpu.writePattern().launch(gpu.stream(), CONFIG, out, N, 2f, 7f);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                assertExecWritesPattern(gpu, exec, out, 2f, 7f);
            }
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    @Test
    void unjoinedForkEndsTheCaptureWithStreamCaptureUnjoined() {
        try (CudaStream side = gpu.device().createStream();
                CudaEvent fork = gpu.device().createEvent(CudaEvent.Option.DISABLE_TIMING);
                DeviceBuffer out = gpu.device().allocateFloats(N)) {
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                fork.record(gpu.stream());
                side.waitFor(fork);
                gpu.writePattern().launch(side, CONFIG, out, N, 1f, 0f);
                e = assertThrows(StreamCaptureException.class, capture::end);
            }
            assertCaptureRefusal(e, "cudaStreamEndCapture", CaptureMode.GLOBAL, gpu.stream());
            // expected: ending with an unjoined fork is cudaErrorStreamCaptureUnjoined and ends the
            // capture on every stream that took part, so the side stream works again too.
            assertEquals(CudaError.STREAM_CAPTURE_UNJOINED, e.error(), e.getMessage());
            assertEquals(CaptureStatus.NONE, side.captureStatus());
            assertSaxpyComputesOn(gpu, side);
        }
        assertStreamRecoveredFromCapture(gpu, gpu.stream());
    }

    /** A fault test must not rely on exceptions inside catch blocks: this checks the helper itself. */
    @Test
    void onAnotherPlatformThreadRethrowsTheFailure() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> onAnotherPlatformThread(() -> {
            throw new IllegalStateException("from the other thread");
        }));
        assertEquals("from the other thread", e.getMessage());
        Executable noop = () -> assertNull(onAnotherPlatformThread(() -> null));
        assertDoesNotThrow(noop);
        assertHealthy(gpu);
    }

    /** A capture violation: the exact type, a capture error code, and the running capture named. */
    private void assertCaptureRefusal(StreamCaptureException e, String function, CaptureMode mode, CudaStream on) {
        assertSame(StreamCaptureException.class, e.getClass());
        assertTrue(e.error().isCaptureError(), e.getMessage());
        if (function != null) {
            assertEquals(function, e.function(), e.getMessage());
        }
        assertTrue(e.getMessage().startsWith(e.function() + ": " + e.cudaName() + " (" + e.code() + "): "),
                e.getMessage());
        assertTrue(e.getMessage().contains(" [while capturing: "), e.getMessage());
        assertTrue(e.capture().contains(mode + " capture on " + on), e.capture());
        assertFalse(e.isSticky(), e.getMessage());
    }

    /** Runs {@code task} on a new platform thread and returns its result or rethrows its failure. */
    private static <T> T onAnotherPlatformThread(Callable<T> task) throws Throwable {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread thread = Thread.ofPlatform().name("fault-suite-other-thread").start(() -> {
            try {
                result.set(task.call());
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        if (!thread.join(THREAD_TIMEOUT)) {
            fail("the other thread did not finish within " + THREAD_TIMEOUT);
        }
        if (failure.get() != null) {
            throw failure.get();
        }
        return result.get();
    }
}
