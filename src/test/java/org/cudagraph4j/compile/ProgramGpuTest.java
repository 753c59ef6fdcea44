package org.cudagraph4j.compile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.LaunchConfig;
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
            LaunchConfig shape = LaunchConfig.of(Dim3.of((N / 4 + 255) / 256 + 1), Dim3.of(256), stream);
            scale.launch(shape, dx, 3.0f, N);
            stream.synchronize();
            assertScaled(x, 3.0f, dx.toFloatArray());

            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
                scale.launch(shape, dx, 0.5f, N);
                scale.launch(shape, dx, 0.25f, N);
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
            library.kernel("axpy").launch(LaunchConfig.of(Dim3.of(132), Dim3.of(256), stream), N, 2.0f, dx, dy);
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
