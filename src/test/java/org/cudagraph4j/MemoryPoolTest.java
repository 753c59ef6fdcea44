package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Stream-ordered allocation: {@link MemoryPool}, {@link CudaStream#allocate} and the buffers they make. */
@GpuTest
class MemoryPoolTest {
    private static final long MIB = 1L << 20;

    private CudaDevice device;
    private CudaLibrary library;
    private CudaKernel writePattern;
    private CudaKernel saxpy;
    private CudaStream stream;

    @BeforeEach
    void setUp() {
        device = TestData.device();
        library = TestData.testKernels();
        writePattern = library.kernel("write_pattern");
        saxpy = library.kernel("saxpy");
        stream = device.createStream();
    }

    @AfterEach
    void tearDown() {
        stream.close();
        library.close();
    }

    // Round trips.

    /** Sizes straddle the 8 MiB staging chunk of synchronous copies. */
    @ParameterizedTest
    @ValueSource(ints = {1, 1000, 65_537, 3_000_001})
    void synchronousCopiesRoundTripThroughAPoolBuffer(int length) {
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults());
                DeviceBuffer buffer = pool.allocateFloats(stream, length)) {
            TestData.assertFloatsRoundTrip(buffer, length);
        }
    }

    @Test
    void asyncCopiesAndAKernelOnTheAllocatingStreamGiveTheExpectedValues() {
        int n = 1 << 20;
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(n, seed);
        float[] y = TestData.randomFloats(n, seed + 1);
        float a = 1.5f;
        try (PinnedBuffer pinned = Cuda.allocatePinned(4L * n);
                DeviceBuffer dx = stream.allocate(ElementType.FLOAT32, n);
                DeviceBuffer dy = device.defaultMemoryPool().allocateFloats(stream, n)) {
            MemorySegment host = pinned.segment();
            MemorySegment.copy(x, 0, host, ValueLayout.JAVA_FLOAT, 0, n);
            dx.copyFromAsync(host, stream);
            stream.synchronize(); // the host rewrites the pinned buffer next
            MemorySegment.copy(y, 0, host, ValueLayout.JAVA_FLOAT, 0, n);
            dy.copyFromAsync(host, stream);
            saxpy.launch(stream, config(n), n, a, dx, dy);
            stream.synchronize();
            host.fill((byte) 0xFF); // NaN everywhere: a copy that did not happen shows
            dy.copyToAsync(host, stream);
            stream.synchronize();
            float[] result = host.toArray(ValueLayout.JAVA_FLOAT);
            for (int i = 0; i < n; i++) {
                float expected = Math.fma(a, x[i], y[i]); // nvcc contracts a * x + y into one FMA
                assertEquals(expected, result[i], 2 * Math.ulp(expected),
                        "element " + i + ", " + TestData.seedDescription(seed));
            }
        }
    }

    @Test
    void aSynchronousCopyWaitsForWorkQueuedOnTheBuffersStream() {
        int n = 1 << 22;
        try (DeviceBuffer out = stream.allocate(ElementType.FLOAT32, n)) {
            writePattern.launch(stream, config(n), out, n, 0.25f, 7f);
            float[] result = TestData.nans(n);
            out.copyTo(result); // no stream.synchronize(): the copy itself must wait for the kernel
            for (int i = 0; i < n; i += 997) {
                assertEquals(i * 0.25f + 7f, result[i], "element " + i);
            }
            assertEquals((n - 1) * 0.25f + 7f, result[n - 1]);
        }
    }

    // Reuse in stream order, statistics, threshold, trim.

    @Test
    void memoryFreedOnAStreamIsReusedByTheNextAllocationThere() {
        long bytes = 32 * MIB;
        int rounds = 200; // 6.4 GB if nothing were reused
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults().withReleaseThreshold(Long.MAX_VALUE))) {
            Set<Long> addresses = new HashSet<>();
            for (int round = 0; round < rounds; round++) {
                try (DeviceBuffer scratch = pool.allocate(stream, ElementType.INT8, bytes)) {
                    scratch.memsetAsync(round, stream);
                    addresses.add(scratch.address());
                }
            }
            stream.synchronize();
            MemoryPool.Statistics statistics = pool.statistics();
            assertTrue(statistics.reservedHighBytes() <= 4 * bytes,
                    "in-stream frees were not reused: " + statistics + ", " + addresses.size() + " addresses");
            assertTrue(addresses.size() < rounds / 2, addresses.size() + " distinct addresses in " + rounds + " rounds");
            assertEquals(0, statistics.usedBytes(), statistics.toString());
        }
    }

    @Test
    void statisticsMoveAsDocumented() {
        long bytes = 48 * MIB;
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults().withReleaseThreshold(Long.MAX_VALUE))) {
            assertEquals(new MemoryPool.Statistics(0, 0, 0, 0), pool.statistics(), "a new pool holds nothing");
            DeviceBuffer first = pool.allocate(stream, ElementType.INT8, bytes);
            DeviceBuffer second = pool.allocate(stream, ElementType.INT8, bytes);
            MemoryPool.Statistics live = pool.statistics();
            assertEquals(2 * bytes, live.usedBytes(), live.toString());
            assertTrue(live.reservedBytes() >= 2 * bytes, live.toString());
            assertEquals(live.usedBytes(), live.usedHighBytes(), live.toString());
            first.close();
            second.close();
            stream.synchronize();
            MemoryPool.Statistics freed = pool.statistics();
            assertEquals(0, freed.usedBytes(), freed.toString());
            assertEquals(2 * bytes, freed.usedHighBytes(), "the high watermark remembers: " + freed);
            assertTrue(freed.reservedBytes() >= 2 * bytes, "a threshold of Long.MAX_VALUE keeps it all: " + freed);
            pool.resetHighWatermarks();
            MemoryPool.Statistics reset = pool.statistics();
            assertEquals(0, reset.usedHighBytes(), "nothing is in use now: " + reset);
        }
    }

    @Test
    void theReleaseThresholdDecidesWhatASynchronizeKeepsAndTrimToGivesTheRestBack() {
        long bytes = 64 * MIB;
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults())) {
            assertEquals(0, pool.releaseThreshold());
            pool.allocate(stream, ElementType.INT8, bytes).close();
            stream.synchronize();
            assertTrue(pool.statistics().reservedBytes() < bytes,
                    "threshold 0: the synchronize gives the memory back: " + pool.statistics());

            pool.setReleaseThreshold(Long.MAX_VALUE);
            assertEquals(Long.MAX_VALUE, pool.releaseThreshold());
            pool.allocate(stream, ElementType.INT8, bytes).close();
            stream.synchronize();
            assertTrue(pool.statistics().reservedBytes() >= bytes, "kept: " + pool.statistics());

            pool.trimTo(0);
            assertEquals(0, pool.statistics().reservedBytes(), "trimmed: " + pool.statistics());
        }
    }

    @Test
    void aPoolsMaximumSizeIsEnforcedWithTheLibrarysException() {
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults().withMaxSize(64 * MIB))) {
            long before = Cuda.liveResources().deviceBuffers();
            CudaException e = assertThrows(CudaException.class,
                    () -> pool.allocate(stream, ElementType.INT8, 256 * MIB));
            assertEquals(CudaError.MEMORY_ALLOCATION, e.error(), e.getMessage());
            assertEquals("cudaMallocFromPoolAsync", e.function());
            assertEquals(before, Cuda.liveResources().deviceBuffers(), "a failed allocation counts nothing");
            try (DeviceBuffer fits = pool.allocate(stream, ElementType.INT8, 16 * MIB)) {
                fits.memsetAsync(0, stream);
                stream.synchronize();
            }
        }
    }

    @Test
    void anImpossibleAllocationIsOutOfMemoryNotACrash() {
        CudaException e = assertThrows(CudaException.class, () -> stream.allocate(ElementType.INT8, 1L << 44));
        assertEquals(CudaError.MEMORY_ALLOCATION, e.error(), e.getMessage());
        stream.synchronize(); // the stream is still usable
    }

    // Many threads.

    @Test
    void manyThreadsAllocateAndFreeConcurrentlyWithoutOverlap() throws Exception {
        int threads = 16;
        int rounds = 150;
        long before = Cuda.liveResources().deviceBuffers();
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults().withReleaseThreshold(256 * MIB));
                CudaStream shared = device.createStream();
                ExecutorService executor = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(executor.submit(() -> {
                    // Half the threads share one stream, half have their own; half use the default pool.
                    CudaStream own = thread % 2 == 0 ? device.createStream() : null;
                    CudaStream on = own != null ? own : shared;
                    MemoryPool from = thread % 4 < 2 ? pool : device.defaultMemoryPool();
                    SplittableRandom random = new SplittableRandom(TestData.newSeed());
                    try (PinnedBuffer host = Cuda.allocatePinned(4 * MIB)) {
                        for (int round = 0; round < rounds; round++) {
                            int bytes = 1 + random.nextInt((int) (4 * MIB));
                            byte value = (byte) (thread * 16 + round % 16 + 1);
                            try (DeviceBuffer scratch = from.allocate(on, ElementType.INT8, bytes)) {
                                // Keep a few live at once to make overlaps between live buffers show.
                                try (DeviceBuffer other = from.allocate(on, ElementType.INT8, 1 + random.nextInt(4096))) {
                                    other.memsetAsync(~value, on);
                                    scratch.memsetAsync(value, on);
                                }
                                MemorySegment slice = host.segment().asSlice(0, bytes);
                                slice.fill((byte) 0);
                                scratch.copyToAsync(slice, on);
                                on.synchronize();
                                for (long i = 0; i < bytes; i += 4093) {
                                    assertEquals(value, slice.get(ValueLayout.JAVA_BYTE, i), "thread " + thread + " byte " + i);
                                }
                                assertEquals(value, slice.get(ValueLayout.JAVA_BYTE, bytes - 1));
                            }
                        }
                    } finally {
                        if (own != null) {
                            own.close();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                future.get();
            }
            device.synchronize(); // every free has been reached
            assertEquals(0, pool.statistics().usedBytes(), pool.statistics().toString());
        }
        assertEquals(before, Cuda.liveResources().deviceBuffers());
    }

    // Lifetimes: graphs, closed streams, closed pools.

    @Test
    void aGraphKeepsAClosedStreamOrderedBufferAliveAfterItsStreamIsClosedToo() {
        int n = 100_003;
        LiveResources baseline = Cuda.liveResources();
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults().withReleaseThreshold(Long.MAX_VALUE));
                DeviceBuffer out = device.allocateFloats(n);
                CudaStream launching = device.createStream()) {
            CudaStream allocating = device.createStream();
            DeviceBuffer scratch = pool.allocateFloats(allocating, n);
            scratch.memsetAsync(0xFF, allocating); // initcheck: the captured copy's source is written
            allocating.synchronize();
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(allocating, CaptureMode.GLOBAL)) {
                writePattern.launch(allocating, LaunchConfig.of(Dim3.of(64), Dim3.of(256)), scratch, n, 2f, -1f);
                out.copyFromAsync(scratch, allocating);
                graph = capture.end();
            }
            scratch.close();
            allocating.close();
            assertFalse(scratch.isOpen());
            assertFalse(allocating.isOpen());
            assertEquals(baseline.deviceBuffers() + 2, Cuda.liveResources().deviceBuffers(), "the graph holds scratch");
            assertEquals(baseline.streams() + 2, Cuda.liveResources().streams(), "scratch holds its stream");
            try (graph; GraphExec exec = graph.instantiate()) {
                for (int launch = 0; launch < 3; launch++) {
                    out.memset(0xFF);
                    exec.launch(launching);
                    launching.synchronize();
                    float[] result = out.toFloatArray();
                    for (int i = 0; i < n; i++) {
                        assertEquals(i * 2f - 1f, result[i], "launch " + launch + ", element " + i);
                    }
                }
                assertTrue(pool.statistics().usedBytes() >= n * 4L, pool.statistics().toString());
            }
            LiveResources after = Cuda.liveResources();
            assertEquals(baseline.deviceBuffers() + 1, after.deviceBuffers(), "freed when the last graph let go");
            assertEquals(baseline.streams() + 1, after.streams(), "the allocating stream went with it");
            assertEquals(0, pool.statistics().usedBytes(), "back in the pool: " + pool.statistics());
        }
        assertEquals(baseline, Cuda.liveResources());
    }

    @Test
    void preparedArgumentsRefuseAClosedStreamOrderedBufferInsteadOfKeepingIt() {
        int n = 512;
        long buffers = Cuda.liveResources().deviceBuffers();
        DeviceBuffer scratch = stream.allocate(ElementType.FLOAT32, n);
        try (KernelArguments arguments = writePattern.arguments(scratch, n, 1f, 0f)) {
            writePattern.launch(stream, config(n), arguments);
            assertEquals(n - 1f, scratch.toFloatArray()[n - 1]);
            scratch.close();
            assertEquals(buffers, Cuda.liveResources().deviceBuffers(), "prepared arguments do not hold buffers");
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> writePattern.launch(stream, config(n), arguments));
            assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        }
    }

    @Test
    void aBufferOutlivesTheStreamItWasAllocatedOnAndFreesInItsOrder() {
        int n = 4096;
        CudaStream allocating = device.createStream();
        DeviceBuffer buffer = allocating.allocate(ElementType.FLOAT32, n);
        writePattern.launch(allocating, LaunchConfig.of(Dim3.of(16), Dim3.of(256)), buffer, n, 1f, 0f);
        allocating.close();
        assertThrows(IllegalStateException.class, allocating::handle);
        float[] result = buffer.toFloatArray(); // waits for the closed stream's kernel
        assertEquals(n - 1f, result[n - 1]);
        long streams = Cuda.liveResources().streams();
        buffer.close();
        assertEquals(streams - 1, Cuda.liveResources().streams(), "the stream was destroyed with its last buffer");
        buffer.close(); // idempotent: no second free
        assertEquals(streams - 1, Cuda.liveResources().streams());
    }

    @Test
    void closingAPoolWithBuffersOutDefersItsDestruction() {
        long pools = Cuda.liveResources().memoryPools();
        MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults());
        assertEquals(pools + 1, Cuda.liveResources().memoryPools());
        DeviceBuffer buffer = pool.allocateFloats(stream, 1000);
        pool.close();
        pool.close();
        assertFalse(pool.isOpen());
        assertThrows(IllegalStateException.class, () -> pool.allocateFloats(stream, 1));
        assertThrows(IllegalStateException.class, pool::statistics);
        assertThrows(IllegalStateException.class, () -> pool.trimTo(0));
        assertThrows(IllegalStateException.class, pool::handle);
        assertEquals(pools + 1, Cuda.liveResources().memoryPools(), "a buffer is still out");
        buffer.memsetAsync(0, stream);
        float[] zeros = buffer.toFloatArray();
        assertEquals(0f, zeros[999]);
        buffer.close();
        assertEquals(pools, Cuda.liveResources().memoryPools());
    }

    @Test
    void theDefaultPoolIsTheRuntimesAndClosingItDoesNothing() {
        MemoryPool pool = device.defaultMemoryPool();
        assertTrue(pool.isDefault());
        assertEquals(device, pool.device());
        assertEquals(pool.handle().address(), device.defaultMemoryPool().handle().address());
        long pools = Cuda.liveResources().memoryPools();
        pool.close();
        assertTrue(pool.isOpen());
        assertEquals(pools, Cuda.liveResources().memoryPools());
        try (DeviceBuffer buffer = pool.allocateFloats(stream, 10)) {
            buffer.memset(0);
            assertEquals(0f, buffer.toFloatArray()[9]);
        }
        try (MemoryPool owned = device.createMemoryPool(MemoryPool.Options.defaults())) {
            assertFalse(owned.isDefault());
            assertNotEquals(pool.handle().address(), owned.handle().address());
        }
    }

    // Capture.

    @Test
    void allocatingFromAPoolOnACapturingStreamIsRefusedAndTheCaptureSurvives() {
        int n = 1024;
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults());
                DeviceBuffer out = device.allocateFloats(n)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                IllegalStateException refused = assertThrows(IllegalStateException.class,
                        () -> pool.allocateFloats(stream, n));
                assertTrue(refused.getMessage().contains("is capturing: allocate with CudaStream.allocate"),
                        refused.getMessage());
                assertEquals(CaptureStatus.ACTIVE, stream.captureStatus());
                writePattern.launch(stream, LaunchConfig.of(Dim3.of(4), Dim3.of(256)), out, n, 1f, 5f);
                graph = capture.end();
            }
            assertEquals(0, pool.statistics().usedBytes(), "nothing was allocated");
            try (graph; GraphExec exec = graph.instantiate()) {
                out.memset(0xFF);
                exec.launch(stream);
                stream.synchronize();
                assertEquals(n - 1 + 5f, out.toFloatArray()[n - 1]);
            }
        }
    }

    @Test
    void closingABufferWhileItsStreamCapturesHandsItToTheGraph() {
        int n = 2048;
        long buffers = Cuda.liveResources().deviceBuffers();
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults());
                DeviceBuffer out = device.allocateFloats(n)) {
            DeviceBuffer scratch = pool.allocateFloats(stream, n);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                writePattern.launch(stream, LaunchConfig.of(Dim3.of(8), Dim3.of(256)), out, n, 3f, 0f);
                scratch.close(); // a cudaFreeAsync here would invalidate the capture
                assertFalse(scratch.isOpen());
                assertEquals(CaptureStatus.ACTIVE, stream.captureStatus());
                graph = capture.end();
            }
            assertEquals(buffers + 2, Cuda.liveResources().deviceBuffers(), "the graph frees scratch, later");
            try (graph; GraphExec exec = graph.instantiate()) {
                out.memset(0xFF);
                exec.launch(stream);
                stream.synchronize();
                assertEquals(3f * (n - 1), out.toFloatArray()[n - 1]);
            }
            assertEquals(buffers + 1, Cuda.liveResources().deviceBuffers());
            assertEquals(0, pool.statistics().usedBytes());
        }
    }

    // Misuse.

    @Test
    void misuseIsRefusedWithClearExceptions() {
        try (MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults())) {
            assertThrows(IllegalArgumentException.class, () -> pool.allocateFloats(stream, 0));
            assertThrows(IllegalArgumentException.class, () -> pool.allocateFloats(stream, -1));
            assertThrows(IllegalArgumentException.class, () -> stream.allocate(ElementType.FLOAT32, 0));
            assertThrows(IllegalArgumentException.class,
                    () -> pool.allocate(stream, ElementType.FLOAT64, Long.MAX_VALUE / 4));
            assertThrows(NullPointerException.class, () -> pool.allocateFloats(null, 1));
            assertThrows(IllegalArgumentException.class, () -> pool.setReleaseThreshold(-1));
            assertThrows(IllegalArgumentException.class, () -> pool.trimTo(-1));
            CudaStream closed = device.createStream();
            closed.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.allocateFloats(closed, 1));
            assertTrue(e.getMessage().contains("is closed"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> closed.allocate(ElementType.FLOAT32, 1));
            assertEquals(0, pool.statistics().usedBytes());
        }
    }

    @Test
    void aPoolOfAnotherDeviceIsRefused() {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        CudaDevice another = devices.stream().filter(d -> !d.equals(device)).findFirst().orElseThrow();
        try (MemoryPool other = another.createMemoryPool(MemoryPool.Options.defaults())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> other.allocateFloats(stream, 16));
            assertTrue(e.getMessage().contains("allocate from a pool of the stream's device"), e.getMessage());
        }
    }

    private LaunchConfig config(int n) {
        return LaunchConfig.of(Dim3.of(Math.min((n + 255) / 256, 1024)), Dim3.of(256));
    }
}
