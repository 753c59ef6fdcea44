package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.junit.jupiter.api.Test;

/** cuBLASLt is searched for as the runtime is, and its absence is one clear error naming it. */
class CublasLtLoaderTest {
    @Test
    void searchOrderIsTheRuntimesWithItsOwnPropertyAndSoname() {
        List<NativeLibrarySearch.Candidate> candidates = CublasLtLoader.SEARCH.candidates(
                Map.of(CublasLtLoader.PATH_PROPERTY, "/custom/cublas")::get, Map.of("CUDA_PATH", "/opt/cuda")::get);

        assertEquals(List.of("/custom/cublas", "/opt/cuda/lib64/libcublasLt.so.13", "libcublasLt.so.13",
                "/usr/local/cuda/lib64/libcublasLt.so.13"),
                candidates.stream().map(NativeLibrarySearch.Candidate::target).toList());
    }

    @Test
    void absenceNamesCublasLtEveryPlaceTriedAndHowToPointAtIt() {
        List<NativeLibrarySearch.Candidate> candidates = List.of(
                new NativeLibrarySearch.Candidate("$CUDA_HOME", "/nonexistent/lib64/libcublasLt.so.13"),
                new NativeLibrarySearch.Candidate("dynamic loader", "libm.so.6"));

        CudaRuntimeNotFoundException e = assertThrows(CudaRuntimeNotFoundException.class,
                () -> CublasLtLoader.SEARCH.load(candidates));

        assertTrue(e.getMessage().startsWith("could not load cuBLASLt, the CUDA BLAS matmul library"
                + " (libcublasLt.so.13); tried, in order:"), e.getMessage());
        assertEquals(List.of("$CUDA_HOME: /nonexistent/lib64/libcublasLt.so.13 (no such file)",
                "dynamic loader: libm.so.6 (opened, but it exports no cublasLtGetVersion)"), e.attempts());
        assertTrue(e.getMessage().contains("-Dorg.cudagraph4j.cublaslt.path=/path/to/libcublasLt.so.13"), e.getMessage());
    }
}
