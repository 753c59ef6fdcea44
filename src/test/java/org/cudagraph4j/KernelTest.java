package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

@GpuTest
class KernelTest {
    private static CudaDevice device;
    private static CudaLibrary library;
    private static CudaStream stream;

    @BeforeAll
    static void load() {
        device = TestData.device();
        library = TestData.testKernels();
        stream = device.createStream();
    }

    @AfterAll
    static void close() {
        stream.close();
        library.close();
    }

    @Test
    void eagerLaunchWritesEveryElement() {
        int n = 100_003;
        float scale = 0.25f;
        float offset = (float) (TestData.newSeed() % 1000) / 7;
        try (DeviceBuffer out = device.allocateFloats(n)) {
            out.memset(0xFF);
            library.kernel("write_pattern").launch(stream, LaunchConfig.of(Dim3.of(120), Dim3.of(256)), out, n, scale,
                    offset);
            stream.synchronize();

            float[] result = out.toFloatArray();
            for (int i = 0; i < n; i++) {
                assertEquals(i * scale + offset, result[i], "element " + i + ", offset " + offset);
            }
        }
    }

    @Test
    void preparedArgumentsCanBeRelaunchedAndChanged() {
        int n = 4096;
        long seed = TestData.newSeed();
        float[] x = TestData.randomFloats(n, seed);
        float[] y = TestData.randomFloats(n, seed + 1);
        CudaKernel saxpy = library.kernel("saxpy");
        try (DeviceBuffer dx = device.allocateFloats(n); DeviceBuffer dy = device.allocateFloats(n);
                KernelArguments args = saxpy.arguments(n, 2.0f, dx, dy)) {
            dx.copyFrom(x);
            dy.copyFrom(y);
            LaunchConfig config = LaunchConfig.of(Dim3.of(16), Dim3.of(256));
            saxpy.launch(stream, config, args);
            args.set(1, -0.5f);
            saxpy.launch(stream, config, args);
            stream.synchronize();

            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = -0.5f * x[i] + (2.0f * x[i] + y[i]);
            }
            assertArrayEquals(expected, dy.toFloatArray(), TestData.seedDescription(seed));
        }
    }

    @Test
    void reportsNameAndParameterInfoOfARealKernel() {
        CudaKernel kernel = library.kernel("mixed_parameters");

        assertEquals("mixed_parameters", kernel.name());
        assertEquals(List.of(8L, 1L, 2L, 4L, 8L, 8L),
                kernel.parameters().stream().map(KernelParameter::sizeBytes).toList());
        assertTrue(library.kernelNames().containsAll(List.of("write_pattern", "saxpy", "mixed_parameters",
                "empty_kernel")), library.kernelNames().toString());
    }

    @Test
    void wrongArgumentsAreRejectedBeforeTheLaunch() {
        CudaKernel kernel = library.kernel("write_pattern");
        try (DeviceBuffer out = device.allocateFloats(16)) {
            LaunchConfig config = LaunchConfig.of(Dim3.of(1), Dim3.of(32));
            IllegalArgumentException count = assertThrows(IllegalArgumentException.class,
                    () -> kernel.launch(stream, config, out, 16, 1.0f));
            assertEquals("kernel write_pattern takes 4 parameters but 3 arguments were given", count.getMessage());
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> kernel.launch(stream, config, out, 16L, 1.0f, 0.0f));
            assertEquals("kernel write_pattern, parameter 1 is 4 bytes but the argument is a Long (8 bytes)",
                    size.getMessage());
        }
    }

    @Test
    void invalidLaunchShapeIsANamedCudaException() {
        try (DeviceBuffer out = device.allocateFloats(16)) {
            int tooMuchShared = 1 << 30;
            CudaException e = assertThrows(CudaException.class, () -> library.kernel("write_pattern").launch(
                    stream, LaunchConfig.of(Dim3.of(1), Dim3.of(32), tooMuchShared), out, 16, 1.0f, 0.0f));
            assertEquals("cudaLaunchKernel", e.function());
            assertTrue(e.getMessage().contains("kernel write_pattern"), e.getMessage());
            // The stream is still usable, and the failure does not linger as the last error.
            stream.synchronize();
        }
    }

    @Test
    void unknownKernelIsANamedCudaException() {
        CudaException e = assertThrows(CudaException.class, () -> library.kernel("no_such_kernel"));
        assertEquals(CudaError.SYMBOL_NOT_FOUND, e.error());
    }

    /** With lazy loading (the CUDA 13 default) the runtime may only read the image at first use. */
    @Test
    void corruptImageIsRefusedBeforeTheDriverSeesIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CudaLibrary.load("garbage", new byte[] {1, 2, 3, 4, 5, 6, 7, 8}));
        assertEquals("library image garbage is not a cubin, fatbin or PTX image (it starts with 0x01 0x02 0x03 0x04)",
                e.getMessage());
    }

    @Test
    void closedLibraryRejectsLookups() {
        CudaLibrary second = TestData.testKernels();
        CudaKernel kernel = second.kernel("empty_kernel");
        second.close();
        second.close();
        assertThrows(IllegalStateException.class, () -> second.kernel("empty_kernel"));
        assertThrows(IllegalStateException.class, kernel::handle);
    }
}
