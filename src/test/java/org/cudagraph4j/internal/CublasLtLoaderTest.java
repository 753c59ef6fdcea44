package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
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
        LibrarySearchChecks.assertAbsenceIsNamed(CublasLtLoader.SEARCH, "cuBLASLt, the CUDA BLAS matmul library",
                "libcublasLt.so.13", "cublasLtGetVersion", CublasLtLoader.PATH_PROPERTY);
    }
}
