package org.cudagraph4j;

import org.cudagraph4j.error.CudaException;

/**
 * Run by {@link ReliabilityTest} in a child JVM, because it poisons the CUDA context for good: a
 * kernel stores through an invalid address, then every later call fails. Prints one line per step.
 */
public final class StickyErrorProbe {
    private StickyErrorProbe() {}

    public static void main(String[] args) {
        CudaDevice device = TestData.device();
        try (CudaLibrary library = TestData.testKernels(); CudaStream stream = device.createStream()) {
            // write_pattern(float* out, ...): an 8-byte Long stands in for the pointer; 0x10 is unmapped.
            library.kernel("write_pattern").launch(stream, LaunchConfig.of(Dim3.of(1), Dim3.of(32)), 0x10L, 32, 1f, 0f);
            report("synchronize", stream::synchronize);
            report("allocate", () -> device.allocateFloats(16).close());
        }
    }

    private static void report(String step, Runnable call) {
        try {
            call.run();
            System.out.println(step + ": ok");
        } catch (CudaException e) {
            System.out.println(step + ": sticky=" + e.isSticky() + " error=" + e.error() + " message=" + e.getMessage());
        }
    }
}
