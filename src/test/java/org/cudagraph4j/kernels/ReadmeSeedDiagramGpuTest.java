package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code describe()} of the README's first example, captured on the device under test, is the
 * diagram {@link ReadmeSeedDiagramTest} models: the instance {@link Sgemm#choose} takes on this
 * device, then the bias+ReLU node at the seed's grid. On an H200 that is the diagram the README shows.
 */
@GpuTest
class ReadmeSeedDiagramGpuTest {
    @RegisterExtension
    static final KernelsFixture gpu = new KernelsFixture();

    @Test
    void describeOfTheCapturedSeedLinearIsTheModelledDiagram() {
        int batch = ReadmeSeedDiagramTest.BATCH;
        int in = ReadmeSeedDiagramTest.IN_FEATURES;
        int out = ReadmeSeedDiagramTest.OUT_FEATURES;
        try (DeviceBuffer weight = gpu.allocateFloats((long) out * in); DeviceBuffer bias = gpu.allocateFloats(out);
                DeviceBuffer x = gpu.allocateFloats((long) batch * in);
                DeviceBuffer y = gpu.allocateFloats((long) batch * out)) {
            Linear layer = new Linear(gpu.kernels(), weight, bias, in, out)
                    .withEpilogueGrid(ReadmeSeedDiagramTest.EPILOGUE_GRID);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                layer.forward(gpu.stream(), batch, x, y, Linear.Mode.UNFUSED);
                graph = capture.end();
            }
            try (graph) {
                GemmConfig gemm = gpu.sgemm().choose(batch, out, in, true, GemmConfig.Epilogue.LINEAR_COMBINATION,
                        weight);
                String diagram = graph.describe();
                System.out.println(diagram);
                assertEquals(ReadmeSeedDiagramTest.seedDiagram(gemm, KernelManifest.load().epilogueKernel()),
                        ReadmeSeedDiagramTest.masked(diagram));
            }
        }
    }
}
