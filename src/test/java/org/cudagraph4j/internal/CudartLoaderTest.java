package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CudartLoaderTest {
    @Test
    void searchOrderIsPropertyThenCudaHomeThenCudaPathThenSonameThenDefaultInstall(@TempDir Path dir) {
        Map<String, String> properties = Map.of(CudartLoader.PATH_PROPERTY, dir.toString());
        Map<String, String> env = Map.of("CUDA_HOME", "/opt/cuda-home", "CUDA_PATH", "/opt/cuda-path");

        List<NativeLibrarySearch.Candidate> candidates = CudartLoader.SEARCH.candidates(properties::get, env::get);

        assertEquals(List.of(
                dir.resolve("libcudart.so.13").toString(),
                "/opt/cuda-home/lib64/libcudart.so.13",
                "/opt/cuda-path/lib64/libcudart.so.13",
                "libcudart.so.13",
                "/usr/local/cuda/lib64/libcudart.so.13"),
                candidates.stream().map(NativeLibrarySearch.Candidate::target).toList());
    }

    @Test
    void propertyNamingAFileIsUsedAsIs() {
        Map<String, String> properties = Map.of(CudartLoader.PATH_PROPERTY, "/custom/libcudart.so.13.0.48");

        List<NativeLibrarySearch.Candidate> candidates = CudartLoader.SEARCH.candidates(properties::get, name -> null);

        assertEquals("/custom/libcudart.so.13.0.48", candidates.get(0).target());
        assertEquals(3, candidates.size(), "property, soname, default install");
    }

    @Test
    void failureListsEveryPlaceTriedAndHowToFixIt() {
        List<NativeLibrarySearch.Candidate> candidates = List.of(
                new NativeLibrarySearch.Candidate("$CUDA_HOME", "/nonexistent/lib64/libcudart.so.13"),
                new NativeLibrarySearch.Candidate("dynamic loader", "libm.so.6"),
                new NativeLibrarySearch.Candidate("dynamic loader", "libcudart-does-not-exist.so.13"));

        CudaRuntimeNotFoundException e = assertThrows(CudaRuntimeNotFoundException.class,
                () -> CudartLoader.SEARCH.load(candidates));

        assertEquals(List.of(
                "$CUDA_HOME: /nonexistent/lib64/libcudart.so.13 (no such file)",
                "dynamic loader: libm.so.6 (opened, but it exports no cudaRuntimeGetVersion)"),
                e.attempts().subList(0, 2));
        assertTrue(e.attempts().get(2).startsWith("dynamic loader: libcudart-does-not-exist.so.13 ("), e.getMessage());
        assertTrue(e.getMessage().contains("-Dorg.cudagraph4j.cudart.path="), e.getMessage());
        assertTrue(e.getMessage().contains("CUDA_HOME="), e.getMessage());
    }

    @Test
    void anExplicitPathThatDoesNotLoadIsAnErrorNotAFallback() {
        List<NativeLibrarySearch.Candidate> candidates = CudartLoader.SEARCH.candidates(
                Map.of(CudartLoader.PATH_PROPERTY, "/opt/cuda/lib64/libcudart.so.31")::get, name -> null);

        CudaRuntimeNotFoundException e = assertThrows(CudaRuntimeNotFoundException.class,
                () -> CudartLoader.SEARCH.load(candidates));

        assertEquals(List.of("-Dorg.cudagraph4j.cudart.path: /opt/cuda/lib64/libcudart.so.31 (no such file)"),
                e.attempts(), "the soname and the default install are not tried");
        assertTrue(e.getMessage().endsWith("fix it, or remove the property to search the usual places."),
                e.getMessage());
    }

    @Test
    void loadsTheInstalledRuntime() {
        CudartLoader.ensureLoaded();

        assertTrue(CudartLoader.loadedFrom().orElseThrow().contains("libcudart.so.13"));
        assertTrue(CudartLoader.loadedFile().orElseThrow().isAbsolute());
        assertTrue(CudartLoader.loadedFile().orElseThrow().getFileName().toString().startsWith("libcudart.so.13"));
        assertTrue(CudartLoader.ensureLoaded().find("cudaGraphLaunch").isPresent());
        // What the generated bindings resolve through: this class loader's System.load'ed libraries.
        assertTrue(SymbolLookup.loaderLookup().find("cudaGraphLaunch").isPresent(),
                "libcudart.so.13 is not System.load'ed into the bindings' class loader");
    }
}
