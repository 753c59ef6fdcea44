package org.cudagraph4j.benchmarks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.bytedeco.cuda.cudart.CUgraphExec_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.cudart.dim3;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.cudart.cudart_h;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The cost of one runtime call, made three ways in one run: through this library's API
 * ({@code api}), through its raw jextract bindings ({@code raw}), and through JavaCPP's JNI
 * binding ({@code jni}, org.bytedeco:cuda). All three use the same kernel, graph and stream.
 *
 * <p>{@code cudaLaunchKernel} and {@code cudaGraphLaunch} are host-only enqueue costs: each
 * invocation times 256 calls, and an untimed synchronization after it bounds the queue. Native
 * twins: {@code binding/cudaLaunchKernel}, {@code binding/cudaGraphLaunch},
 * {@code binding/cudaStreamQuery}, {@code binding/cudaGetLastError}.
 */
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class BindingOverhead extends GpuBenchmark {
    static final int BURST = 256;

    @Param({"api", "raw", "jni"})
    String binding;

    private CudaGraph graph;
    private GraphExec exec;
    private Calls calls;

    /** One binding's way of making the four calls. */
    interface Calls {
        void launchKernel();

        void graphLaunch();

        boolean streamQuery();

        void getLastError();
    }

    @Override
    void setUp() {
        graph = gpu.captureEmptyChain(1);
        exec = gpu.ready(graph);
        calls = switch (binding) {
            case "api" -> new ApiCalls();
            case "raw" -> new RawCalls(gpu.empty.handle(), gpu.stream.handle(), exec.handle());
            case "jni" -> new JniCalls(gpu.empty.handle(), gpu.stream.handle(), exec.handle());
            default -> throw new IllegalArgumentException("unknown binding " + binding);
        };
        gpu.stream.synchronize();
    }

    @TearDown(Level.Invocation)
    public void drain() {
        gpu.stream.synchronize();
    }

    @Override
    void tearDown() {
        exec.close();
        graph.close();
    }

    @Benchmark
    @OperationsPerInvocation(BURST)
    public void cudaLaunchKernel() {
        for (int i = 0; i < BURST; i++) {
            calls.launchKernel();
        }
    }

    @Benchmark
    @OperationsPerInvocation(BURST)
    public void cudaGraphLaunch() {
        for (int i = 0; i < BURST; i++) {
            calls.graphLaunch();
        }
    }

    @Benchmark
    public boolean cudaStreamQuery() {
        return calls.streamQuery();
    }

    @Benchmark
    public void cudaGetLastError() {
        calls.getLastError();
    }

    /** The typed API, as a user calls it. */
    final class ApiCalls implements Calls {
        @Override
        public void launchKernel() {
            gpu.empty.launch(gpu.stream, gpu.emptyLaunch, gpu.noArguments);
        }

        @Override
        public void graphLaunch() {
            exec.launch(gpu.stream);
        }

        @Override
        public boolean streamQuery() {
            return gpu.stream.isIdle();
        }

        @Override
        public void getLastError() {
            Cuda.checkLastError();
        }
    }

    /** The generated bindings with a status check, as internal code calls them. */
    static final class RawCalls implements Calls {
        private final MemorySegment kernel;
        private final MemorySegment stream;
        private final MemorySegment exec;
        private final MemorySegment grid;
        private final MemorySegment block;

        RawCalls(MemorySegment kernel, MemorySegment stream, MemorySegment exec) {
            this.kernel = kernel;
            this.stream = stream;
            this.exec = exec;
            Arena arena = Arena.ofAuto();
            grid = org.cudagraph4j.cudart.dim3.allocate(arena);
            block = org.cudagraph4j.cudart.dim3.allocate(arena);
            for (MemorySegment dims : new MemorySegment[] {grid, block}) {
                org.cudagraph4j.cudart.dim3.x(dims, 1);
                org.cudagraph4j.cudart.dim3.y(dims, 1);
                org.cudagraph4j.cudart.dim3.z(dims, 1);
            }
        }

        @Override
        public void launchKernel() {
            check(cudart_h.cudaLaunchKernel(kernel, grid, block, MemorySegment.NULL, 0, stream));
        }

        @Override
        public void graphLaunch() {
            check(cudart_h.cudaGraphLaunch(exec, stream));
        }

        @Override
        public boolean streamQuery() {
            return cudart_h.cudaStreamQuery(stream) == 0;
        }

        @Override
        public void getLastError() {
            check(cudart_h.cudaGetLastError());
        }

        private static void check(int status) {
            if (status != 0) {
                throw new IllegalStateException("CUDA error " + status);
            }
        }
    }

    /** JavaCPP's JNI binding on the same handles. */
    static final class JniCalls implements Calls {
        private final Pointer kernel;
        private final CUstream_st stream;
        private final CUgraphExec_st exec;
        private final dim3 grid = new dim3(1, 1, 1);
        private final dim3 block = new dim3(1, 1, 1);
        private final PointerPointer<?> noArguments = null;

        JniCalls(MemorySegment kernel, MemorySegment stream, MemorySegment exec) {
            Loader.load(cudart.class);
            this.kernel = new Handle(kernel.address());
            this.stream = new CUstream_st(new Handle(stream.address()));
            this.exec = new CUgraphExec_st(new Handle(exec.address()));
        }

        @Override
        public void launchKernel() {
            check(cudart.cudaLaunchKernel(kernel, grid, block, noArguments, 0, stream));
        }

        @Override
        public void graphLaunch() {
            check(cudart.cudaGraphLaunch(exec, stream));
        }

        @Override
        public boolean streamQuery() {
            return cudart.cudaStreamQuery(stream) == 0;
        }

        @Override
        public void getLastError() {
            check(cudart.cudaGetLastError());
        }

        private static void check(int status) {
            if (status != 0) {
                throw new IllegalStateException("CUDA error " + status);
            }
        }

        /** A JavaCPP pointer to an address owned elsewhere. */
        static final class Handle extends Pointer {
            Handle(long address) {
                this.address = address;
            }
        }
    }
}
