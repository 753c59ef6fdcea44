package org.cudagraph4j.internal;

import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Finds and opens {@code libnvrtc.so.13}, the CUDA runtime compiler, for its generated bindings;
 * the one gate in front of them, as {@link CudartLoader} is for the runtime, with the same search
 * ({@link NativeLibrarySearch}) under the property {@value #PATH_PROPERTY}. NVRTC opens its
 * builtins ({@code libnvrtc-builtins.so.13.X}) by soname when it first compiles; those beside the
 * file found are loaded with it, so that a copy outside the dynamic loader's path works. Only
 * {@link Nvrtc} calls it, on its first use, so the rest of the library never needs NVRTC.
 */
public final class NvrtcLoader {
    public static final String PATH_PROPERTY = "org.cudagraph4j.nvrtc.path";
    public static final String SONAME = "libnvrtc.so.13";
    /** The search; its candidates and load are tested through it. */
    static final NativeLibrarySearch SEARCH = new NativeLibrarySearch(
            "NVRTC, the CUDA runtime compiler (" + SONAME + ")", SONAME, PATH_PROPERTY, "nvrtcVersion",
            Pattern.compile("libnvrtc-builtins\\.so\\.13\\.[0-9]+"));

    private NvrtcLoader() {}

    /**
     * Opens NVRTC if it is not open yet.
     *
     * @return a lookup of its symbols
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException listing every place tried
     */
    public static SymbolLookup ensureLoaded() {
        return SEARCH.ensureLoaded();
    }

    /** The file NVRTC was opened from, if it has been. */
    public static Optional<Path> loadedFile() {
        return SEARCH.loadedFile();
    }
}
