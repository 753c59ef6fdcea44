package org.cudagraph4j.benchmarks;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphBindings;
import org.cudagraph4j.graph.GraphExec;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Start-up from a saved graph against start-up from capture, for chains of 10, 100 and 1000
 * empty-kernel nodes: {@code captureAndInstantiate} captures the launches and instantiates;
 * {@code loadAndInstantiate} reads a {@link GraphArchive} of the same graph (parse, digest, checks
 * against the library), builds it and instantiates. Both end with an executable ready to launch,
 * closed in an untimed teardown.
 */
@Warmup(iterations = 1, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
public class GraphArchiveLoad extends GpuBenchmark {
    @Param({"10", "100", "1000"})
    int nodes;

    private byte[] archive;
    private List<CudaLibrary> libraries;
    private CudaGraph made;
    private GraphExec exec;

    @Override
    void setUp() {
        try (CudaGraph chain = gpu.captureEmptyChain(nodes)) {
            archive = GraphArchive.of(chain, new GraphBindings()).toBytes();
        }
        libraries = List.of(gpu.library);
    }

    @TearDown(Level.Invocation)
    public void closeWhatTheOperationMade() {
        if (exec != null) {
            exec.close();
            exec = null;
        }
        if (made != null) {
            made.close();
            made = null;
        }
    }

    @Override
    void tearDown() {}

    @Benchmark
    public void captureAndInstantiate() {
        made = gpu.captureEmptyChain(nodes);
        exec = made.instantiate();
    }

    @Benchmark
    public void loadAndInstantiate() {
        made = GraphArchive.fromBytes(archive).build(libraries, new GraphBindings());
        exec = made.instantiate();
    }
}
