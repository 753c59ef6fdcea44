package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What most {@link GpuTest} classes share, opened before each test and closed after it: the device
 * under test ({@link TestData#device()}), the test kernels' library ({@link TestData#testKernels()})
 * with its {@code write_pattern} and {@code saxpy} kernels, and a fresh stream on the device.
 * Register it as a field, {@code @RegisterExtension final GpuFixture gpu = new GpuFixture();}: it
 * opens after {@link LeakCheck} has counted the live resources and closes (the stream, then the
 * library) after the class's {@code @AfterEach} methods and before LeakCheck counts again, so a
 * test's leaks still fail it and the fixture's own resources are never taken for one. A class whose
 * tests LeakCheck does not watch fails rather than run unwatched.
 */
public final class GpuFixture implements BeforeEachCallback, AfterEachCallback {
    private CudaDevice device;
    private CudaLibrary library;
    private CudaStream stream;
    private CudaKernel writePattern;
    private CudaKernel saxpy;

    @Override
    public void beforeEach(ExtensionContext context) {
        if (!LeakCheck.counted(context)) {
            fail(context.getDisplayName() + ": GpuFixture needs LeakCheck to count the live resources before it"
                    + " opens; mark the class @GpuTest and register the fixture as a @RegisterExtension field");
        }
        device = TestData.device();
        library = TestData.testKernels();
        try {
            stream = device.createStream();
            writePattern = library.kernel("write_pattern");
            saxpy = library.kernel("saxpy");
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    private void close() {
        try {
            if (stream != null) {
                stream.close();
            }
        } finally {
            if (library != null) {
                library.close();
            }
            device = null;
            stream = null;
            library = null;
            writePattern = null;
            saxpy = null;
        }
    }

    /** The device under test. */
    public CudaDevice device() {
        return open(device);
    }

    /** The test kernels' library (src/test/cuda/test_kernels.cu). */
    public CudaLibrary library() {
        return open(library);
    }

    /** A stream on {@link #device()}, created for this test alone. */
    public CudaStream stream() {
        return open(stream);
    }

    /** {@code write_pattern(float* out, int n, float scale, float offset)}: out[i] = i * scale + offset. */
    public CudaKernel writePattern() {
        return open(writePattern);
    }

    /** {@code saxpy(int n, float a, const float* x, float* y)}: y = a * x + y. */
    public CudaKernel saxpy() {
        return open(saxpy);
    }

    private static <T> T open(T value) {
        if (value == null) {
            throw new IllegalStateException("GpuFixture is open only from before each test to after it");
        }
        return value;
    }
}
