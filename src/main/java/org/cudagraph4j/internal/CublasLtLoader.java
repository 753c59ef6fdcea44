package org.cudagraph4j.internal;

import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds and opens {@code libcublasLt.so.13}, cuBLASLt, for its generated bindings; the one gate in
 * front of them, as {@link CudartLoader} is for the runtime, with the same search
 * ({@link NativeLibrarySearch}) under the property {@value #PATH_PROPERTY}. Only {@link CublasLt}
 * calls it, on its first use, so the rest of the library never needs cuBLASLt.
 */
public final class CublasLtLoader {
    public static final String PATH_PROPERTY = "org.cudagraph4j.cublaslt.path";
    public static final String SONAME = "libcublasLt.so.13";
    /** The search; its candidates and load are tested through it. */
    static final NativeLibrarySearch SEARCH = new NativeLibrarySearch(
            "cuBLASLt, the CUDA BLAS matmul library (" + SONAME + ")", SONAME, PATH_PROPERTY, "cublasLtGetVersion",
            null);

    private CublasLtLoader() {}

    /**
     * Opens cuBLASLt if it is not open yet.
     *
     * @return a lookup of its symbols
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException listing every place tried
     */
    public static SymbolLookup ensureLoaded() {
        return SEARCH.ensureLoaded();
    }

    /** The file cuBLASLt was opened from, if it has been. */
    public static Optional<Path> loadedFile() {
        return SEARCH.loadedFile();
    }
}
