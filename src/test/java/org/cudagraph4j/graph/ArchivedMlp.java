package org.cudagraph4j.graph;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.TestData;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;

/**
 * A 16-layer MLP whose weights and input follow from a seed, so that two processes build the same
 * one: {@link GraphArchiveTest} captures it and saves the graph; this class's {@code main}, in a
 * child JVM, loads the archive with buffers of its own, replays it and writes the output.
 *
 * <p>Arguments: {@code archive seed output}.
 */
final class ArchivedMlp implements AutoCloseable {
    static final int LAYERS = 16;
    static final int WIDTH = 256;
    static final int BATCH = 32;

    final ShippedKernels kernels;
    final Mlp mlp;
    final DeviceBuffer x;
    final DeviceBuffer y;
    private final List<DeviceBuffer> parameters = new ArrayList<>();

    ArchivedMlp(CudaDevice device, long seed) {
        kernels = ShippedKernels.load(device);
        List<Linear> layers = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            float[] w = TestData.randomFloats(WIDTH * WIDTH, seed + 2 * i);
            for (int j = 0; j < w.length; j++) {
                w[j] /= (float) Math.sqrt(WIDTH); // activations stay near 1 through the stack
            }
            DeviceBuffer weight = TestData.upload(device, w);
            parameters.add(weight);
            DeviceBuffer bias = TestData.upload(device, TestData.randomFloats(WIDTH, seed + 2 * i + 1));
            parameters.add(bias);
            layers.add(new Linear(kernels, weight, bias, WIDTH, WIDTH));
        }
        mlp = new Mlp(kernels, layers, BATCH);
        x = TestData.upload(device, TestData.randomFloats(BATCH * WIDTH, seed + 1000));
        y = device.allocateFloats(BATCH * WIDTH);
    }

    GraphBindings bindings() {
        return mlp.bindTo(new GraphBindings().buffer("x", x).buffer("y", y));
    }

    @Override
    public void close() {
        y.close();
        x.close();
        mlp.close();
        parameters.forEach(DeviceBuffer::close);
        kernels.close();
    }

    public static void main(String[] args) throws Exception {
        CudaDevice device = TestData.device();
        try (ArchivedMlp model = new ArchivedMlp(device, Long.parseLong(args[1]));
                CudaStream stream = device.createStream();
                CudaGraph graph = GraphArchive.load(Path.of(args[0]), List.of(model.kernels.library()),
                        model.bindings());
                GraphExec exec = graph.instantiate()) {
            model.y.memset(0xFF);
            exec.launch(stream);
            stream.synchronize();
            float[] result = model.y.toFloatArray();
            ByteBuffer bytes = ByteBuffer.allocate(result.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            bytes.asFloatBuffer().put(result);
            Files.write(Path.of(args[2]), bytes.array());
            System.out.println("ARCHIVED MLP OK " + graph.nodes().size() + " nodes");
        }
    }
}
