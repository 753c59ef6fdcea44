package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.TestData;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;

/**
 * Every GPU of the host, each with kernels loaded for it, and its own streams, buffers and graphs.
 * The per-device tests run on one GPU too; on several, each device is driven while another one is
 * current on the calling thread, so that a call which does not select its own device
 * fails, and then all devices at once, a thread each. Under a sanitizer, which slows each kernel a
 * thousandfold, the tests launch less and check the same.
 */
@GpuTest
class MultiDeviceTest {
    private static final int WIDTH = 384;
    private static final int LAYERS = 6;
    private static final int BATCH = 24;

    @Test
    void eachDeviceRunsAnMlpEagerlyAndAsAGraphWhileAnotherDeviceIsCurrent() {
        HostMlp model = HostMlp.random(TestData.newSeed());
        List<CudaDevice> devices = Cuda.devices();
        for (CudaDevice device : devices) {
            CudaDevice other = devices.get((device.ordinal() + 1) % devices.size());
            other.makeCurrent();
            try (DeviceMlp mlp = new DeviceMlp(device, model); CudaStream stream = device.createStream();
                    DeviceBuffer x = TestData.upload(device, model.input());
                    DeviceBuffer y = device.allocateFloats((long) BATCH * WIDTH)) {
                assertEquals(device, stream.device());
                assertEquals(device, y.device());
                y.memset(0xFF);
                other.makeCurrent();
                mlp.mlp.forward(stream, BATCH, x, y, Linear.Mode.FUSED);
                stream.synchronize();
                Reference.assertClose(model.expected(), y.toFloatArray(), device + " eager, " + model.seed());

                CudaGraph graph;
                other.makeCurrent();
                try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.THREAD_LOCAL)) {
                    mlp.mlp.forward(stream, BATCH, x, y, Linear.Mode.FUSED);
                    graph = capture.end();
                }
                try (graph; GraphExec exec = graph.instantiate()) {
                    y.memset(0xFF);
                    other.makeCurrent();
                    exec.launch(stream);
                    exec.launch(stream);
                    stream.synchronize();
                    Reference.assertClose(model.expected(), y.toFloatArray(), device + " graph, " + model.seed());
                }
            }
        }
    }

    @Test
    void asyncCopiesMemsetsAndGraphUpdatesKeepTheirStreamsOrderWhileAnotherDeviceIsCurrent() {
        int n = 16 << 20;
        List<CudaDevice> devices = Cuda.devices();
        try (CudaLibrary library = TestData.testKernels(); PinnedBuffer host = Cuda.allocatePinned((long) n * Float.BYTES)) {
            CudaKernel saxpy = library.kernel("saxpy");
            for (CudaDevice device : devices) {
                CudaDevice other = devices.get((device.ordinal() + 1) % devices.size());
                try (CudaStream stream = device.createStream(); DeviceBuffer x = device.allocateFloats(n);
                        DeviceBuffer y = device.allocateFloats(n); DeviceBuffer z = device.allocateFloats(n)) {
                    for (int round = 0; round < 5; round++) {
                        byte value = (byte) (0x10 + round);
                        host.segment().fill((byte) 0);
                        other.makeCurrent();
                        x.memsetAsync(value, stream);
                        x.copyToAsync(host.segment(), stream);
                        stream.synchronize();
                        assertEquals(value, host.segment().get(ValueLayout.JAVA_BYTE, 0), device + " round " + round);
                        assertEquals(value, host.segment().get(ValueLayout.JAVA_BYTE, host.segment().byteSize() - 1),
                                device + " round " + round + ", last byte");
                    }

                    // An explicitly built graph belongs to the device current at its creation.
                    device.makeCurrent();
                    x.copyFrom(TestData.randomFloats(n, 1));
                    float[] values = TestData.randomFloats(n, 2);
                    y.copyFrom(values);
                    z.copyFrom(values);
                    LaunchConfig config = LaunchConfig.of(Dim3.of(n / 256), Dim3.of(256));
                    try (CudaGraph graph = CudaGraph.create()) {
                        assertEquals(device, graph.device());
                        GraphNode node = graph.addKernel(new KernelLaunch(saxpy, config, List.of(n, 2f, x, y)));
                        other.makeCurrent();
                        try (GraphExec exec = graph.instantiate()) {
                            other.makeCurrent();
                            exec.updateKernelNode(node, new KernelLaunch(saxpy, config, List.of(n, 3f, x, z)));
                            exec.launch(stream);
                            stream.synchronize();
                        }
                    }
                    float[] xs = x.toFloatArray();
                    assertArrayEquals(values, y.toFloatArray(), device + ": the update replaced y");
                    float[] result = z.toFloatArray();
                    for (int i = 0; i < n; i += 997) {
                        assertEquals(Math.fma(3f, xs[i], values[i]), result[i], Math.ulp(result[i]) * 2,
                                device + " element " + i);
                    }
                }
            }
        }
    }

    @Test
    void anEventRecordsOnlyOnItsOwnDevicesStreams() {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        try (CudaEvent event = devices.get(0).createEvent(); CudaStream elsewhere = devices.get(1).createStream()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> event.record(elsewhere));
            assertTrue(e.getMessage().endsWith("is on CudaDevice[0] and cannot record " + elsewhere
                    + ": record it on a stream of its own device; streams of any device can wait for it"),
                    e.getMessage());
        }
    }

    @Test
    void anAllocationTakesMemoryFromItsOwnDeviceOnly() {
        long bytes = 1L << 30;
        List<CudaDevice> devices = Cuda.devices();
        for (CudaDevice device : devices) {
            devices.getLast().makeCurrent();
            long[] before = freeBytes(devices); // after every context exists: creating one takes memory too
            try (DeviceBuffer buffer = device.allocateFloats(bytes / Float.BYTES)) {
                buffer.memset(0x3F);
                long[] after = freeBytes(devices);
                for (CudaDevice d : devices) {
                    long taken = before[d.ordinal()] - after[d.ordinal()];
                    if (d.equals(device)) {
                        // Half: a buffer that another test forgot may be freed by its cleaner meanwhile.
                        assertTrue(taken > bytes / 2, "1 GiB on " + device + " took only " + taken + " bytes there");
                    } else {
                        assertTrue(taken < bytes / 2, "1 GiB on " + device + " took " + taken + " bytes of " + d);
                    }
                }
            }
        }
    }

    @Test
    void allDevicesReplayTheirGraphsAtOnceAndAgreeBitForBit() throws Exception {
        HostMlp model = HostMlp.random(TestData.newSeed());
        List<CudaDevice> devices = Cuda.devices();
        ExecutorService threads = Executors.newFixedThreadPool(devices.size());
        try {
            List<Future<float[]>> results = new ArrayList<>();
            for (CudaDevice device : devices) {
                results.add(threads.submit(() -> replay(device, model, TestData.underSanitizer() ? 2 : 200)));
            }
            float[] first = results.getFirst().get();
            Reference.assertClose(model.expected(), first, devices.getFirst() + ", " + model.seed());
            for (int i = 1; i < results.size(); i++) {
                assertArrayEquals(first, results.get(i).get(), devices.get(i) + " against " + devices.getFirst()
                        + ": the same kernels on the same data, " + model.seed());
            }
        } finally {
            threads.shutdown();
        }
    }

    @Test
    void aStreamWaitsForAnEventRecordedOnAnotherDevice() {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        HostMlp model = HostMlp.random(TestData.newSeed());
        CudaDevice producer = devices.get(1);
        CudaDevice consumer = devices.get(0);
        try (DeviceMlp mlp = new DeviceMlp(producer, model); CudaStream producing = producer.createStream();
                CudaStream consuming = consumer.createStream(); CudaEvent done = producer.createEvent();
                DeviceBuffer x = TestData.upload(producer, model.input());
                DeviceBuffer y = producer.allocateFloats((long) BATCH * WIDTH);
                DeviceBuffer copy = consumer.allocateFloats((long) BATCH * WIDTH)) {
            int rounds = TestData.underSanitizer() ? 1 : 5;
            int forwards = TestData.underSanitizer() ? 2 : 50;
            for (int round = 0; round < rounds; round++) {
                y.memset(0xFF);
                copy.memset(0xFF);
                // Long enough that a copy which did not wait would read the poison.
                for (int i = 0; i < forwards; i++) {
                    mlp.mlp.forward(producing, BATCH, x, y, Linear.Mode.FUSED);
                }
                done.record(producing);
                consuming.waitFor(done);
                copy.copyFromAsync(y, consuming);
                consuming.synchronize();
                Reference.assertClose(model.expected(), copy.toFloatArray(), "round " + round + ", " + model.seed());
            }
        }
    }

    @Test
    void kernelsLoadedForOneDeviceRefuseAStreamOfAnother() {
        List<CudaDevice> devices = Cuda.devices();
        assumeTrue(devices.size() >= 2, "needs two GPUs; this host has " + devices.size());
        HostMlp model = HostMlp.random(TestData.newSeed());
        try (DeviceMlp mlp = new DeviceMlp(devices.get(0), model); CudaStream elsewhere = devices.get(1).createStream();
                DeviceBuffer x = TestData.upload(devices.get(1), model.input());
                DeviceBuffer y = devices.get(1).allocateFloats((long) BATCH * WIDTH)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> mlp.mlp.forward(elsewhere, BATCH, x, y, Linear.Mode.FUSED));
            assertEquals("the kernels were loaded for CudaDevice[0] but the stream is on CudaDevice[1]: "
                    + "load ShippedKernels for each device", e.getMessage());
        }
    }

    private static float[] replay(CudaDevice device, HostMlp model, int launches) {
        try (DeviceMlp mlp = new DeviceMlp(device, model); CudaStream stream = device.createStream();
                DeviceBuffer x = TestData.upload(device, model.input());
                DeviceBuffer y = device.allocateFloats((long) BATCH * WIDTH)) {
            y.memset(0xFF);
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.THREAD_LOCAL)) {
                mlp.mlp.forward(stream, BATCH, x, y, Linear.Mode.FUSED);
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                for (int i = 0; i < launches; i++) {
                    exec.launch(stream);
                }
                stream.synchronize();
            }
            return y.toFloatArray();
        }
    }

    private static long[] freeBytes(List<CudaDevice> devices) {
        long[] free = new long[devices.size()];
        for (CudaDevice device : devices) {
            free[device.ordinal()] = device.memoryInfo().freeBytes();
        }
        return free;
    }

    /** The model on the host, with its float64 answer, the layers rounded to float between them. */
    private record HostMlp(long seedValue, List<float[]> weights, List<float[]> biases, float[] input,
            double[] expected) {
        static HostMlp random(long seed) {
            List<float[]> weights = new ArrayList<>();
            List<float[]> biases = new ArrayList<>();
            float[] input = TestData.randomFloats(BATCH * WIDTH, seed);
            float[] activation = input;
            double[] expected = null;
            for (int l = 0; l < LAYERS; l++) {
                float[] w = TestData.randomFloats(WIDTH * WIDTH, seed + 2 * l + 1);
                for (int i = 0; i < w.length; i++) {
                    w[i] /= (float) Math.sqrt(WIDTH); // keeps activations near 1 through the layers
                }
                float[] b = TestData.randomFloats(WIDTH, seed + 2 * l + 2);
                weights.add(w);
                biases.add(b);
                expected = Reference.biasRelu(Reference.gemm(BATCH, WIDTH, WIDTH, 1, activation, w, true, 0, null),
                        BATCH, WIDTH, b);
                activation = new float[expected.length];
                for (int i = 0; i < expected.length; i++) {
                    activation[i] = (float) expected[i];
                }
            }
            return new HostMlp(seed, weights, biases, input, expected);
        }

        String seed() {
            return TestData.seedDescription(seedValue);
        }
    }

    /** The model's weights and kernels on one device. */
    private static final class DeviceMlp implements AutoCloseable {
        private final ShippedKernels kernels;
        private final List<DeviceBuffer> buffers = new ArrayList<>();
        private final Mlp mlp;

        DeviceMlp(CudaDevice device, HostMlp model) {
            kernels = ShippedKernels.load(device);
            List<Linear> layers = new ArrayList<>();
            for (int l = 0; l < LAYERS; l++) {
                DeviceBuffer w = TestData.upload(device, model.weights().get(l));
                buffers.add(w);
                DeviceBuffer b = TestData.upload(device, model.biases().get(l));
                buffers.add(b);
                layers.add(new Linear(kernels, w, b, WIDTH, WIDTH));
            }
            mlp = new Mlp(kernels, layers, BATCH);
        }

        @Override
        public void close() {
            mlp.close();
            buffers.forEach(DeviceBuffer::close);
            kernels.close();
        }
    }
}
