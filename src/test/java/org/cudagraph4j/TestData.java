package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Arrays;
import java.util.SplittableRandom;

/** Fresh random inputs for gpu tests: never zeros, different on every run. */
public final class TestData {
    private static final SplittableRandom SEEDS = new SplittableRandom();

    private TestData() {}

    /** Uniform in [-1, 1). The seed is printed on failure through {@link #seedDescription}. */
    public static float[] randomFloats(int length, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        float[] values = new float[length];
        for (int i = 0; i < length; i++) {
            values[i] = (float) (random.nextDouble() * 2 - 1);
        }
        return values;
    }

    public static long newSeed() {
        return SEEDS.nextLong();
    }

    public static String seedDescription(long seed) {
        return "seed " + seed;
    }

    /**
     * Whether the tests run under compute-sanitizer ({@code bin/run-tests --sanitize} sets
     * {@code org.cudagraph4j.sanitizer}): heavy tests then cover fewer cases, so that a whole class
     * fits in one sanitizer run; racecheck slows shared-memory kernels a thousandfold.
     */
    public static boolean underSanitizer() {
        return System.getProperty("org.cudagraph4j.sanitizer") != null;
    }

    /**
     * Whether the sanitizer is racecheck, which tracks every shared-memory access: load tests then
     * keep their concurrency but send a few requests each, so that a shard of the suite fits in one run.
     */
    public static boolean underRacecheck() {
        return "racecheck".equals(System.getProperty("org.cudagraph4j.sanitizer"));
    }

    /**
     * The device the gpu tests run on: ordinal {@code org.cudagraph4j.test.device} ({@code bin/run-tests
     * --device N} sets it), 0 by default. On a host of several GPUs the suite runs once per device; the
     * calling thread's current device is left alone, so that a call which forgets to select its own
     * device fails there.
     */
    public static CudaDevice device() {
        return Cuda.device(Integer.getInteger("org.cudagraph4j.test.device", 0));
    }

    /** The gpu tests' own kernels (src/test/cuda/test_kernels.cu), as a fatbin for sm_80 to sm_120. */
    public static CudaLibrary testKernels() {
        return CudaLibrary.loadResource(TestData.class, "test_kernels.fatbin");
    }

    /** A device buffer holding {@code values}; the caller closes it. */
    public static DeviceBuffer upload(CudaDevice device, float[] values) {
        DeviceBuffer buffer = device.allocateFloats(values.length);
        try {
            buffer.copyFrom(values);
            return buffer;
        } catch (RuntimeException e) {
            buffer.close();
            throw e;
        }
    }

    /**
     * Random floats copied into {@code buffer} with the synchronous copy and back into NaNs must come
     * back unchanged; {@code buffer} holds {@code length} floats.
     */
    public static void assertFloatsRoundTrip(DeviceBuffer buffer, int length) {
        long seed = newSeed();
        float[] data = randomFloats(length, seed);
        buffer.copyFrom(data);
        float[] back = nans(length);
        buffer.copyTo(back);
        assertArrayEquals(data, back, seedDescription(seed));
    }

    /** A float array full of NaN, to poison outputs before a run. */
    public static float[] nans(int length) {
        float[] values = new float[length];
        Arrays.fill(values, Float.NaN);
        return values;
    }
}
