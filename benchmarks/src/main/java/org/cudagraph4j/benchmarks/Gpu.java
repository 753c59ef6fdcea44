package org.cudagraph4j.benchmarks;

import java.util.SplittableRandom;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelArguments;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;

/**
 * What every benchmark needs: device 0, one non-blocking stream and the empty kernel (the same
 * {@code benchmarks/native/empty.cu} the native harness loads), loaded with
 * {@code cudaLibraryLoadData} as the harness does.
 */
final class Gpu implements AutoCloseable {
    /** The empty kernel's launch: one block of one thread, as in the native harness. */
    static final Dim3 ONE = Dim3.of(1);

    final CudaDevice device;
    final CudaStream stream;
    final CudaLibrary library;
    final CudaKernel empty;
    final KernelArguments noArguments;
    final LaunchConfig emptyLaunch;

    Gpu() {
        device = Cuda.device(0);
        stream = device.createStream();
        library = CudaLibrary.loadResource(Gpu.class, "empty.fatbin");
        empty = library.kernel("empty_kernel");
        noArguments = empty.arguments();
        emptyLaunch = LaunchConfig.of(ONE, ONE);
        empty.launch(stream, emptyLaunch, noArguments);
        stream.synchronize();
    }

    /** A chain of {@code n} empty-kernel nodes, captured from {@code n} launches. */
    CudaGraph captureEmptyChain(int n) {
        return capture(() -> {
            for (int i = 0; i < n; i++) {
                empty.launch(stream, emptyLaunch, noArguments);
            }
        });
    }

    /** The graph of what {@code work} launches on {@link #stream}, captured in global mode. */
    CudaGraph capture(Runnable work) {
        try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
            work.run();
            return capture.end();
        }
    }

    /** A device buffer of {@code length} floats uniform in [-bound, bound); the caller closes it. */
    DeviceBuffer uniform(int length, double bound, SplittableRandom random) {
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            values[i] = (float) ((random.nextDouble() * 2 - 1) * bound);
        }
        DeviceBuffer buffer = device.allocateFloats(length);
        buffer.copyFrom(values);
        return buffer;
    }

    /** Instantiates {@code graph} and uploads it, so that no timed launch pays for either. */
    GraphExec ready(CudaGraph graph) {
        GraphExec exec = graph.instantiate();
        exec.upload(stream);
        stream.synchronize();
        return exec;
    }

    /** Launches {@code exec} and waits for it: one synchronized forward. */
    void launchAndWait(GraphExec exec) {
        exec.launch(stream);
        stream.synchronize();
    }

    @Override
    public void close() {
        stream.synchronize();
        noArguments.close();
        library.close();
        stream.close();
    }
}
