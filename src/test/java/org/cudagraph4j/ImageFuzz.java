package org.cudagraph4j;

import java.io.PrintStream;
import java.util.List;
import org.cudagraph4j.error.CudaException;

/**
 * Loads corrupted images through {@link CudaLibrary#load}, one after another, to show that bad bytes
 * end in an exception, never in a crash of the process. Run by {@link ImageFuzzTest} in a child JVM,
 * which restarts it after a crash.
 *
 * <p>Arguments: {@code seed count from image...}, the images being class-path resource names;
 * {@code from} is where to start in the first image's mutations (after a crash, the one past the
 * crashing mutation). With no images it only checks the device. Output, one line each:
 * <ul>
 *   <li>{@code MUTATION <image> <index>: <description>}, flushed before the runtime is touched, so
 *       that the last such line names the mutation that killed the process;
 *   <li>{@code RESULT <image> <index>: <outcome>}, the outcome being {@code rejected by validation},
 *       {@code rejected by the runtime} or {@code loaded};
 *   <li>{@code FUZZ <image>: <n> mutations, <a> rejected by validation, <b> rejected by the runtime,
 *       <c> loaded in <seconds> s} after each image;
 *   <li>{@code FUZZ HEALTHY} at the end, once a real computation on the device gave the right answer.
 * </ul>
 */
public final class ImageFuzz {
    private static final String VALIDATION = "rejected by validation";
    private static final String RUNTIME = "rejected by the runtime";
    private static final String LOADED = "loaded";

    private ImageFuzz() {}

    public static void main(String[] args) {
        long seed = Long.parseLong(args[0]);
        int count = Integer.parseInt(args[1]);
        int from = Integer.parseInt(args[2]);
        List<String> images = List.of(args).subList(3, args.length);
        PrintStream out = System.out;
        for (int i = 0; i < images.size(); i++) {
            String image = images.get(i);
            fuzz(out, image, ImageMutations.resource(image), seed, count, i == 0 ? from : 0);
        }
        checkDeviceIsHealthy();
        out.println("FUZZ HEALTHY");
        out.flush();
    }

    private static void fuzz(PrintStream out, String image, byte[] bytes, long seed, int count, int from) {
        List<ImageMutations.Mutation> mutations = ImageMutations.of(image, bytes, seed, count);
        int validation = 0;
        int runtime = 0;
        int loaded = 0;
        long began = System.nanoTime();
        for (int index = from; index < count; index++) {
            ImageMutations.Mutation mutation = mutations.get(index);
            out.println("MUTATION " + image + " " + index + ": " + mutation.description());
            out.flush();
            String outcome;
            try (CudaLibrary library = CudaLibrary.load(image, mutation.bytes())) {
                // With lazy loading the runtime may read the image only now.
                for (String name : library.kernelNames()) {
                    library.kernel(name).parameters();
                }
                outcome = LOADED;
                loaded++;
            } catch (IllegalArgumentException e) {
                outcome = VALIDATION;
                validation++;
            } catch (CudaException e) {
                outcome = RUNTIME;
                runtime++;
            }
            out.println("RESULT " + image + " " + index + ": " + outcome);
        }
        out.printf("FUZZ %s: %d mutations, %d %s, %d %s, %d %s in %.1f s%n", image, count - from, validation,
                VALIDATION, runtime, RUNTIME, loaded, LOADED, (System.nanoTime() - began) / 1e9);
        out.flush();
    }

    /** saxpy on fresh random data, against a double-precision reference computed here. */
    private static void checkDeviceIsHealthy() {
        int n = 1 << 20;
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(n, seed);
        float[] y = TestData.randomFloats(n, seed + 1);
        float a = TestData.randomFloats(1, seed + 2)[0] * 4;
        CudaDevice device = TestData.device();
        try (CudaLibrary library = TestData.testKernels(); CudaStream stream = device.createStream();
                DeviceBuffer dx = device.allocateFloats(n); DeviceBuffer dy = device.allocateFloats(n)) {
            dx.copyFrom(x);
            dy.copyFrom(y);
            library.kernel("saxpy").launch(stream, LaunchConfig.of(Dim3.of(256), Dim3.of(256)), n, a, dx, dy);
            stream.synchronize();
            float[] result = dy.toFloatArray();
            for (int i = 0; i < n; i++) {
                double expected = (double) a * x[i] + y[i];
                if (!(Math.abs(result[i] - expected) <= 1e-6 * (1 + Math.abs(expected)))) {
                    throw new IllegalStateException("saxpy after the fuzz: element " + i + " is " + result[i]
                            + ", expected " + expected + " (" + TestData.seedDescription(seed) + ")");
                }
            }
        }
    }
}
