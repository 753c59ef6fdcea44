package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@GpuTest
class LinearTest {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    @ParameterizedTest(name = "batch={0} in={1} out={2}")
    @CsvSource({"1,1,1", "7,63,65", "32,512,512", "129,127,1000", "2048,640,640"})
    void fusedAndUnfusedMatchTorchLinearSemantics(int batch, int in, int out) {
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(batch * in, seed);
        float[] w = TestData.randomFloats(out * in, seed + 1);
        float[] b = TestData.randomFloats(out, seed + 2);
        double[] expected = Reference.biasRelu(Reference.gemm(batch, out, in, 1, x, w, true, 0, null), batch, out, b);
        try (DeviceBuffer dx = gpu.upload(x); DeviceBuffer dw = gpu.upload(w); DeviceBuffer db = gpu.upload(b);
                DeviceBuffer dy = gpu.allocateFloats((long) batch * out)) {
            Linear layer = new Linear(gpu.kernels(), dw, db, in, out);
            for (Linear.Mode mode : Linear.Mode.values()) {
                dy.memset(0xFF);
                layer.forward(gpu.stream(), batch, dx, dy, mode);
                gpu.stream().synchronize();
                Reference.assertClose(expected, dy.toFloatArray(), mode + " " + TestData.seedDescription(seed));
            }
        }
    }

    @Test
    void unfusedLayerCapturesIntoTheSeedsTwoNodeGraph() {
        int batch = 2048;
        int in = 640;
        int out = 640;
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(batch * in, seed);
        float[] w = TestData.randomFloats(out * in, seed + 1);
        float[] b = TestData.randomFloats(out, seed + 2);
        double[] expected = Reference.biasRelu(Reference.gemm(batch, out, in, 1, x, w, true, 0, null), batch, out, b);
        try (DeviceBuffer dx = gpu.upload(x); DeviceBuffer dw = gpu.upload(w); DeviceBuffer db = gpu.upload(b);
                DeviceBuffer dy = gpu.allocateFloats((long) batch * out)) {
            Linear layer = new Linear(gpu.kernels(), dw, db, in, out).withEpilogueGrid(Dim3.of(256, 2));
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                layer.forward(gpu.stream(), batch, dx, dy, Linear.Mode.UNFUSED);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                GraphNode gemm = graph.nodes().get(0);
                GraphNode epilogue = graph.nodes().get(1);
                assertEquals("<<<{32,20},64,19200>>>", gemm.kernelInfo().shape());
                assertEquals("<<<{256,2},{8,32},0>>>", epilogue.kernelInfo().shape());
                assertTrue(gemm.kernelInfo().name().startsWith("cg4j_simt_sgemm_f32_64x32x16_3_tnt"),
                        gemm.kernelInfo().name());
                String diagram = graph.describe();
                assertTrue(diagram.contains("<<<{32,20},64,19200>>>") && diagram.contains("▼"), diagram);

                dy.memset(0xFF);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                Reference.assertClose(expected, dy.toFloatArray(), "graph " + TestData.seedDescription(seed));
            }
        }
    }

    @Test
    void badShapesAreNamed() {
        try (DeviceBuffer w = gpu.allocateFloats(6); DeviceBuffer b = gpu.allocateFloats(2);
                DeviceBuffer x = gpu.allocateFloats(3); DeviceBuffer y = gpu.allocateFloats(2)) {
            IllegalArgumentException weight = assertThrows(IllegalArgumentException.class,
                    () -> new Linear(gpu.kernels(), w, b, 4, 2));
            assertEquals("weight needs 8 floats but has 6", weight.getMessage());
            Linear layer = new Linear(gpu.kernels(), w, b, 3, 2);
            IllegalArgumentException input = assertThrows(IllegalArgumentException.class,
                    () -> layer.forward(gpu.stream(), 2, x, y, Linear.Mode.FUSED));
            assertEquals("x needs 6 floats but has 3", input.getMessage());
        }
    }
}
