package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuTest;
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
        try (LinearCase problem = new LinearCase(gpu, batch, in, out)) {
            Linear layer = new Linear(gpu.kernels(), problem.w, problem.b, in, out);
            for (Linear.Mode mode : Linear.Mode.values()) {
                problem.y.memset(0xFF);
                layer.forward(gpu.stream(), batch, problem.x, problem.y, mode);
                gpu.stream().synchronize();
                Reference.assertClose(problem.expected, problem.y.toFloatArray(), mode + " "
                        + problem.seedDescription());
            }
        }
    }

    @Test
    void unfusedLayerCapturesIntoTheSeedsTwoNodeGraph() {
        int batch = 2048;
        int in = 640;
        int out = 640;
        try (LinearCase problem = new LinearCase(gpu, batch, in, out)) {
            Linear layer = new Linear(gpu.kernels(), problem.w, problem.b, in, out).withEpilogueGrid(Dim3.of(256, 2));
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                layer.forward(gpu.stream(), batch, problem.x, problem.y, Linear.Mode.UNFUSED);
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

                problem.y.memset(0xFF);
                exec.launch(gpu.stream());
                gpu.stream().synchronize();
                Reference.assertClose(problem.expected, problem.y.toFloatArray(), "graph " + problem.seedDescription());
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
