package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.junit.jupiter.api.Test;

/** NVRTC is searched for as the runtime is, and its absence is one clear error naming it. */
class NvrtcLoaderTest {
    @Test
    void searchOrderIsTheRuntimesWithItsOwnPropertyAndSoname() {
        List<NativeLibrarySearch.Candidate> candidates = NvrtcLoader.SEARCH.candidates(
                Map.of(NvrtcLoader.PATH_PROPERTY, "/custom/libnvrtc.so.13.0.88")::get,
                Map.of("CUDA_HOME", "/opt/cuda-home")::get);

        assertEquals(List.of("/custom/libnvrtc.so.13.0.88", "/opt/cuda-home/lib64/libnvrtc.so.13", "libnvrtc.so.13",
                "/usr/local/cuda/lib64/libnvrtc.so.13"),
                candidates.stream().map(NativeLibrarySearch.Candidate::target).toList());
    }

    @Test
    void absenceNamesNvrtcEveryPlaceTriedAndHowToPointAtIt() {
        List<NativeLibrarySearch.Candidate> candidates = List.of(
                new NativeLibrarySearch.Candidate("$CUDA_HOME", "/nonexistent/lib64/libnvrtc.so.13"),
                new NativeLibrarySearch.Candidate("dynamic loader", "libm.so.6"));

        CudaRuntimeNotFoundException e = assertThrows(CudaRuntimeNotFoundException.class,
                () -> NvrtcLoader.SEARCH.load(candidates));

        assertTrue(e.getMessage().startsWith("could not load NVRTC, the CUDA runtime compiler (libnvrtc.so.13);"
                + " tried, in order:"), e.getMessage());
        assertEquals(List.of("$CUDA_HOME: /nonexistent/lib64/libnvrtc.so.13 (no such file)",
                "dynamic loader: libm.so.6 (opened, but it exports no nvrtcVersion)"), e.attempts());
        assertTrue(e.getMessage().contains("-Dorg.cudagraph4j.nvrtc.path=/path/to/libnvrtc.so.13"), e.getMessage());
    }
}
