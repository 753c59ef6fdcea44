package org.cudagraph4j.benchmarks;

import org.cudagraph4j.Dim3;
import org.cudagraph4j.LaunchConfig;
import org.openjdk.jmh.annotations.Param;

/**
 * The launch-bound part of the seed layer: both of its nodes as the empty kernel at the seed's
 * launch shapes, L layers, eager against graph, each forward ending with a synchronization. At
 * 2048 x 640 x 640 the real sgemm takes about 80 µs, which hides launch costs; this keeps them
 * visible. Native twin: {@code seed_shape_empty/{eager,graph}/L}.
 */
public class SeedShapeEmpty extends EagerVersusGraph {
    @Param({"1", "16"})
    int layers;

    private LaunchConfig gemmShape;
    private LaunchConfig epilogueShape;

    @Override
    void prepare() {
        gemmShape = LaunchConfig.of(Dim3.of(32, 20), Dim3.of(64), 19200);
        epilogueShape = LaunchConfig.of(Dim3.of(256, 2), Dim3.of(8, 32), 0);
    }

    @Override
    void forward() {
        for (int l = 0; l < layers; l++) {
            gpu.empty.launch(gpu.stream, gemmShape, gpu.noArguments);
            gpu.empty.launch(gpu.stream, epilogueShape, gpu.noArguments);
        }
    }
}
