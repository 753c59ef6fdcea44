package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Stream;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.GraphUpdateException;
import org.cudagraph4j.graph.InstantiateFlag;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.graph.UpdateResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Fault injection: every test provokes one fault, checks the exact exception and what its message
 * names, then proves with {@link #assertHealthy()} that the device and the library still compute
 * correctly (a fresh stream, fresh random data, a host double-precision reference, no lingering
 * last error). Every test closes what it creates; {@link LeakCheck} holds it to that.
 *
 * <p>Where the library's documentation does not state the behaviour, the test encodes what a
 * demanding user would expect and says so in a comment starting {@code // expected:}.
 */
@GpuTest
class FaultSuiteTest {
    private static final int N = 10_007;
    private static final int THREADS_PER_BLOCK = 256;
    private static final Duration THREAD_TIMEOUT = Duration.ofMinutes(2);

    private CudaDevice device;
    private CudaLibrary library;
    private CudaStream stream;
    private CudaKernel writePattern;
    private CudaKernel saxpy;

    @BeforeEach
    void setUp() {
        device = TestData.device();
        library = TestData.testKernels();
        stream = device.createStream();
        writePattern = library.kernel("write_pattern");
        saxpy = library.kernel("saxpy");
    }

    @AfterEach
    void tearDown() {
        stream.close();
        library.close();
    }

    // ---------------------------------------------------------------------------------------------
    // Health checks and helpers.

    /**
     * The device and library still work: saxpy on fresh random data on a fresh stream matches a
     * double-precision host reference, and no error is left pending on this thread.
     */
    private void assertHealthy() {
        try (CudaStream fresh = device.createStream()) {
            assertSaxpyComputesOn(fresh);
        }
        assertDoesNotThrow(Cuda::checkLastError, "an error was left pending as the last error");
    }

    /**
     * y = a*x + y on {@code on}, checked against the host in double precision. The device copy of y
     * is poisoned with NaN before y is uploaded, and the host result array is NaN before the
     * download, so a copy or launch that silently did nothing cannot pass.
     */
    private void assertSaxpyComputesOn(CudaStream on) {
        int n = 4099 + (int) Math.floorMod(TestData.newSeed(), 997L);
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(n, seed);
        float[] y = TestData.randomFloats(n, seed + 1);
        float a = 0.5f + 3 * Math.abs(TestData.randomFloats(1, seed + 2)[0]);
        try (DeviceBuffer dx = device.allocateFloats(n); DeviceBuffer dy = device.allocateFloats(n)) {
            dx.copyFrom(x);
            dy.memset(0xFF);
            dy.copyFrom(y);
            saxpy.launch(LaunchConfig.of(Dim3.of(blocksFor(n)), Dim3.of(THREADS_PER_BLOCK), on), n, a, dx, dy);
            on.synchronize();
            float[] result = TestData.nans(n);
            dy.copyTo(result);
            for (int i = 0; i < n; i++) {
                double expected = (double) a * x[i] + y[i];
                // Relative to the operands' magnitude, so that cancellation near 0 cannot flake.
                double tolerance = 1e-5 * (Math.abs((double) a * x[i]) + Math.abs(y[i]));
                if (!(Math.abs(result[i] - expected) <= tolerance)) {
                    fail("saxpy element " + i + " of " + n + ": expected " + expected + " but was " + result[i]
                            + " (a = " + a + ", " + TestData.seedDescription(seed) + ")");
                }
            }
        }
    }

    private static int blocksFor(int n) {
        return (n + THREADS_PER_BLOCK - 1) / THREADS_PER_BLOCK;
    }

    private static LaunchConfig config(CudaStream on) {
        return LaunchConfig.of(Dim3.of(40), Dim3.of(THREADS_PER_BLOCK), on);
    }

    /** out[i] = i * scale + offset, exactly (the scales used keep every product exact). */
    private static void assertPattern(float[] values, float scale, float offset, String what) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] != i * scale + offset) {
                fail(what + ": element " + i + " is " + values[i] + ", expected " + (i * scale + offset));
            }
        }
    }

    private static void assertAllNaN(DeviceBuffer buffer, String what) {
        float[] values = buffer.toFloatArray();
        for (int i = 0; i < values.length; i++) {
            if (!Float.isNaN(values[i])) {
                fail(what + ": element " + i + " was written (" + values[i] + "), but it must still be NaN");
            }
        }
    }

    /** Runs write_pattern into a poisoned buffer on {@code on} and checks every element. */
    private void assertPatternComputesOn(CudaStream on) {
        try (DeviceBuffer out = device.allocateFloats(N)) {
            out.memset(0xFF);
            writePattern.launch(config(on), out, N, 0.5f, 3f);
            on.synchronize();
            assertPattern(out.toFloatArray(), 0.5f, 3f, "write_pattern on " + on);
        }
    }

    private static void assertCudaMessage(CudaException e, String function, CudaError error, String context) {
        assertEquals(function, e.function(), e.getMessage());
        assertEquals(error, e.error(), e.getMessage());
        assertEquals(error.cudaName(), e.cudaName(), e.getMessage());
        assertTrue(e.getMessage().startsWith(function + ": " + error.cudaName() + " (" + error.code() + "): "),
                e.getMessage());
        if (context != null) {
            assertTrue(e.getMessage().endsWith(" [" + context + "]"), e.getMessage());
        }
        assertFalse(e.isSticky(), e.getMessage());
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

    /** After a refused operation and the capture scope's close: not capturing, and computing again. */
    private void assertStreamRecoveredFromCapture(CudaStream on) {
        assertEquals(CaptureStatus.NONE, on.captureStatus());
        assertSaxpyComputesOn(on);
        assertHealthy();
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

    /** Starts {@code tasks} tasks at once on {@code executor} and rethrows every failure. */
    private static void runAllAtOnce(ExecutorService executor, int tasks, IndexedTask task) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> futures = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            int index = i;
            futures.add(executor.submit(() -> {
                start.await();
                task.run(index);
                return null;
            }));
        }
        start.countDown();
        List<Throwable> failures = new ArrayList<>();
        for (Future<?> future : futures) {
            try {
                future.get(THREAD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failures.add(e.getCause());
            }
        }
        if (!failures.isEmpty()) {
            AssertionError error = new AssertionError(failures.size() + " of " + tasks + " tasks failed; first: "
                    + failures.get(0), failures.get(0));
            failures.stream().skip(1).forEach(error::addSuppressed);
            throw error;
        }
    }

    @FunctionalInterface
    interface IndexedTask {
        void run(int index) throws Exception;
    }

    private static byte[] testFatbin() throws IOException {
        try (InputStream in = TestData.class.getResourceAsStream("test_kernels.fatbin")) {
            assertTrue(in != null, "test_kernels.fatbin is missing from the test resources");
            return in.readAllBytes();
        }
    }

    /** write_pattern(out, N, scale, offset) as a one-node graph. */
    private CudaGraph patternGraph(DeviceBuffer out, float scale, float offset) {
        CudaGraph graph = CudaGraph.create();
        graph.addKernel(KernelLaunch.of(writePattern, Dim3.of(40), Dim3.of(THREADS_PER_BLOCK), 0, out, N, scale,
                offset));
        return graph;
    }

    /** Launches {@code exec} into a poisoned {@code out} and checks the pattern it writes. */
    private void assertExecWritesPattern(GraphExec exec, DeviceBuffer out, float scale, float offset) {
        out.memset(0xFF);
        exec.launch(stream);
        stream.synchronize();
        assertPattern(out.toFloatArray(), scale, offset, exec.toString());
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class UseAfterClose {
        @Test
        void useAfterCloseOfStreamThrowsAndNamesTheStreamAndDoubleCloseIsIdempotent() {
            LiveResources before = Cuda.liveResources();
            CudaStream closed = device.createStream();
            String name = closed.toString();
            closed.close();
            closed.close();
            assertFalse(closed.isOpen());
            assertEquals(before, Cuda.liveResources(), "closing twice destroys the stream once");

            IllegalStateException sync = assertThrows(IllegalStateException.class, closed::synchronize);
            assertEquals(name + " is closed", sync.getMessage());
            assertTrue(name.startsWith("CudaStream 0x") && name.endsWith(" on device " + device.ordinal()), name);
            try (DeviceBuffer out = device.allocateFloats(N)) {
                out.memset(0xFF);
                IllegalStateException valid = assertThrows(IllegalStateException.class,
                        () -> writePattern.launch(config(closed), out, N, 1f, 0f));
                assertEquals(name + " is closed", valid.getMessage());
                IllegalStateException capture = assertThrows(IllegalStateException.class,
                        () -> StreamCapture.begin(closed, CaptureMode.GLOBAL));
                assertEquals(name + " is closed", capture.getMessage());
                assertAllNaN(out, "a launch on a closed stream");
            }
            assertHealthy();
        }

        @Test
        void useAfterCloseOfEventThrowsAndNamesTheEventAndDoubleCloseIsIdempotent() {
            LiveResources before = Cuda.liveResources();
            CudaEvent event = device.createEvent();
            event.record(stream);
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
                            assertThrows(IllegalStateException.class, () -> event.record(stream)).getMessage()),
                    () -> assertEquals(name + " is closed",
                            assertThrows(IllegalStateException.class, () -> stream.waitFor(event)).getMessage()),
                    () -> assertEquals(name + " is closed",
                            assertThrows(IllegalStateException.class, event::isComplete).getMessage()));
            assertTrue(name.startsWith("CudaEvent 0x"), name);
            assertHealthy();
        }

        @Test
        void useAfterCloseOfDeviceBufferThrowsAndNamesTheBufferAndDoubleCloseIsIdempotent() {
            LiveResources before = Cuda.liveResources();
            DeviceBuffer buffer = device.allocateFloats(16);
            String name = buffer.toString();
            buffer.close();
            buffer.close();
            assertFalse(buffer.isOpen());
            assertEquals(before, Cuda.liveResources(), "closing twice frees the allocation once");
            assertTrue(name.startsWith("DeviceBuffer 0x") && name.endsWith(" (16 x FLOAT32) on device " + device.ordinal()), name);

            assertAll(
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> buffer.copyFrom(new float[16])).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> buffer.copyTo(new float[16])).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> buffer.memset(0)).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> buffer.memsetAsync(0, stream)).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            buffer::address).getMessage()),
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> buffer.slice(0, 1)).getMessage()),
                    // A one-shot launch writes the address into its argument block: refused there.
                    () -> assertEquals(name + " is closed", assertThrows(IllegalStateException.class,
                            () -> writePattern.launch(config(stream), buffer, 16, 1f, 0f)).getMessage()));
            stream.synchronize();
            assertHealthy();
        }

        @Test
        void sliceOfAClosedBufferIsUnusableAndClosingTheSliceDoesNothing() {
            DeviceBuffer buffer = device.allocateFloats(100);
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
            IllegalStateException address = assertThrows(IllegalStateException.class, slice::address);
            assertEquals(name + " is closed", address.getMessage());
            IllegalStateException copy = assertThrows(IllegalStateException.class, () -> slice.copyFrom(data));
            assertEquals(name + " is closed", copy.getMessage());
            IllegalStateException subSlice = assertThrows(IllegalStateException.class, () -> slice.slice(0, 1));
            assertEquals(name + " is closed", subSlice.getMessage());
            assertEquals("slice [40, 50) of " + name, slice.toString());
            assertHealthy();
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
            IllegalStateException write = assertThrows(IllegalStateException.class,
                    () -> pinned.segment().fill((byte) 0));
            assertEquals("Already closed", write.getMessage());
            try (DeviceBuffer buffer = device.allocateFloats(16)) {
                buffer.memset(0xFF);
                IllegalStateException copy = assertThrows(IllegalStateException.class,
                        () -> buffer.copyFromAsync(segment, stream));
                assertEquals("the host segment's arena is closed", copy.getMessage());
                IllegalStateException copyBack = assertThrows(IllegalStateException.class,
                        () -> buffer.copyToAsync(segment, stream));
                assertEquals("the host segment's arena is closed", copyBack.getMessage());
                stream.synchronize();
                assertAllNaN(buffer, "a refused copy from closed pinned memory");
            }
            assertHealthy();
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
            try (DeviceBuffer out = device.allocateFloats(N)) {
                out.memset(0xFF);
                IllegalStateException launch = assertThrows(IllegalStateException.class,
                        () -> kernel.launch(config(stream), out, N, 1f, 0f));
                assertEquals(name + " is closed", launch.getMessage());
                stream.synchronize();
                assertAllNaN(out, "a launch of a closed library's kernel");
            }
            assertHealthy();
        }

        @Test
        void launchWithClosedKernelArgumentsThrowsAndNamesTheKernelAndDoubleCloseIsIdempotent() {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                out.memset(0xFF);
                LiveResources before = Cuda.liveResources();
                KernelArguments arguments = writePattern.arguments(out, N, 1f, 0f);
                arguments.close();
                arguments.close();
                assertFalse(arguments.isOpen());
                assertEquals(before, Cuda.liveResources(), "closing twice frees the argument block once");

                IllegalStateException launch = assertThrows(IllegalStateException.class,
                        () -> writePattern.launch(config(stream), arguments));
                assertEquals("KernelArguments for write_pattern are closed", launch.getMessage());
                IllegalStateException set = assertThrows(IllegalStateException.class, () -> arguments.set(1, 8));
                assertEquals("KernelArguments for write_pattern are closed", set.getMessage());
                stream.synchronize();
                assertAllNaN(out, "a launch with closed arguments");
            }
            assertHealthy();
        }

        @Test
        void useAfterCloseOfGraphThrowsAndNamesTheGraphAndDoubleCloseIsIdempotent() {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                LiveResources before = Cuda.liveResources();
                CudaGraph graph = patternGraph(out, 1f, 0f);
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
            assertHealthy();
        }

        @Test
        void launchOfClosedGraphExecThrowsAndNamesItAndDoubleCloseIsIdempotent() {
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph graph = patternGraph(out, 1f, 0f)) {
                LiveResources before = Cuda.liveResources();
                GraphExec exec = graph.instantiate();
                String name = exec.toString();
                exec.close();
                exec.close();
                assertFalse(exec.isOpen());
                assertEquals(before, Cuda.liveResources(), "closing twice destroys the executable once");
                assertTrue(name.startsWith("GraphExec 0x"), name);

                out.memset(0xFF);
                IllegalStateException launch = assertThrows(IllegalStateException.class, () -> exec.launch(stream));
                assertEquals(name + " is closed", launch.getMessage());
                IllegalStateException upload = assertThrows(IllegalStateException.class, () -> exec.upload(stream));
                assertEquals(name + " is closed", upload.getMessage());
                IllegalStateException update = assertThrows(IllegalStateException.class, () -> exec.update(graph));
                assertEquals(name + " is closed", update.getMessage());
                assertEquals(before, Cuda.liveResources(), "a refused update holds nothing");
                stream.synchronize();
                assertAllNaN(out, "a launch of a closed executable");
            }
            assertHealthy();
        }

        @Test
        void endingACaptureTwiceThrowsCaptureAlreadyEndedAndCloseIsIdempotent() {
            try (DeviceBuffer out = device.allocateFloats(N);
                    StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                String description = capture.toString();
                writePattern.launch(config(stream), out, N, 0.5f, 1f);
                try (CudaGraph graph = capture.end()) {
                    assertEquals(1, graph.nodes().size());
                    IllegalStateException again = assertThrows(IllegalStateException.class, capture::end);
                    assertEquals("capture already ended: " + description, again.getMessage());
                    assertTrue(description.contains("GLOBAL capture on " + stream), description);
                    capture.close(); // after end: nothing to do
                    capture.close();
                    assertEquals(CaptureStatus.NONE, stream.captureStatus());
                    try (GraphExec exec = graph.instantiate()) {
                        assertExecWritesPattern(exec, out, 0.5f, 1f);
                    }
                }
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void endAfterCloseWithoutEndThrowsCaptureAlreadyEnded() {
            StreamCapture capture = StreamCapture.begin(stream, CaptureMode.THREAD_LOCAL);
            String description = capture.toString();
            capture.close();
            capture.close();
            assertEquals(CaptureStatus.NONE, stream.captureStatus());
            IllegalStateException e = assertThrows(IllegalStateException.class, capture::end);
            assertEquals("capture already ended: " + description, e.getMessage());
            assertStreamRecoveredFromCapture(stream);
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** A wrong argument list for write_pattern(float* out, int n, float scale, float offset). */
    record BadArguments(String name, Function<DeviceBuffer, Object[]> arguments, String message) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<BadArguments> badWritePatternArguments() {
        String unsupported = "kernel write_pattern, parameter 1: unsupported argument type java.lang.String; pass a"
                + " DeviceBuffer, Integer, Float, Long, Double, Short, Byte or Boolean";
        return Stream.of(
                new BadArguments("too few arguments", out -> new Object[] {out, N, 1f},
                        "kernel write_pattern takes 4 parameters but 3 arguments were given"),
                new BadArguments("too many arguments", out -> new Object[] {out, N, 1f, 0f, 0f},
                        "kernel write_pattern takes 4 parameters but 5 arguments were given"),
                new BadArguments("no arguments", out -> new Object[] {},
                        "kernel write_pattern takes 4 parameters but 0 arguments were given"),
                new BadArguments("Float for a pointer", out -> new Object[] {1f, N, 1f, 0f},
                        "kernel write_pattern, parameter 0 is 8 bytes but the argument is a Float (4 bytes)"),
                new BadArguments("Long for an int", out -> new Object[] {out, (long) N, 1f, 0f},
                        "kernel write_pattern, parameter 1 is 4 bytes but the argument is a Long (8 bytes)"),
                new BadArguments("Double for a float", out -> new Object[] {out, N, 1.0, 0f},
                        "kernel write_pattern, parameter 2 is 4 bytes but the argument is a Double (8 bytes)"),
                new BadArguments("buffer where an int goes", out -> new Object[] {out, out, 1f, 0f},
                        "kernel write_pattern, parameter 1 is 4 bytes but the argument is a DeviceBuffer (pointer)"
                                + " (8 bytes)"),
                new BadArguments("int and buffer swapped", out -> new Object[] {N, out, 1f, 0f},
                        "kernel write_pattern, parameter 0 is 8 bytes but the argument is a Integer (4 bytes)"),
                new BadArguments("null argument", out -> new Object[] {out, null, 1f, 0f},
                        "kernel write_pattern, parameter 1: argument is null"),
                new BadArguments("String argument", out -> new Object[] {out, "16", 1f, 0f}, unsupported));
    }

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class KernelArgumentChecks {
        @ParameterizedTest(name = "one-shot launch, {0}")
        @MethodSource("org.cudagraph4j.FaultSuiteTest#badWritePatternArguments")
        void oneShotLaunchRefusesBadArgumentsBeforeTheGpuSeesThem(BadArguments bad) {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                out.memset(0xFF);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> writePattern.launch(config(stream), bad.arguments().apply(out)));
                assertEquals(bad.message(), e.getMessage());
                stream.synchronize();
                assertAllNaN(out, "a refused launch");
            }
            assertHealthy();
        }

        @ParameterizedTest(name = "prepared arguments, {0}")
        @MethodSource("org.cudagraph4j.FaultSuiteTest#badWritePatternArguments")
        void preparedArgumentsRefuseBadArgumentsAndAllocateNothing(BadArguments bad) {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                LiveResources before = Cuda.liveResources();
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> writePattern.arguments(bad.arguments().apply(out)).close());
                assertEquals(bad.message(), e.getMessage());
                assertEquals(before, Cuda.liveResources(), "a refused argument block must not stay allocated");
            }
            assertHealthy();
        }

        @ParameterizedTest(name = "graph kernel node, {0}")
        @MethodSource("org.cudagraph4j.FaultSuiteTest#badWritePatternArguments")
        void graphKernelNodeRefusesBadArgumentsAndAddsNoNode(BadArguments bad) {
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
                KernelLaunch params = new KernelLaunch(writePattern, Dim3.of(40), Dim3.of(THREADS_PER_BLOCK), 0,
                        Arrays.asList(bad.arguments().apply(out)));
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> graph.addKernel(params));
                assertEquals(bad.message(), e.getMessage());
                assertTrue(graph.nodes().isEmpty(), "a refused node must not be added");
            }
            assertHealthy();
        }

        @Test
        void refusedSetLeavesPreparedArgumentsUnchanged() {
            try (DeviceBuffer out = device.allocateFloats(N);
                    KernelArguments arguments = writePattern.arguments(out, N, 0.5f, 2f)) {
                IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                        () -> arguments.set(2, 0.5));
                assertEquals("kernel write_pattern, parameter 2 is 4 bytes but the argument is a Double (8 bytes)",
                        size.getMessage());
                IllegalArgumentException nul = assertThrows(IllegalArgumentException.class,
                        () -> arguments.set(3, null));
                assertEquals("kernel write_pattern, parameter 3: argument is null", nul.getMessage());
                assertEquals(List.of(out, N, 0.5f, 2f), arguments.values());

                out.memset(0xFF);
                writePattern.launch(config(stream), arguments);
                stream.synchronize();
                assertPattern(out.toFloatArray(), 0.5f, 2f, "launch after refused sets");
            }
            assertHealthy();
        }

        @Test
        void argumentsPreparedForAnotherKernelAreRefused() {
            try (DeviceBuffer out = device.allocateFloats(N);
                    KernelArguments arguments = writePattern.arguments(out, N, 1f, 0f)) {
                out.memset(0xFF);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> saxpy.launch(config(stream), arguments));
                assertEquals("arguments were prepared for kernel write_pattern, not saxpy", e.getMessage());
                stream.synchronize();
                assertAllNaN(out, "a launch with another kernel's arguments");
            }
            assertHealthy();
        }

        @Test
        void preparedArgumentsWithABufferClosedAfterwardsAreRefusedAndNothingIsWritten() {
            DeviceBuffer doomed = device.allocateFloats(N);
            String doomedName = doomed.toString();
            try (KernelArguments arguments = writePattern.arguments(doomed, N, 1f, 0f)) {
                doomed.close();
                // Allocated after the close, this buffer may well reuse the freed address: a launch that
                // reached the GPU would write into it.
                try (DeviceBuffer survivor = device.allocateFloats(N)) {
                    survivor.memset(0xFF);
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> writePattern.launch(config(stream), arguments));
                    assertEquals("kernel write_pattern, argument 0: " + doomedName
                            + " is closed; a launch must not touch freed memory", e.getMessage());
                    stream.synchronize();
                    device.synchronize();
                    assertAllNaN(survivor, "the buffer allocated after the refused launch's buffer was closed");
                }
            }
            assertHealthy();
        }

        @Test
        void graphKernelNodeWithAClosedBufferIsRefused() {
            DeviceBuffer doomed = device.allocateFloats(N);
            String doomedName = doomed.toString();
            doomed.close();
            try (CudaGraph graph = CudaGraph.create()) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> graph.addKernel(
                        KernelLaunch.of(writePattern, Dim3.of(40), Dim3.of(THREADS_PER_BLOCK), 0, doomed, N, 1f,
                                0f)));
                assertEquals(doomedName + " is closed", e.getMessage());
                assertTrue(graph.nodes().isEmpty());
            }
            assertHealthy();
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class LaunchShapes {
        @Test
        void gridDimensionZeroIsRefusedByDim3() {
            // The runtime would answer cudaErrorInvalidConfiguration; Dim3 refuses a 0 component
            // before any launch can be built, which is the library's documented contract.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Dim3.of(0));
            assertEquals("every Dim3 component must be at least 1, got (0, 1, 1)", e.getMessage());
            IllegalArgumentException y = assertThrows(IllegalArgumentException.class, () -> Dim3.of(4, 0));
            assertEquals("every Dim3 component must be at least 1, got (4, 0, 1)", y.getMessage());
            assertHealthy();
        }

        @Test
        void blockOfMoreThan1024ThreadsIsRefusedByLaunchConfig() {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> LaunchConfig.of(Dim3.of(1), Dim3.of(32, 33), stream));
            assertEquals("a block has at most 1024 threads, but {32,33} has 1056", e.getMessage());
            IllegalArgumentException node = assertThrows(IllegalArgumentException.class,
                    () -> KernelLaunch.of(writePattern, Dim3.of(1), Dim3.of(1025), 0));
            assertEquals("a block has at most 1024 threads, but 1025 has 1025", node.getMessage());
            assertHealthy();
        }

        @Test
        void negativeDynamicSharedMemoryIsRefusedByLaunchConfig() {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> LaunchConfig.of(Dim3.of(1), Dim3.of(32), -1, stream));
            assertEquals("sharedMemBytes must not be negative, got -1", e.getMessage());
            assertHealthy();
        }

        // Seen on the H200 (driver 580): out-of-range dimensions are cudaErrorInvalidValue, not
        // cudaErrorInvalidConfiguration.
        @Test
        void blockZAbove64IsCudaErrorInvalidValue() {
            assertLaunchRefused(LaunchConfig.of(Dim3.of(1), Dim3.of(1, 1, 65), stream), CudaError.INVALID_VALUE);
        }

        @Test
        void gridYAbove65535IsCudaErrorInvalidValue() {
            assertLaunchRefused(LaunchConfig.of(Dim3.of(1, 65_536), Dim3.of(32), stream), CudaError.INVALID_VALUE);
        }

        @Test
        void gridZAbove65535IsCudaErrorInvalidValue() {
            assertLaunchRefused(LaunchConfig.of(Dim3.of(1, 1, 65_536), Dim3.of(32), stream), CudaError.INVALID_VALUE);
        }

        @Test
        void dynamicSharedMemoryBeyondTheDeviceLimitIsARecoverableCudaException() {
            int oneMiB = 1 << 20;
            assertTrue(oneMiB > device.properties().sharedMemPerBlockOptinBytes());
            try (DeviceBuffer out = device.allocateFloats(N)) {
                out.memset(0xFF);
                CudaException e = assertThrows(CudaException.class,
                        () -> writePattern.launch(LaunchConfig.of(Dim3.of(1), Dim3.of(32), oneMiB, stream), out, N,
                                1f, 0f));
                assertSame(CudaException.class, e.getClass());
                assertEquals("cudaLaunchKernel", e.function());
                assertFalse(e.isSticky(), e.getMessage());
                // expected: the runtime reports cudaErrorInvalidValue for too much dynamic shared memory;
                // older drivers said cudaErrorInvalidConfiguration. Either is a refusal of the launch shape.
                assertTrue(e.error() == CudaError.INVALID_VALUE || e.error() == CudaError.INVALID_CONFIGURATION,
                        e.getMessage());
                assertCudaMessage(e, "cudaLaunchKernel", e.error(), "kernel write_pattern");
                stream.synchronize();
                assertAllNaN(out, "a refused launch");
            }
            assertSaxpyComputesOn(stream);
            assertHealthy();
        }

        // expected (the three tests above): the runtime refuses a block z above maxThreadsDim.z = 64 and a
        // grid y or z above 65535 with cudaErrorInvalidConfiguration, at the launch call, recoverably.
        private void assertLaunchRefused(LaunchConfig config, CudaError error) {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                out.memset(0xFF);
                CudaException e = assertThrows(CudaException.class, () -> writePattern.launch(config, out, N, 1f, 0f));
                assertSame(CudaException.class, e.getClass());
                assertCudaMessage(e, "cudaLaunchKernel", error, "kernel write_pattern");
                stream.synchronize();
                assertAllNaN(out, "a refused launch " + config.shape());
            }
            assertSaxpyComputesOn(stream);
            assertHealthy();
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class Allocation {
        @Test
        void allocationFarBeyondDeviceMemoryIsARecoverableCudaException() {
            long bytes = 1L << 50;
            LiveResources before = Cuda.liveResources();
            CudaException e = assertThrows(CudaException.class, () -> device.allocate(ElementType.INT8, bytes).close());
            assertSame(CudaException.class, e.getClass());
            assertCudaMessage(e, "cudaMalloc", CudaError.MEMORY_ALLOCATION, bytes + " bytes");
            assertFalse(e.isSticky());
            assertEquals(before, Cuda.liveResources(), "a failed allocation is not counted");
            // Recovery: a normal allocation and a computation succeed right after.
            try (DeviceBuffer normal = device.allocateFloats(1 << 20)) {
                normal.memset(0);
            }
            assertHealthy();
        }

        @Test
        void pinnedAllocationFarBeyondHostMemoryIsARecoverableCudaException() {
            long bytes = 1L << 50;
            CudaException e = assertThrows(CudaException.class, () -> Cuda.allocatePinned(bytes).close());
            assertSame(CudaException.class, e.getClass());
            // expected: cudaHostAlloc reports a petabyte it cannot pin as cudaErrorMemoryAllocation.
            assertCudaMessage(e, "cudaHostAlloc", CudaError.MEMORY_ALLOCATION, bytes + " bytes");
            try (PinnedBuffer normal = Cuda.allocatePinned(1 << 20)) {
                normal.segment().fill((byte) 1);
            }
            assertHealthy();
        }

        @Test
        void sizeOverflowIsRefusedBeforeTheRuntime() {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> device.allocate(ElementType.FLOAT32, Long.MAX_VALUE).close());
            assertEquals(Long.MAX_VALUE + " x FLOAT32 is more than " + Long.MAX_VALUE + " bytes", e.getMessage());
            long justOver = Long.MAX_VALUE / 8 + 1;
            IllegalArgumentException doubles = assertThrows(IllegalArgumentException.class,
                    () -> device.allocate(ElementType.FLOAT64, justOver).close());
            assertEquals(justOver + " x FLOAT64 is more than " + Long.MAX_VALUE + " bytes", doubles.getMessage());
            assertHealthy();
        }

        @ParameterizedTest(name = "length {0}")
        @ValueSource(longs = {0, -1, Long.MIN_VALUE})
        void nonPositiveLengthIsRefused(long length) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> device.allocate(ElementType.FLOAT32, length).close());
            assertEquals("length must be positive, got " + length, e.getMessage());
            IllegalArgumentException pinned = assertThrows(IllegalArgumentException.class,
                    () -> Cuda.allocatePinned(length).close());
            assertEquals("byteSize must be positive, got " + length, pinned.getMessage());
            assertHealthy();
        }

        @Test
        void noSuchDeviceIsRefused() {
            int count = Cuda.deviceCount();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Cuda.device(count));
            assertEquals("no CUDA device " + count + ": this machine has " + count, e.getMessage());
            IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> Cuda.device(-1));
            assertEquals("no CUDA device -1: this machine has " + count, negative.getMessage());
            assertHealthy();
        }

        @Test
        void sliceOutOfRangeIsRefused() {
            try (DeviceBuffer buffer = device.allocateFloats(100)) {
                IndexOutOfBoundsException range = assertThrows(IndexOutOfBoundsException.class,
                        () -> buffer.slice(95, 10));
                assertSame(IndexOutOfBoundsException.class, range.getClass());
                assertEquals("Range [95, 95 + 10) out of bounds for length 100", range.getMessage());
                IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> buffer.slice(3, 0));
                assertEquals("a slice needs at least one element", empty.getMessage());
            }
            assertHealthy();
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class Copies {
        @Test
        void copyWithAnArrayOfTheWrongLengthIsRefusedAndWritesNothing() {
            try (DeviceBuffer buffer = device.allocateFloats(16)) {
                buffer.memset(0xFF);
                IllegalArgumentException shorter = assertThrows(IllegalArgumentException.class,
                        () -> buffer.copyFrom(new float[15]));
                assertEquals("buffer has 16 elements but the array has 15; copy through a slice for part of a buffer",
                        shorter.getMessage());
                float[] longer = new float[17];
                IllegalArgumentException back = assertThrows(IllegalArgumentException.class,
                        () -> buffer.copyTo(longer));
                assertEquals("buffer has 16 elements but the array has 17; copy through a slice for part of a buffer",
                        back.getMessage());
                assertEquals(0f, longer[0], "a refused copy must not touch the array");
                assertAllNaN(buffer, "a refused copy");
            }
            assertHealthy();
        }

        @Test
        void copyWithASegmentOfTheWrongSizeIsRefused() {
            try (Arena arena = Arena.ofConfined(); DeviceBuffer buffer = device.allocateFloats(16)) {
                buffer.memset(0xFF);
                MemorySegment small = arena.allocate(60);
                IllegalArgumentException from = assertThrows(IllegalArgumentException.class,
                        () -> buffer.copyFrom(small));
                assertEquals("buffer has 64 bytes but the segment has 60", from.getMessage());
                MemorySegment large = arena.allocate(68);
                IllegalArgumentException to = assertThrows(IllegalArgumentException.class, () -> buffer.copyTo(large));
                assertEquals("buffer has 64 bytes but the segment has 68", to.getMessage());
                IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                        () -> buffer.copyFrom(MemorySegment.ofArray(new float[8])));
                assertEquals("buffer has 64 bytes but the segment has 32", heap.getMessage());
                assertAllNaN(buffer, "a refused copy");
            }
            assertHealthy();
        }

        @Test
        void copyWithAnArrayOfAnotherElementTypeIsRefused() {
            try (DeviceBuffer buffer = device.allocateFloats(4); DeviceBuffer ints = device.allocate(ElementType.INT32, 4)) {
                buffer.memset(0xFF);
                assertAll(
                        () -> assertEquals("buffer holds FLOAT32, not INT32", assertThrows(
                                IllegalArgumentException.class, () -> buffer.copyFrom(new int[4])).getMessage()),
                        () -> assertEquals("buffer holds FLOAT32, not FLOAT64", assertThrows(
                                IllegalArgumentException.class, () -> buffer.copyTo(new double[4])).getMessage()),
                        () -> assertEquals("buffer holds FLOAT32, not INT8", assertThrows(
                                IllegalArgumentException.class, () -> buffer.copyFrom(new byte[16])).getMessage()),
                        () -> assertEquals("buffer holds INT32, not FLOAT32", assertThrows(
                                IllegalArgumentException.class, ints::toFloatArray).getMessage()));
                assertAllNaN(buffer, "a refused copy");
            }
            assertHealthy();
        }

        @Test
        void deviceToDeviceCopyBetweenMismatchedBuffersIsRefused() {
            try (DeviceBuffer a = device.allocateFloats(16); DeviceBuffer b = device.allocateFloats(8);
                    DeviceBuffer ints = device.allocate(ElementType.INT32, 16)) {
                a.memset(0xFF);
                IllegalArgumentException length = assertThrows(IllegalArgumentException.class, () -> a.copyFrom(b));
                assertEquals("source is 8 x FLOAT32 but this buffer is 16 x FLOAT32", length.getMessage());
                IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
                        () -> a.copyFromAsync(ints, stream));
                assertEquals("source is 16 x INT32 but this buffer is 16 x FLOAT32", type.getMessage());
                stream.synchronize();
                assertAllNaN(a, "a refused device-to-device copy");
            }
            assertHealthy();
        }

        @Test
        void asyncCopyFromOrToAHeapSegmentIsRefused() {
            try (DeviceBuffer buffer = device.allocateFloats(16)) {
                buffer.memset(0xFF);
                float[] host = TestData.randomFloats(16, TestData.newSeed());
                IllegalArgumentException from = assertThrows(IllegalArgumentException.class,
                        () -> buffer.copyFromAsync(MemorySegment.ofArray(host), stream));
                assertEquals("an asynchronous copy needs a native segment (ideally a PinnedBuffer), not a heap segment",
                        from.getMessage());
                float[] back = TestData.nans(16);
                IllegalArgumentException to = assertThrows(IllegalArgumentException.class,
                        () -> buffer.copyToAsync(MemorySegment.ofArray(back), stream));
                assertEquals(from.getMessage(), to.getMessage());
                stream.synchronize();
                assertAllNaN(buffer, "a refused asynchronous copy");
                assertTrue(Float.isNaN(back[0]), "a refused asynchronous copy must not write the heap array");
            }
            assertHealthy();
        }

        @Test
        void copyThroughASegmentOfAClosedArenaIsRefused() {
            MemorySegment stale;
            try (Arena arena = Arena.ofConfined()) {
                stale = arena.allocate(64);
            }
            try (DeviceBuffer buffer = device.allocateFloats(16)) {
                buffer.memset(0xFF);
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> buffer.copyFrom(stale));
                assertEquals("the host segment's arena is closed", e.getMessage());
                assertAllNaN(buffer, "a refused copy");
            }
            assertHealthy();
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class LibraryImages {
        @Test
        void randomBytesAreRefusedAsALibraryImage() {
            byte[] garbage = new byte[4096];
            new SplittableRandom(TestData.newSeed()).nextBytes(garbage);
            garbage[0] = 0x11; // not the first byte of an ELF, fatbin or PTX header
            LiveResources before = Cuda.liveResources();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CudaLibrary.load("random-bytes", garbage).close());
            // expected: random bytes are neither a cubin, a fatbin nor PTX text, so the image check refuses
            // them ("corrupt image is refused here"), rather than passing them on to the runtime as PTX.
            assertTrue(e.getMessage().contains("library image"), e.getMessage());
            // load's javadoc: "name names the library in errors".
            assertTrue(e.getMessage().contains("random-bytes"), e.getMessage());
            assertEquals(before, Cuda.liveResources(), "a refused image loads nothing");
            assertHealthy();
        }

        @Test
        void emptyImageIsRefusedAsALibraryImage() {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CudaLibrary.load("zero-bytes", new byte[0]).close());
            assertTrue(e.getMessage().contains("library image"), e.getMessage());
            // load's javadoc: "name names the library in errors".
            assertTrue(e.getMessage().contains("zero-bytes"), e.getMessage());
            assertHealthy();
        }

        @ParameterizedTest(name = "{0} of the test fatbin")
        @ValueSource(ints = {2, 3, 10})
        void truncatedFatbinIsRefusedAsALibraryImage(int fraction) throws IOException {
            byte[] image = testFatbin();
            // A sanity check of the intact image, so the failure below is the truncation's doing.
            try (CudaLibrary intact = CudaLibrary.load("intact", image)) {
                assertTrue(intact.kernelNames().contains("saxpy"));
            }
            byte[] truncated = Arrays.copyOf(image, image.length / fraction);
            LiveResources before = Cuda.liveResources();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CudaLibrary.load("cut-test-kernels", truncated).close());
            assertTrue(e.getMessage().contains("library image"), e.getMessage());
            // load's javadoc: "name names the library in errors".
            assertTrue(e.getMessage().contains("cut-test-kernels"), e.getMessage());
            assertEquals(before, Cuda.liveResources(), "a refused image loads nothing");
            assertHealthy();
        }

        @Test
        void nullNameOrImageIsRefused() {
            NullPointerException name = assertThrows(NullPointerException.class,
                    () -> CudaLibrary.load(null, new byte[16]).close());
            assertEquals("name", name.getMessage());
            NullPointerException image = assertThrows(NullPointerException.class,
                    () -> CudaLibrary.load("no image", null).close());
            assertEquals("image", image.getMessage());
            assertHealthy();
        }

        @Test
        void missingResourceIsRefusedAndNamed() {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CudaLibrary.loadResource(TestData.class, "no_such.fatbin").close());
            assertEquals("no resource no_such.fatbin next to org.cudagraph4j.TestData (in a named module, pass"
                    + " MethodHandles.lookup() instead of a class, or open its package)", e.getMessage());
            assertHealthy();
        }

        @Test
        void missingKernelIsCudaErrorSymbolNotFound() {
            CudaException e = assertThrows(CudaException.class, () -> library.kernel("no_such_kernel"));
            assertSame(CudaException.class, e.getClass());
            assertCudaMessage(e, "cudaLibraryGetKernel", CudaError.SYMBOL_NOT_FOUND, "kernel no_such_kernel");
            // The failed lookup is not cached: the library still serves its real kernels.
            assertSame(saxpy, library.kernel("saxpy"));
            CudaException again = assertThrows(CudaException.class, () -> library.kernel("no_such_kernel"));
            assertEquals(CudaError.SYMBOL_NOT_FOUND, again.error());
            assertHealthy();
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class Capture {
        @Test
        void synchronizingTheCapturingStreamIsRefusedAndTheStreamRecovers() {
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                e = assertThrows(StreamCaptureException.class, stream::synchronize);
            }
            assertCaptureRefusal(e, "cudaStreamSynchronize", CaptureMode.GLOBAL, stream);
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void allocatingDuringAGlobalCaptureIsRefusedAndTheStreamRecovers() {
            StreamCaptureException e;
            LiveResources before = Cuda.liveResources();
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                e = assertThrows(StreamCaptureException.class, () -> device.allocateFloats(16).close());
            }
            assertCaptureRefusal(e, "cudaMalloc", CaptureMode.GLOBAL, stream);
            assertEquals(CudaError.STREAM_CAPTURE_UNSUPPORTED, e.error(), e.getMessage());
            assertEquals(before, Cuda.liveResources());
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void synchronousCopyDuringAGlobalCaptureIsRefusedAndTheStreamRecovers() {
            try (DeviceBuffer buffer = device.allocateFloats(16)) {
                buffer.copyFrom(TestData.randomFloats(16, TestData.newSeed()));
                StreamCaptureException e;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    e = assertThrows(StreamCaptureException.class, () -> buffer.copyTo(new float[16]));
                }
                // expected: the synchronous copy (an async copy on the legacy stream, then a synchronize of
                // the legacy stream) is a potentially unsafe call that a GLOBAL capture forbids; which of
                // the two calls the runtime refuses is not pinned here.
                assertCaptureRefusal(e, null, CaptureMode.GLOBAL, stream);
                assertTrue(List.of("cudaMemcpyAsync", "cudaStreamSynchronize").contains(e.function()),
                        e.getMessage());
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void synchronizingAnEventRecordedInTheCaptureIsRefusedAndTheStreamRecovers() {
            try (CudaEvent event = device.createEvent(CudaEvent.Option.DISABLE_TIMING)) {
                StreamCaptureException e;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    event.record(stream);
                    e = assertThrows(StreamCaptureException.class, event::synchronize);
                }
                assertCaptureRefusal(e, "cudaEventSynchronize", CaptureMode.GLOBAL, stream);
                // The event is usable again once recorded outside a capture.
                event.record(stream);
                event.synchronize();
                assertTrue(event.isComplete());
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void queryingTheCapturingStreamIsRefusedAndTheStreamRecovers() {
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                e = assertThrows(StreamCaptureException.class, stream::isIdle);
            }
            assertCaptureRefusal(e, "cudaStreamQuery", CaptureMode.GLOBAL, stream);
            assertTrue(stream.isIdle());
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void synchronizingTheDeviceDuringAGlobalCaptureIsRefusedAndTheStreamRecovers() {
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                e = assertThrows(StreamCaptureException.class, device::synchronize);
            }
            // expected: cudaDeviceSynchronize is refused like cudaStreamSynchronize of the capturing stream.
            assertCaptureRefusal(e, "cudaDeviceSynchronize", CaptureMode.GLOBAL, stream);
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void allocatingFromAnotherPlatformThreadDuringAGlobalCaptureIsRefused() {
            StreamCaptureException e;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                e = assertThrows(StreamCaptureException.class,
                        () -> onAnotherPlatformThread(() -> {
                            device.allocateFloats(16).close();
                            return null;
                        }));
            }
            assertCaptureRefusal(e, "cudaMalloc", CaptureMode.GLOBAL, stream);
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void allocatingFromAnotherThreadDuringAThreadLocalCaptureIsAllowed() throws Throwable {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                CudaGraph graph;
                DeviceBuffer allocatedElsewhere;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.THREAD_LOCAL)) {
                    writePattern.launch(config(stream), out, N, 2f, 1f);
                    allocatedElsewhere = onAnotherPlatformThread(() -> device.allocateFloats(N));
                    graph = capture.end();
                }
                try (allocatedElsewhere; graph; GraphExec exec = graph.instantiate()) {
                    assertEquals(CaptureStatus.NONE, stream.captureStatus());
                    assertEquals(1, graph.nodes().size());
                    float[] data = TestData.randomFloats(N, TestData.newSeed());
                    allocatedElsewhere.copyFrom(data);
                    assertEquals(Arrays.toString(data), Arrays.toString(allocatedElsewhere.toFloatArray()));
                    assertExecWritesPattern(exec, out, 2f, 1f);
                }
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void allocatingDuringARelaxedCaptureIsAllowed() {
            CudaGraph graph;
            DeviceBuffer scratch;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.RELAXED)) {
                scratch = device.allocateFloats(N);
                writePattern.launch(config(stream), scratch, N, 0.25f, 8f);
                graph = capture.end();
            }
            try (scratch; graph; GraphExec exec = graph.instantiate()) {
                assertEquals(1, graph.nodes().size());
                assertExecWritesPattern(exec, scratch, 0.25f, 8f);
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void endingAGlobalCaptureFromAnotherThreadIsRefusedAndEndsTheCapture() {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL);
                try (capture) {
                    writePattern.launch(config(stream), out, N, 1f, 0f);
                    StreamCaptureException e = assertThrows(StreamCaptureException.class,
                            () -> onAnotherPlatformThread(() -> {
                                capture.end().close();
                                return null;
                            }));
                    // cudaErrorStreamCaptureWrongThread (908) is in the capture range, so it surfaces as
                    // the CudaException subclass StreamCaptureException.
                    assertCaptureRefusal(e, "cudaStreamEndCapture", CaptureMode.GLOBAL, stream);
                    assertEquals(CudaError.STREAM_CAPTURE_WRONG_THREAD, e.error(), e.getMessage());
                    // Seen on the H200 (driver 580): the refused end still ends the capture, so the scope is
                    // finished too; a runtime that kept capturing would leave it open instead.
                    assertEquals(CaptureStatus.NONE, stream.captureStatus());
                }
                IllegalStateException ended = assertThrows(IllegalStateException.class, capture::end);
                assertTrue(ended.getMessage().startsWith("capture already ended: "), ended.getMessage());
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void beginningACaptureOnACapturingStreamIsRefusedAndTheFirstCaptureGoesOn() {
            try (DeviceBuffer out = device.allocateFloats(N)) {
                CudaGraph graph;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> StreamCapture.begin(stream, CaptureMode.RELAXED).close());
                    assertEquals("stream is already capturing: GLOBAL capture on " + stream, e.getMessage());
                    assertEquals(CaptureStatus.ACTIVE, stream.captureStatus());
                    writePattern.launch(config(stream), out, N, 2f, 7f);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    assertExecWritesPattern(exec, out, 2f, 7f);
                }
            }
            assertStreamRecoveredFromCapture(stream);
        }

        @Test
        void unjoinedForkEndsTheCaptureWithStreamCaptureUnjoined() {
            try (CudaStream side = device.createStream();
                    CudaEvent fork = device.createEvent(CudaEvent.Option.DISABLE_TIMING);
                    DeviceBuffer out = device.allocateFloats(N)) {
                StreamCaptureException e;
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                    fork.record(stream);
                    side.waitFor(fork);
                    writePattern.launch(config(side), out, N, 1f, 0f);
                    e = assertThrows(StreamCaptureException.class, capture::end);
                }
                assertCaptureRefusal(e, "cudaStreamEndCapture", CaptureMode.GLOBAL, stream);
                // expected: ending with an unjoined fork is cudaErrorStreamCaptureUnjoined and ends the
                // capture on every stream that took part, so the side stream works again too.
                assertEquals(CudaError.STREAM_CAPTURE_UNJOINED, e.error(), e.getMessage());
                assertEquals(CaptureStatus.NONE, side.captureStatus());
                assertSaxpyComputesOn(side);
            }
            assertStreamRecoveredFromCapture(stream);
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class Updates {
        @Test
        void updateWithAnotherTopologyIsTopologyChangedAndTheExecutableKeepsItsResult() {
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph original = patternGraph(out, 0.5f, 4f);
                    CudaGraph bigger = patternGraph(out, 2f, 1f); GraphExec exec = original.instantiate()) {
                bigger.addEmpty(bigger.nodes().get(0));
                LiveResources before = Cuda.liveResources();
                GraphUpdateException e = assertThrows(GraphUpdateException.class, () -> exec.update(bigger));
                assertSame(GraphUpdateException.class, e.getClass());
                assertEquals(UpdateResult.TOPOLOGY_CHANGED, e.result(), e.getMessage());
                assertEquals("cudaGraphExecUpdate", e.function());
                assertEquals(CudaError.GRAPH_EXEC_UPDATE_FAILURE, e.error());
                assertTrue(e.getMessage().startsWith("cudaGraphExecUpdate: cudaErrorGraphExecUpdateFailure (910): "),
                        e.getMessage());
                assertTrue(e.getMessage().contains(" [cudaGraphExecUpdateErrorTopologyChanged"), e.getMessage());
                assertFalse(e.isSticky());
                assertEquals(before, Cuda.liveResources(), "a refused update holds nothing more");
                assertExecWritesPattern(exec, out, 0.5f, 4f);
            }
            assertHealthy();
        }

        @Test
        void updateThatChangesTheKernelTakesTheNewKernelAndItsBuffers() {
            long seed = TestData.newSeed();
            float[] x = TestData.randomFloats(N, seed + 1);
            float[] y = TestData.randomFloats(N, seed);
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph original = patternGraph(out, 0.5f, 4f);
                    GraphExec exec = original.instantiate()) {
                DeviceBuffer dx = device.allocateFloats(N);
                try (DeviceBuffer dy = device.allocateFloats(N)) {
                    try (CudaGraph otherKernel = CudaGraph.create()) {
                        dx.copyFrom(x);
                        otherKernel.addKernel(KernelLaunch.of(saxpy, Dim3.of(40), Dim3.of(THREADS_PER_BLOCK), 0,
                                N, 2f, dx, dy));
                        // cudaGraphExecUpdate accepts another function in the same context (since CUDA 11.2):
                        // the executable then runs saxpy, and holds saxpy's buffers.
                        exec.update(otherKernel);
                    }
                    dx.close();
                    dy.copyFrom(y);
                    exec.launch(stream);
                    stream.synchronize();
                    float[] result = dy.toFloatArray();
                    for (int i = 0; i < N; i++) {
                        assertEquals(2f * x[i] + y[i], result[i], 1e-6f * Math.abs(2f * x[i] + y[i]) + 1e-7f,
                                TestData.seedDescription(seed) + ", element " + i);
                    }
                }
            }
            assertHealthy();
        }

        @Test
        void updateKernelNodeWithANodeOfAnotherGraphIsRefused() {
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph original = patternGraph(out, 0.5f, 4f);
                    CudaGraph other = patternGraph(out, 2f, 1f); GraphExec exec = original.instantiate()) {
                GraphNode foreign = other.nodes().get(0);
                KernelLaunch params = foreign.kernelParams().orElseThrow();
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> exec.updateKernelNode(foreign, params));
                assertEquals(foreign + " is not a node of the graph this executable was made from", e.getMessage());
                assertExecWritesPattern(exec, out, 0.5f, 4f);
            }
            assertHealthy();
        }

        @Test
        void updateKernelNodeWithAMemsetNodeIsRefusedNamingTheNodeType() {
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
                GraphNode memset = graph.addMemset(out, 0xFF);
                graph.addKernel(KernelLaunch.of(writePattern, Dim3.of(40), Dim3.of(THREADS_PER_BLOCK), 0, out, N,
                        0.5f, 6f), memset);
                try (GraphExec exec = graph.instantiate()) {
                    KernelLaunch params = KernelLaunch.of(writePattern, Dim3.of(40), Dim3.of(THREADS_PER_BLOCK),
                            0, out, N, 2f, 0f);
                    IllegalStateException e = assertThrows(IllegalStateException.class,
                            () -> exec.updateKernelNode(memset, params));
                    assertEquals("node 0 is a MEMSET node, not KERNEL", e.getMessage());
                    assertExecWritesPattern(exec, out, 0.5f, 6f);
                }
            }
            assertHealthy();
        }

        @Test
        void updateKernelNodeWithAClosedBufferIsRefusedAndTheExecutableKeepsItsResult() {
            DeviceBuffer doomed = device.allocateFloats(N);
            String doomedName = doomed.toString();
            doomed.close();
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph graph = patternGraph(out, 0.5f, 4f);
                    GraphExec exec = graph.instantiate()) {
                GraphNode node = graph.nodes().get(0);
                KernelLaunch params = node.kernelParams().orElseThrow().withArguments(doomed, N, 1f, 0f);
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> exec.updateKernelNode(node, params));
                assertEquals(doomedName + " is closed", e.getMessage());
                assertExecWritesPattern(exec, out, 0.5f, 4f);
            }
            assertHealthy();
        }

        @Test
        void instantiateWithUploadButNoStreamIsRefused() {
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph graph = patternGraph(out, 1f, 0f)) {
                LiveResources before = Cuda.liveResources();
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> graph.instantiate(InstantiateFlag.UPLOAD).close());
                assertEquals("InstantiateFlag.UPLOAD needs a stream: use instantiate(stream, flags)", e.getMessage());
                assertEquals(before, Cuda.liveResources());
            }
            assertHealthy();
        }

        @Test
        void graphNodesOfAnotherGraphOrMismatchedCopiesAreRefused() {
            try (CudaGraph a = CudaGraph.create(); CudaGraph b = CudaGraph.create();
                    DeviceBuffer big = device.allocateFloats(16); DeviceBuffer small = device.allocateFloats(8)) {
                GraphNode inA = a.addEmpty();
                IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class, () -> b.addEmpty(inA));
                assertEquals(inA + " belongs to another graph", foreign.getMessage());
                IllegalArgumentException copy = assertThrows(IllegalArgumentException.class,
                        () -> b.addMemcpy(big, small));
                assertEquals("memcpy node: destination has 64 bytes but source has 32", copy.getMessage());
                assertTrue(b.nodes().isEmpty());
            }
            assertHealthy();
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Nested
    @Tag("gpu") // surefire does not apply the enclosing class's tag to nested classes when filtering
    class Concurrency {
        @Test
        void sixteenPlatformThreadsLaunchOneShotSaxpyOnTheirOwnStreams() throws Exception {
            try (ExecutorService executor = Executors.newThreadPerTaskExecutor(
                    Thread.ofPlatform().name("fault-saxpy-platform-", 0).factory())) {
                runAllAtOnce(executor, 16, index -> {
                    try (CudaStream own = device.createStream()) {
                        for (int round = 0; round < 4; round++) {
                            assertSaxpyComputesOn(own);
                        }
                    }
                });
            }
            assertHealthy();
        }

        @Test
        void sixtyFourVirtualThreadsLaunchOneShotSaxpyOnTheirOwnStreams() throws Exception {
            try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
                runAllAtOnce(executor, 64, index -> {
                    try (CudaStream own = device.createStream()) {
                        for (int round = 0; round < 2; round++) {
                            assertSaxpyComputesOn(own);
                        }
                    }
                });
            }
            assertHealthy();
        }

        @Test
        void oneGraphExecLaunchedFromEightThreadsWhileAnotherUpdatesItsKernelNode() throws Exception {
            float scale = 0.5f;
            float offset = 9f;
            int launchesPerThread = 25;
            try (DeviceBuffer out = device.allocateFloats(N); CudaGraph graph = patternGraph(out, scale, offset);
                    GraphExec exec = graph.instantiate()) {
                out.memset(0xFF);
                GraphNode node = graph.nodes().get(0);
                KernelLaunch original = node.kernelParams().orElseThrow();
                // Equivalent parameters: the same kernel and arguments; a grid-stride loop makes any shape
                // write the same values.
                List<KernelLaunch> equivalents = List.of(original,
                        original.withLaunchShape(Dim3.of(7), Dim3.of(128), 0),
                        original.withLaunchShape(Dim3.of(3), Dim3.of(1024), 0));
                AtomicBoolean launching = new AtomicBoolean(true);
                AtomicInteger updates = new AtomicInteger();
                CyclicBarrier start = new CyclicBarrier(9);
                try (ExecutorService executor = Executors.newThreadPerTaskExecutor(
                        Thread.ofPlatform().name("fault-graph-", 0).factory())) {
                    Future<?> updater = executor.submit(() -> {
                        start.await();
                        for (int i = 0; launching.get() || i < 8; i++) {
                            exec.updateKernelNode(node, equivalents.get(i % equivalents.size()));
                            updates.incrementAndGet();
                        }
                        return null;
                    });
                    try {
                        runAllAtOnce(executor, 8, index -> {
                            start.await();
                            try (CudaStream own = device.createStream()) {
                                for (int launch = 0; launch < launchesPerThread; launch++) {
                                    exec.launch(own);
                                    own.synchronize();
                                    float[] result = TestData.nans(N);
                                    out.copyTo(result);
                                    assertPattern(result, scale, offset,
                                            "thread " + index + ", launch " + launch + " of the shared executable");
                                }
                            }
                        });
                    } finally {
                        launching.set(false);
                    }
                    try {
                        updater.get(THREAD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                    } catch (ExecutionException e) {
                        throw new AssertionError("the updating thread failed: " + e.getCause(), e.getCause());
                    }
                }
                assertTrue(updates.get() >= 8, "updates: " + updates.get());
                assertExecWritesPattern(exec, out, scale, offset);
            }
            assertHealthy();
        }

        @Test
        void thirtyTwoVirtualThreadsAllocateAndFreeAtOnce() throws Exception {
            LiveResources before = Cuda.liveResources();
            Set<Long> addresses = ConcurrentHashMap.newKeySet();
            CyclicBarrier allAllocated = new CyclicBarrier(32);
            try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
                runAllAtOnce(executor, 32, index -> {
                    int length = 1000 + 4099 * index;
                    long seed = TestData.newSeed();
                    float[] data = TestData.randomFloats(length, seed);
                    try (DeviceBuffer buffer = device.allocateFloats(length)) {
                        addresses.add(buffer.address());
                        buffer.copyFrom(data);
                        // Every buffer is alive at once here, so their addresses must all differ.
                        allAllocated.await(THREAD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                        float[] back = TestData.nans(length);
                        buffer.copyTo(back);
                        for (int i = 0; i < length; i++) {
                            if (Float.floatToRawIntBits(back[i]) != Float.floatToRawIntBits(data[i])) {
                                fail("thread " + index + ", element " + i + ": " + back[i] + " != " + data[i] + " ("
                                        + TestData.seedDescription(seed) + ")");
                            }
                        }
                    }
                });
            }
            assertEquals(32, addresses.size(), "live allocations must not share an address");
            assertEquals(before, Cuda.liveResources(), "every allocation was freed");
            assertHealthy();
        }
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
        assertHealthy();
    }
}
