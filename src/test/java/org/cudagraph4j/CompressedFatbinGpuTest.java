package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Fatbins as nvcc writes them by default (zstd) and for speed (LZ4) load, after the library has
 * decompressed and checked them, and their kernels compute what the same kernel does on the host.
 */
@GpuTest
class CompressedFatbinGpuTest {
    @ParameterizedTest
    @ValueSource(strings = {"default", "size", "speed", "none"})
    void aCompressedFatbinLoadsAndItsKernelsRun(String mode) throws IOException {
        CudaDevice device = TestData.device();
        byte[] image;
        try (InputStream in = getClass().getResourceAsStream("internal/image/compressed/mid-" + mode + ".fatbin")) {
            image = in.readAllBytes();
        }
        int n = 10_007;
        float[] a = TestData.randomFloats(n, TestData.newSeed());
        float[] b = TestData.randomFloats(n, TestData.newSeed());
        try (CudaLibrary library = CudaLibrary.load("mid-" + mode + ".fatbin", image);
                CudaStream stream = device.createStream();
                DeviceBuffer da = TestData.upload(device, a);
                DeviceBuffer db = TestData.upload(device, b)) {
            assertTrue(library.kernelNames().containsAll(List.of("k0", "k7", "k11")), library.kernelNames().toString());
            library.kernel("k7").launch(stream, LaunchConfig.of(Dim3.of((n + 255) / 256), Dim3.of(256)), da, db, n);
            stream.synchronize();
            float[] result = da.toFloatArray();
            for (int i = 0; i < n; i++) {
                float x = a[i];
                for (int j = 0; j < 10; j++) { // k7: 7 + 3 multiply-adds, contracted into FMAs as nvcc does
                    x = Math.fma(x, b[(i + j) % n], 7.5f);
                }
                assertEquals(x, result[i], Math.abs(x) * 1e-5f + 1e-6f, mode + ", element " + i);
            }
        }
    }
}
