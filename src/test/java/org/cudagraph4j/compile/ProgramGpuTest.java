package org.cudagraph4j.compile;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;

/**
 * Kernels written as Java strings, compiled by NVRTC for this device, run eagerly and from a graph
 * and compute what the host computes; PTX goes through the driver's JIT and does the same.
 */
@GpuTest
class ProgramGpuTest {
    private static final int N = 100_003;

    @Test
    void aTemplateInstanceCompiledForThisDeviceRunsEagerlyAndInAGraph() {
        CudaDevice device = TestData.device();
        CompiledProgram cubin = Program.of("scale.cu", ProgramTest.SCALE).withNameExpression("scale<float, 4>")
                .compile(ProgramOptions.defaults(), CompileTarget.CUBIN);
        assertEquals("sm_" + device.properties().computeCapability(), cubin.architecture());
        float[] x = TestData.randomFloats(N, TestData.newSeed());
        try (CudaLibrary library = cubin.load();
                CudaStream stream = device.createStream();
                DeviceBuffer dx = TestData.upload(device, x)) {
            CudaKernel scale = library.kernel(cubin.loweredName("scale<float, 4>"));
            LaunchConfig shape = LaunchConfig.of(Dim3.of((N / 4 + 255) / 256 + 1), Dim3.of(256));
            scale.launch(stream, shape, dx, 3.0f, N);
            stream.synchronize();
            assertScaled(x, 3.0f, dx.toFloatArray());

            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                scale.launch(stream, shape, dx, 0.5f, N);
                scale.launch(stream, shape, dx, 0.25f, N);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(2, graph.nodes().size());
                exec.launch(stream);
                exec.launch(stream);
                stream.synchronize();
            }
            assertScaled(x, 3.0f * 0.5f * 0.25f * 0.5f * 0.25f, dx.toFloatArray());
        }
    }

    @Test
    void aCompiledKernelRunsInOneGraphWithGraphMemoryAndAHostCallbackAtEveryLaunch() {
        CudaDevice device = TestData.device();
        CompiledProgram cubin = Program.of("scale.cu", """
                template <typename T>
                __global__ void scale(const T* x, T* y, T factor, int n) {
                    int i = blockIdx.x * blockDim.x + threadIdx.x;
                    if (i < n) y[i] = factor * x[i];
                }
                """).withNameExpression("scale<float>").compile(ProgramOptions.defaults(), CompileTarget.CUBIN);
        List<float[]> seenByCallback = new CopyOnWriteArrayList<>();
        try (CudaLibrary library = cubin.load();
                CudaStream stream = device.createStream();
                DeviceBuffer dx = device.allocateFloats(N);
                DeviceBuffer dy = device.allocateFloats(N);
                PinnedBuffer pinned = Cuda.allocatePinned((long) N * Float.BYTES)) {
            CudaKernel scale = library.kernel(cubin.loweredName("scale<float>"));
            LaunchConfig shape = LaunchConfig.of(Dim3.of((N + 255) / 256), Dim3.of(256));
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                DeviceBuffer scratch = stream.allocate(ElementType.FLOAT32, N);
                scale.launch(stream, shape, dx, scratch, 3.0f, N);
                scale.launch(stream, shape, scratch, dy, 0.5f, N);
                scratch.close();
                dy.copyToAsync(pinned.segment(), stream);
                stream.launchHostFunction(() -> seenByCallback.add(pinned.segment().toArray(JAVA_FLOAT)));
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                for (int launch = 0; launch < 3; launch++) {
                    float[] x = TestData.randomFloats(N, TestData.newSeed());
                    dx.copyFrom(x);
                    dy.copyFrom(TestData.nans(N));
                    exec.launch(stream);
                    stream.synchronize();
                    assertEquals(launch + 1, seenByCallback.size());
                    for (int i = 0; i < N; i++) {
                        float expected = (x[i] * 3.0f) * 0.5f;
                        assertEquals(expected, seenByCallback.get(launch)[i], 0.0f, "launch " + launch + ", element " + i);
                    }
                }
            }
        }
    }

    @Test
    void ptxIsCompiledByTheDriverWhenLoadedAndRunsTheSame() {
        CudaDevice device = TestData.device();
        CompiledProgram ptx = Program.of("scale.cu", ProgramTest.SCALE)
                .compile(ProgramOptions.defaults().withArchitecture(device), CompileTarget.PTX);
        float[] x = TestData.randomFloats(N, TestData.newSeed());
        float[] y = TestData.randomFloats(N, TestData.newSeed());
        try (CudaLibrary library = ptx.load();
                CudaStream stream = device.createStream();
                DeviceBuffer dx = TestData.upload(device, x);
                DeviceBuffer dy = TestData.upload(device, y)) {
            assertTrue(library.kernelNames().contains("axpy"), library.kernelNames().toString());
            library.kernel("axpy").launch(stream, LaunchConfig.of(Dim3.of(132), Dim3.of(256)), N, 2.0f, dx, dy);
            stream.synchronize();
            float[] result = dy.toFloatArray();
            for (int i = 0; i < N; i++) {
                float expected = Math.fma(2.0f, x[i], y[i]);
                assertEquals(expected, result[i], Math.ulp(expected) * 2, "element " + i);
            }
        }
    }

    private static void assertScaled(float[] x, float factor, float[] result) {
        for (int i = 0; i < N; i++) {
            assertEquals(x[i] * factor, result[i], Math.abs(x[i] * factor) * 1e-6f, "element " + i);
        }
    }
}
