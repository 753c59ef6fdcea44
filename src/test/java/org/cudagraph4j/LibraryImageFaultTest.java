package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.assertCudaMessage;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random, empty, truncated or missing library images, and missing kernels, are refused with the
 * name they were given. Fault injection as {@link FaultChecks} describes it, on a {@link
 * GpuFixture}.
 */
@GpuTest
class LibraryImageFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    @Test
    void randomBytesAreRefusedAsALibraryImage() {
        byte[] garbage = new byte[4096];
        new SplittableRandom(TestData.newSeed()).nextBytes(garbage);
        garbage[0] = 0x11; // not the first byte of an ELF, fatbin or PTX header
        LiveResources before = Cuda.liveResources();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CudaLibrary.load("random-bytes", garbage).close());
        // expected: random bytes are neither a cubin, a fatbin nor PTX text, so the image check refuses
        // them ("corrupt image is refused here"), rather than passing them on to the runtime as PTX.
        assertTrue(e.getMessage().contains("library image"), e.getMessage());
        // load's javadoc: "name names the library in errors".
        assertTrue(e.getMessage().contains("random-bytes"), e.getMessage());
        assertEquals(before, Cuda.liveResources(), "a refused image loads nothing");
        assertHealthy(gpu);
    }

    @Test
    void emptyImageIsRefusedAsALibraryImage() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CudaLibrary.load("zero-bytes", new byte[0]).close());
        assertTrue(e.getMessage().contains("library image"), e.getMessage());
        // load's javadoc: "name names the library in errors".
        assertTrue(e.getMessage().contains("zero-bytes"), e.getMessage());
        assertHealthy(gpu);
    }

    @ParameterizedTest(name = "{0} of the test fatbin")
    @ValueSource(ints = {2, 3, 10})
    void truncatedFatbinIsRefusedAsALibraryImage(int fraction) throws IOException {
        byte[] image = testFatbin();
        // A sanity check of the intact image, so the failure below is the truncation's doing.
        try (CudaLibrary intact = CudaLibrary.load("intact", image)) {
            assertTrue(intact.kernelNames().contains("saxpy"));
        }
        byte[] truncated = Arrays.copyOf(image, image.length / fraction);
        LiveResources before = Cuda.liveResources();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CudaLibrary.load("cut-test-kernels", truncated).close());
        assertTrue(e.getMessage().contains("library image"), e.getMessage());
        // load's javadoc: "name names the library in errors".
        assertTrue(e.getMessage().contains("cut-test-kernels"), e.getMessage());
        assertEquals(before, Cuda.liveResources(), "a refused image loads nothing");
        assertHealthy(gpu);
    }

    @Test
    void nullNameOrImageIsRefused() {
        assertRefused(NullPointerException.class, () -> CudaLibrary.load(null, new byte[16]).close(), "name");
        assertRefused(NullPointerException.class, () -> CudaLibrary.load("no image", null).close(), "image");
        assertHealthy(gpu);
    }

    @Test
    void missingResourceIsRefusedAndNamed() {
        assertRefused(IllegalArgumentException.class,
                () -> CudaLibrary.loadResource(TestData.class, "no_such.fatbin").close(),
                "no resource no_such.fatbin next to org.cudagraph4j.TestData (in a named module, pass"
                        + " MethodHandles.lookup() instead of a class, or open its package)");
        assertHealthy(gpu);
    }

    @Test
    void missingKernelIsCudaErrorSymbolNotFound() {
        CudaException e = assertThrows(CudaException.class, () -> gpu.library().kernel("no_such_kernel"));
        assertSame(CudaException.class, e.getClass());
        assertCudaMessage(e, "cudaLibraryGetKernel", CudaError.SYMBOL_NOT_FOUND, "kernel no_such_kernel");
        // The failed lookup is not cached: the library still serves its real kernels.
        assertSame(gpu.saxpy(), gpu.library().kernel("saxpy"));
        CudaException again = assertThrows(CudaException.class, () -> gpu.library().kernel("no_such_kernel"));
        assertEquals(CudaError.SYMBOL_NOT_FOUND, again.error());
        assertHealthy(gpu);
    }

    private static byte[] testFatbin() throws IOException {
        try (InputStream in = TestData.class.getResourceAsStream("test_kernels.fatbin")) {
            assertTrue(in != null, "test_kernels.fatbin is missing from the test resources");
            return in.readAllBytes();
        }
    }
}
