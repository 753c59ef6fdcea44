package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.StreamCaptureException;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Regression tests for the reliability defects found on the H200: each one failed before its fix.
 * The image-fuzz defect has its own test ({@code ImageFuzzTest}).
 */
@GpuTest
class ReliabilityTest {
    private static final long GIB = 1L << 30;

    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    private LaunchConfig config(int n) {
        return LaunchConfig.of(Dim3.of(Math.min((n + 255) / 256, 1024)), Dim3.of(256));
    }

    // Defect 2: use-after-free through prepared arguments.

    @Test
    void preparedArgumentsRefuseABufferClosedAfterTheyWereMade() {
        int n = 1 << 20;
        DeviceBuffer closed = gpu.device().allocateFloats(n);
        try (KernelArguments arguments = gpu.writePattern().arguments(closed, n, 1f, 2f)) {
            closed.close();
            // Same size, allocated right after the free: the allocator tends to hand back the same address.
            try (DeviceBuffer live = gpu.device().allocateFloats(n)) {
                live.memset(0xFF);
                IllegalStateException refused = assertThrows(IllegalStateException.class,
                        () -> gpu.writePattern().launch(gpu.stream(), config(n), arguments));
                assertEquals("kernel write_pattern, argument 0: " + closed + " is closed; a launch must not touch"
                        + " freed memory", refused.getMessage());
                gpu.stream().synchronize();
                for (float value : live.toFloatArray()) {
                    assertTrue(Float.isNaN(value), "the refused launch wrote into a live buffer");
                }
            }
        }
    }

    @Test
    void aRefusedOneShotLaunchLeaksNoArgumentMemory() {
        DeviceBuffer closed = gpu.device().allocateFloats(64);
        closed.close();
        long before = Cuda.liveResources().kernelArguments();
        for (int i = 0; i < 1000; i++) {
            assertThrows(IllegalStateException.class,
                    () -> gpu.writePattern().launch(gpu.stream(), config(64), closed, 64, 1f, 0f));
        }
        assertEquals(before, Cuda.liveResources().kernelArguments());
        assertFalse(KernelArguments.threadScratchTaken(), "each refused launch gave its thread's block back");
    }

    @Test
    void aGraphNodeCannotBeBuiltFromAClosedBuffer() {
        DeviceBuffer closed = gpu.device().allocateFloats(64);
        closed.close();
        try (CudaGraph graph = CudaGraph.create()) {
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> graph.addKernel(
                    KernelLaunch.of(gpu.writePattern(), LaunchConfig.of(Dim3.of(1), Dim3.of(64)), closed, 64, 1f, 0f)));
            assertEquals(closed + " is closed", refused.getMessage());
            assertEquals(0, graph.nodes().size());
        }
    }

    // Defect 3: lifetimes that contradicted the docs.

    @Test
    void instantiatingAGraphWhoseBufferAndLibraryWereClosedWorks() {
        int n = 10_007;
        CudaLibrary own = TestData.testKernels();
        DeviceBuffer scratch = gpu.device().allocateFloats(n);
        scratch.memset(0xFF); // for initcheck, which checks the captured copy's source at launch
        CudaGraph graph;
        try (DeviceBuffer out = gpu.device().allocateFloats(n)) {
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                own.kernel("write_pattern").launch(gpu.stream(), config(n), scratch, n, 0.5f, 3f);
                out.copyFromAsync(scratch, gpu.stream());
                graph = capture.end();
            }
            own.close();
            scratch.close();
            long execsBefore = Cuda.liveResources().graphExecs();
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(execsBefore + 1, Cuda.liveResources().graphExecs());
                out.memset(0xFF);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                float[] result = out.toFloatArray();
                for (int i = 0; i < n; i++) {
                    assertEquals(i * 0.5f + 3f, result[i], "element " + i);
                }
            }
        }
    }

    @Test
    void updatingFromAGraphWhoseBufferWasClosedKeepsThatBufferAlive() {
        int n = 4096;
        try (DeviceBuffer out = gpu.device().allocateFloats(n);
                CudaGraph first = writeThenCopy(gpu.writePattern(), gpu.device().allocateFloats(n), out, n, 1f, true);
                GraphExec exec = first.instantiate()) {
            DeviceBuffer second = gpu.device().allocateFloats(n);
            try (CudaGraph next = writeThenCopy(gpu.writePattern(), second, out, n, 2f, false)) {
                second.close();
                exec.update(next);
            }
            out.memset(0xFF);
            exec.launch(gpu.stream());
            gpu.stream().synchronize();
            assertEquals(2f * (n - 1), out.toFloatArray()[n - 1], "the executable still reads the updated buffer");
        }
    }

    /** Kernel writes {@code scratch[i] = i * scale}, then a memcpy node copies it to {@code out}. */
    private static CudaGraph writeThenCopy(CudaKernel writePattern, DeviceBuffer scratch, DeviceBuffer out, int n,
            float scale, boolean closeScratch) {
        // Poisoned first: initcheck checks a graph's memcpy source when the graph is launched,
        // before the kernel node upstream has run, and would call a fresh scratch uninitialized.
        scratch.memset(0xFF);
        CudaGraph graph = CudaGraph.create();
        GraphNode write = graph.addKernel(KernelLaunch.of(writePattern, LaunchConfig.of(Dim3.of(16), Dim3.of(256)),
                scratch, n, scale, 0f));
        graph.addMemcpy(out, scratch, write);
        if (closeScratch) {
            scratch.close();
        }
        return graph;
    }

    @Test
    void anExecutableUpdatedNodeByNodeHoldsOnlyTheBuffersItUsesNow() {
        updateNodeByNodeAndCheckWhatIsHeld(false);
    }

    /** The same for a captured node, whose uses the executable finds in the capture's own records. */
    @Test
    void anExecutableOfACapturedGraphUpdatedNodeByNodeHoldsOnlyTheBuffersItUsesNow() {
        updateNodeByNodeAndCheckWhatIsHeld(true);
    }

    private void updateNodeByNodeAndCheckWhatIsHeld(boolean captured) {
        long floats = GIB / Float.BYTES;
        LiveResources start = Cuda.liveResources();
        DeviceBuffer current = gpu.device().allocateFloats(floats);
        KernelLaunch first = KernelLaunch.of(gpu.writePattern(), LaunchConfig.of(Dim3.of(1024), Dim3.of(256)), current,
                (int) floats, 1f, 0f);
        CudaGraph built;
        if (captured) {
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                first.launch(gpu.stream());
                built = capture.end();
            }
        } else {
            built = CudaGraph.create();
            built.addKernel(first);
        }
        try (CudaGraph graph = built) {
            GraphNode node = graph.nodes().getFirst();
            assertEquals(first, node.kernelParams().orElseThrow());
            try (GraphExec exec = graph.instantiate()) {
                for (int update = 1; update <= 6; update++) {
                    DeviceBuffer next = gpu.device().allocateFloats(floats);
                    exec.updateKernelNode(node, node.kernelParams().orElseThrow().withArguments(next, (int) floats,
                            (float) update, 0f));
                    current.close();
                    current = next;
                    // The template keeps its own 1 GiB; the executable only its current one.
                    assertEquals(start.deviceBytes() + 2 * GIB, Cuda.liveResources().deviceBytes(),
                            "after update " + update);
                }
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                float[] tail = new float[4];
                current.slice(floats - 4, 4).copyTo(tail);
                assertEquals(6f * (floats - 1), tail[3]);
            } finally {
                current.close();
            }
        }
        assertEquals(start.deviceBytes(), Cuda.liveResources().deviceBytes());
    }

    @Test
    void anExecutableUpdatedWithWholeGraphsHoldsOnlyTheLatestGraphsBuffers() {
        long floats = GIB / Float.BYTES;
        int n = (int) Math.min(floats, Integer.MAX_VALUE);
        LiveResources start = Cuda.liveResources();
        try (DeviceBuffer out = gpu.device().allocateFloats(4)) {
            GraphExec exec = null;
            try {
                for (int update = 0; update < 6; update++) {
                    DeviceBuffer scratch = gpu.device().allocateFloats(floats);
                    // Poisoned, so that 15f below comes from the kernel; and initcheck checks the
                    // memcpy node's source at launch, before the kernel node upstream has run.
                    scratch.memset(0xFF);
                    try (CudaGraph graph = CudaGraph.create()) {
                        GraphNode write = graph.addKernel(KernelLaunch.of(gpu.writePattern(),
                                LaunchConfig.of(Dim3.of(1024), Dim3.of(256)), scratch, n, (float) update, 0f));
                        graph.addMemcpy(out, scratch.slice(0, 4), write);
                        scratch.close();
                        if (exec == null) {
                            exec = graph.instantiate();
                        } else {
                            exec.update(graph);
                        }
                    }
                    assertEquals(start.deviceBytes() + out.byteSize() + GIB, Cuda.liveResources().deviceBytes(),
                            "after update " + update);
                }
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                assertEquals(15f, out.toFloatArray()[3]);
            } finally {
                if (exec != null) {
                    exec.close();
                }
            }
        }
    }

    @Test
    void anExecutableCannotBeLaunchedIntoACaptureButItsGraphCanBeNestedAndIsKeptAlive() {
        int n = 10_007;
        try (DeviceBuffer out = gpu.device().allocateFloats(n)) {
            CudaLibrary own = TestData.testKernels();
            DeviceBuffer scratch = gpu.device().allocateFloats(n);
            CudaGraph outer = CudaGraph.create();
            try (CudaGraph inner = writeThenCopy(own.kernel("write_pattern"), scratch, out, n, 0.25f, false);
                    GraphExec innerExec = inner.instantiate()) {
                // The runtime refuses cudaGraphLaunch in a capture (driver 580): a typed error, and the
                // stream recovers once the scope closes.
                try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                    StreamCaptureException refused = assertThrows(StreamCaptureException.class,
                            () -> innerExec.launch(gpu.stream()));
                    assertEquals(CudaError.STREAM_CAPTURE_UNSUPPORTED, refused.error());
                    assertTrue(refused.getMessage().startsWith("cudaGraphLaunch: "), refused.getMessage());
                    assertNotEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
                }
                outer.addChildGraph(inner);
            }
            own.close();
            scratch.close();
            try (outer; GraphExec exec = outer.instantiate()) {
                out.memset(0xFF);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                assertEquals(0.25f * (n - 1), out.toFloatArray()[n - 1]);
            }
        }
        assertKernelsRun();
    }

    // Defect 4: synchronous copies must be complete, and visible to every stream, when they return.

    @RepeatedTest(5)
    void aKernelQueuedAfterASynchronousDeviceCopySeesTheCopy() {
        int n = 64 << 20; // 256 MiB: long enough that an unordered copy would still be running
        long seed = TestData.newSeed();
        try (DeviceBuffer source = gpu.device().allocateFloats(n); DeviceBuffer copy = gpu.device().allocateFloats(n);
                DeviceBuffer y = gpu.device().allocateFloats(n)) {
            gpu.writePattern().launch(gpu.stream(), config(n), source, n, 1f, (float) (seed % 97));
            gpu.stream().synchronize();
            copy.memset(0xFF);
            y.memset(0);
            copy.copyFrom(source);
            gpu.saxpy().launch(gpu.stream(), config(n), n, 1f, copy, y);
            gpu.stream().synchronize();
            float[] tail = new float[1024];
            y.slice(n - tail.length, tail.length).copyTo(tail);
            for (int i = 0; i < tail.length; i++) {
                assertEquals((float) (n - tail.length + i) + (float) (seed % 97), tail[i], "element " + i);
            }
        }
    }

    @RepeatedTest(5)
    void aKernelQueuedAfterASynchronousMemsetSeesIt() {
        int n = 64 << 20;
        try (DeviceBuffer x = gpu.device().allocateFloats(n); DeviceBuffer y = gpu.device().allocateFloats(n)) {
            gpu.writePattern().launch(gpu.stream(), config(n), x, n, 1f, 1f);
            gpu.stream().synchronize();
            y.memset(0);
            x.memset(0x3F); // 0x3F3F3F3F = 0.7470...
            gpu.saxpy().launch(gpu.stream(), config(n), n, 1f, x, y);
            gpu.stream().synchronize();
            float[] tail = new float[1024];
            y.slice(n - tail.length, tail.length).copyTo(tail);
            float expected = Float.intBitsToFloat(0x3F3F3F3F);
            for (float value : tail) {
                assertEquals(expected, value);
            }
        }
    }

    @Test
    void aKernelQueuedAfterAPageableUploadSeesIt() {
        int n = 16 << 20;
        long seed = TestData.newSeed();
        float[] data = TestData.randomFloats(n, seed);
        try (DeviceBuffer x = gpu.device().allocateFloats(n); DeviceBuffer y = gpu.device().allocateFloats(n)) {
            y.memset(0);
            x.memset(0xFF);
            x.copyFrom(data);
            gpu.saxpy().launch(gpu.stream(), config(n), n, 1f, x, y);
            gpu.stream().synchronize();
            assertArrayEquals(data, y.toFloatArray(), TestData.seedDescription(seed));
        }
    }

    // Defect 5: smaller ones.

    @Test
    void aCaptureRefusedToEndFromTheWrongThreadLeavesNoStaleState() throws Exception {
        try (DeviceBuffer out = gpu.device().allocateFloats(64)) {
            StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL);
            try (capture) {
                gpu.writePattern().launch(gpu.stream(), config(64), out, 64, 1f, 0f);
                CudaException wrongThread;
                try (ExecutorService other = Executors.newSingleThreadExecutor()) {
                    Future<CudaException> attempt = other.submit(() -> assertThrows(CudaException.class, capture::end));
                    wrongThread = attempt.get();
                }
                assertEquals(CudaError.STREAM_CAPTURE_WRONG_THREAD, wrongThread.error());
                // The runtime ends the capture even as it refuses (driver 580): the scope must agree, or
                // the stream would stay marked as capturing and refuse every later capture.
                assertEquals(CaptureStatus.NONE, gpu.stream().captureStatus());
            }
            assertThrows(IllegalStateException.class, capture::end);
            try (StreamCapture again = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                gpu.writePattern().launch(gpu.stream(), config(64), out, 64, 2f, 0f);
                try (CudaGraph graph = again.end(); GraphExec exec = graph.instantiate()) {
                    exec.launch(gpu.stream());
                    gpu.stream().synchronize();
                    assertEquals(126f, out.toFloatArray()[63]);
                }
            }
        }
        assertKernelsRun();
    }

    @Test
    @Tag("fault") // faults the GPU on purpose (in a child JVM), which a sanitizer would report
    void stickyErrorsSayTheContextIsLostAndEveryLaterCallFails() throws Exception {
        ChildJvm.Result result = ChildJvm.run(List.of("--enable-native-access=ALL-UNNAMED"), StickyErrorProbe.class,
                List.of(), 120);
        String output = result.output();
        assertTrue(output.contains("synchronize: sticky=true error=ILLEGAL_ADDRESS"), output);
        assertTrue(output.contains("restart the process"), output);
        assertTrue(output.contains("allocate: sticky=true"), "every later call fails too:\n" + output);
    }

    @Test
    void recoverableErrorsAreNotSticky() {
        CudaException outOfMemory = assertThrows(CudaException.class, () -> gpu.device().allocateFloats(1L << 48));
        assertEquals(CudaError.MEMORY_ALLOCATION, outOfMemory.error());
        assertFalse(outOfMemory.isSticky());
        assertFalse(outOfMemory.getMessage().contains("restart"), outOfMemory.getMessage());
        assertKernelsRun();
    }

    private void assertKernelsRun() {
        try (DeviceBuffer out = gpu.device().allocateFloats(64)) {
            out.memset(0xFF);
            gpu.writePattern().launch(gpu.stream(), config(64), out, 64, 1f, 0f);
            gpu.stream().synchronize();
            assertEquals(63f, out.toFloatArray()[63]);
        }
    }
}
