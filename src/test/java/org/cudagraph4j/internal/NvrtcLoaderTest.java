package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
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
        LibrarySearchChecks.assertAbsenceIsNamed(NvrtcLoader.SEARCH, "NVRTC, the CUDA runtime compiler", "libnvrtc.so.13",
                "nvrtcVersion", NvrtcLoader.PATH_PROPERTY);
    }
}
