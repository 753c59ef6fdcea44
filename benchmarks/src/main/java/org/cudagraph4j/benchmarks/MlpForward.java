package org.cudagraph4j.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.MathMode;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Param;

/**
 * The 16-layer MLP ({@code Linear(width, width)} + ReLU, FP32) through the library's {@link Mlp}
 * on the shipped split-K kernels: eager launches against one graph launch, with and without
 * programmatic dependent launch, synchronising after each forward ({@code eager}, {@code graph})
 * or after {@value #PIPELINED} ({@code graphPipelined}, reported per forward). Native twin:
 * {@code kernels/test/skinny_test.cu}; PyTorch twin: {@code native/mlp_torch.py}; cuBLASLt baseline:
 * {@code native/mlp_cublaslt.cu}. The defaults keep the main run short (18 trials); the twins' whole
 * grid is {@code -p width=512,1024,4096 -p batch=1,8,32,128,256}; {@code -p math=FP32,TF32X3} adds 3xTF32
 * on the tensor cores.
 */
public class MlpForward extends EagerVersusGraph {
    static final int LAYERS = 16;
    static final int PIPELINED = 16;

    @Param({"512"})
    int width;

    @Param({"1", "32", "256"})
    int batch;

    @Param({"false", "true"})
    boolean pdl;

    /** How each layer multiplies: FP32 (the default choice), or 3xTF32 (TF32X3) on the tensor cores. */
    @Param({"FP32"})
    MathMode math;

    private ShippedKernels kernels;
    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private Mlp mlp;
    private DeviceBuffer x;
    private DeviceBuffer y;

    @Override
    void prepare() {
        kernels = ShippedKernels.load(gpu.device);
        SplittableRandom random = new SplittableRandom(42);
        List<Linear> layers = new ArrayList<>();
        double heBound = Math.sqrt(6.0 / width);
        for (int l = 0; l < LAYERS; l++) {
            Linear layer = new Linear(kernels, random(width * width, heBound, random), random(width, 0.1, random),
                    width, width);
            layer = layer.withMathMode(math);
            layers.add(pdl ? layer.withProgrammaticDependentLaunch() : layer);
        }
        mlp = new Mlp(kernels, layers, batch);
        x = random(batch * width, 1.0, random);
        y = gpu.device.allocateFloats((long) batch * width);
    }

    @Override
    void forward() {
        mlp.forward(gpu.stream, batch, x, y, Linear.Mode.FUSED);
    }

    @Override
    void release() {
        mlp.close();
        y.close();
        buffers.forEach(DeviceBuffer::close);
        kernels.close();
    }

    @Benchmark
    @OperationsPerInvocation(PIPELINED)
    public void graphPipelined() {
        for (int i = 0; i < PIPELINED; i++) {
            exec.launch(gpu.stream);
        }
        gpu.stream.synchronize();
    }

    private DeviceBuffer random(int length, double bound, SplittableRandom random) {
        DeviceBuffer buffer = gpu.uniform(length, bound, random);
        buffers.add(buffer);
        return buffer;
    }
}
