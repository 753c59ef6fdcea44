package org.cudagraph4j.serving;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.HalfFloats;
import org.cudagraph4j.TestData;
import org.cudagraph4j.blas.CublasLt;
import org.cudagraph4j.kernels.Linear;
import org.cudagraph4j.kernels.Mlp;
import org.cudagraph4j.kernels.ShippedKernels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The serving engine on BF16 and FP16 models: a three-layer MLP on cuBLASLt, one handle per lane,
 * answering many threads through captured buckets. Every row is checked against float64 that
 * rounds each layer's output to the format as the GPU does, within one rounding step carried
 * through a layer, 2u(|y| + Σ|w·x|) (u = 2⁻⁸ for BF16, 2⁻¹¹ for FP16); the bits path
 * ({@code submit(rows, output)}) takes and gives the format's bits and answers as the float path does.
 */
@GpuTest
class HalfPrecisionServingGpuTest {
    private static final int WIDTH = 64;
    private static final int LAYERS = 3;
    private static final BucketLadder LADDER = BucketLadder.of(1, 4, 16, 32);
    private static CudaDevice device;
    private static ShippedKernels kernels;

    @BeforeAll
    static void load() {
        device = TestData.device();
        kernels = ShippedKernels.load(device);
    }

    @AfterAll
    static void close() {
        kernels.close();
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"BFLOAT16", "FLOAT16"})
    void manyThreadsGetTheirRowsFromAHalfPrecisionModelWithinItsRounding(ElementType type) throws Exception {
        long seed = TestData.newSeed();
        float[][] weights = new float[LAYERS][];
        float[][] biases = new float[LAYERS][];
        List<DeviceBuffer> buffers = new ArrayList<>();
        try {
            for (int l = 0; l < LAYERS; l++) {
                weights[l] = rounded(TestData.randomFloats(WIDTH * WIDTH, seed + 2 * l), type, 0.25);
                biases[l] = rounded(TestData.randomFloats(WIDTH, seed + 2 * l + 1), type, 0.1);
                buffers.add(upload(weights[l], type));
                buffers.add(upload(biases[l], type));
            }
            LaneModel.Factory models = laneDevice -> {
                CublasLt lt = CublasLt.create(laneDevice); // one per lane: a handle's workspace serves one stream
                try {
                    List<Linear> layers = new ArrayList<>();
                    for (int l = 0; l < LAYERS; l++) {
                        layers.add(new Linear(kernels, buffers.get(2 * l), buffers.get(2 * l + 1), WIDTH, WIDTH)
                                .withCublasLt(lt));
                    }
                    return LaneModel.of(new Mlp(kernels, layers, LADDER.largest()), Linear.Mode.FUSED, lt);
                } catch (RuntimeException e) {
                    lt.close();
                    throw e;
                }
            };
            ServingOptions options = ServingOptions.defaults().withLadder(LADDER).withLanes(2);
            int threads = 8;
            int requests = TestData.underSanitizer() ? 5 : 60;
            ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
            try (InferenceEngine engine = InferenceEngine.start(device, type, WIDTH, WIDTH, models, options);
                    ExecutorService pool = Executors.newFixedThreadPool(threads)) {
                assertEquals(type, engine.elementType());
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    long threadSeed = seed + 1000 + t;
                    done.add(pool.submit(() -> {
                        SplittableRandom random = new SplittableRandom(threadSeed);
                        for (int r = 0; r < requests; r++) {
                            int rows = 1 + random.nextInt(40); // above 32, a request is split
                            float[] input = rounded(TestData.randomFloats(rows * WIDTH, random.nextLong()), type, 1);
                            float[] answer = engine.submit(input).join();
                            check(input, answer, weights, biases, type, wrong, "float path");
                            // The bits path: the format's bits in and out, in shared memory.
                            try (Arena arena = Arena.ofShared()) {
                                MemorySegment in = arena.allocate((long) input.length * 2, 2);
                                MemorySegment out = arena.allocate((long) rows * WIDTH * 2, 2);
                                MemorySegment.copy(HalfFloats.fromFloats(input, type), 0, in, ValueLayout.JAVA_SHORT, 0,
                                        input.length);
                                engine.submit(in, out).join();
                                check(input, HalfFloats.toFloats(out.toArray(ValueLayout.JAVA_SHORT), type), weights,
                                        biases, type, wrong, "bits path");
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> future : done) {
                    future.get();
                }
                assertTrue(engine.isHealthy());
                assertTrue(engine.metrics().graphLaunches() > 0, "buckets ran as graphs");
                assertThrows(IllegalArgumentException.class,
                        () -> engine.submit(MemorySegment.ofArray(new short[WIDTH + 1])),
                        "not a whole number of half-precision rows");
            }
            assertTrue(wrong.isEmpty(), wrong.size() + " wrong rows, e.g. " + wrong.peek() + " ("
                    + TestData.seedDescription(seed) + ")");
        } finally {
            buffers.forEach(DeviceBuffer::close);
        }
    }

    /** Each row against float64 rounded to the format after every layer. */
    private static void check(float[] input, float[] answer, float[][] weights, float[][] biases, ElementType type,
            ConcurrentLinkedQueue<String> wrong, String path) {
        double unit = type == ElementType.BFLOAT16 ? 0x1p-8 : 0x1p-11;
        int rows = input.length / WIDTH;
        for (int r = 0; r < rows; r++) {
            float[] x = java.util.Arrays.copyOfRange(input, r * WIDTH, (r + 1) * WIDTH);
            double[] y = null;
            double[] magnitude = new double[WIDTH];
            for (int l = 0; l < LAYERS; l++) {
                y = new double[WIDTH];
                for (int o = 0; o < WIDTH; o++) {
                    double sum = biases[l][o];
                    double abs = Math.abs(biases[l][o]);
                    for (int i = 0; i < WIDTH; i++) {
                        double term = (double) x[i] * weights[l][o * WIDTH + i];
                        sum += term;
                        abs += Math.abs(term);
                    }
                    y[o] = Math.max(sum, 0);
                    magnitude[o] = abs;
                }
                float[] next = new float[WIDTH];
                for (int o = 0; o < WIDTH; o++) {
                    next[o] = (float) y[o];
                }
                x = rounded(next, type, 1);
            }
            for (int o = 0; o < WIDTH; o++) {
                double got = answer[r * WIDTH + o];
                double bound = 2 * unit * (Math.abs(y[o]) + magnitude[o]);
                if (!(Math.abs(got - y[o]) <= bound)) {
                    wrong.add(path + " row " + r + " column " + o + ": " + got + ", float64 gives " + y[o]);
                    return;
                }
            }
        }
    }

    private static float[] rounded(float[] values, ElementType type, double scale) {
        float[] scaled = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            scaled[i] = (float) (values[i] * scale);
        }
        return HalfFloats.toFloats(HalfFloats.fromFloats(scaled, type), type);
    }

    private static DeviceBuffer upload(float[] values, ElementType type) {
        DeviceBuffer buffer = device.allocate(type, values.length);
        buffer.copyFromRounded(values);
        return buffer;
    }
}
