package org.cudagraph4j.kernels;

import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What the kernels' {@code @GpuTest} classes share, opened once before a class's tests and closed
 * after them: the device under test ({@link TestData#device()}), the shipped kernels loaded for
 * it, and a stream on it. Loading the kernels raises every large instance's shared-memory limit,
 * which is why it is done once a class rather than once a test (as {@code GpuFixture} opens the
 * test kernels). Register it as a static field,
 * {@code @RegisterExtension static final KernelsFixture gpu = new KernelsFixture();}: it opens
 * after {@code RequireDevice} has checked that there is a device, and since it opens before each
 * test's {@code LeakCheck} count and closes after the last, its resources are never taken for a
 * test's leak.
 */
final class KernelsFixture implements BeforeAllCallback, AfterAllCallback {
    private CudaDevice device;
    private ShippedKernels kernels;
    private CudaStream stream;

    @Override
    public void beforeAll(ExtensionContext context) {
        device = TestData.device();
        kernels = ShippedKernels.load(device);
        try {
            stream = device.createStream();
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
        context.publishReportEntry("kernels", "loaded " + kernels.image() + " on " + device.properties().name());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    /** Closes the stream, then the kernels; either may be null where opening failed before it. */
    private void close() {
        CudaStream openStream = stream;
        ShippedKernels openKernels = kernels;
        device = null;
        stream = null;
        kernels = null;
        try (openKernels; openStream) {
            // try-with-resources closes them in reverse order and skips the null ones
        }
    }

    /** The device under test. */
    CudaDevice device() {
        return open(device);
    }

    /** The shipped kernels, loaded for {@link #device()}. */
    ShippedKernels kernels() {
        return open(kernels);
    }

    /** A stream on {@link #device()}, shared by the class's tests. */
    CudaStream stream() {
        return open(stream);
    }

    /** A new {@link Sgemm} on {@link #kernels()}. */
    Sgemm sgemm() {
        return kernels().sgemm();
    }

    /** A new buffer of {@code length} floats on {@link #device()}, not initialised. */
    DeviceBuffer allocateFloats(long length) {
        return device().allocateFloats(length);
    }

    /** {@code values} copied to a new buffer on {@link #device()}. */
    DeviceBuffer upload(float[] values) {
        return TestData.upload(device(), values);
    }

    private static <T> T open(T value) {
        if (value == null) {
            throw new IllegalStateException("KernelsFixture is open only from before a class's tests to after them");
        }
        return value;
    }
}
