package org.cudagraph4j.internal;

import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds and opens {@code libcudart.so.13} for the generated bindings: the one gate in front of them.
 * The search is {@link NativeLibrarySearch}'s, with the property {@value #PATH_PROPERTY}.
 *
 * <p>jextract resolves each function once, in a nested holder class, on its first call: a call
 * before the load would fail that class's initialization for the life of the JVM. So every path
 * into the runtime begins at an entry point of this package that calls {@link #ensureLoaded()}
 * first: the device and version queries and {@code Devices.use}, {@code Memory.mallocHost},
 * {@code Libraries.load}, {@code Graphs.create} and {@code Status}'s error texts. Every other call
 * takes a handle, or needs a current device, that only those could have produced.
 * {@code RuntimeGateTest} checks that no public path gets past them.
 */
public final class CudartLoader {
    public static final String PATH_PROPERTY = "org.cudagraph4j.cudart.path";
    public static final String SONAME = "libcudart.so.13";
    /** The search; its candidates and load are tested through it. */
    static final NativeLibrarySearch SEARCH = new NativeLibrarySearch(
            "the CUDA runtime (" + SONAME + ")", SONAME, PATH_PROPERTY, "cudaRuntimeGetVersion", null);

    private CudartLoader() {}

    /**
     * Opens the runtime if it is not open yet; the gate every entry point passes before its first
     * call into the bindings. Once open, this is one volatile read.
     *
     * @return a lookup of the runtime's own symbols
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException listing every place tried
     * @throws IllegalCallerException if the JVM denies this module native access
     */
    public static SymbolLookup ensureLoaded() {
        return SEARCH.ensureLoaded();
    }

    /** Where the runtime was opened from, as tried (a path, or the soname), if it has been. */
    public static Optional<String> loadedFrom() {
        return SEARCH.loadedFrom();
    }

    /** Which search step found the runtime, e.g. {@code "dynamic loader"}, if it has been opened. */
    public static Optional<String> foundBy() {
        return SEARCH.foundBy();
    }

    /**
     * The file the runtime was opened from: the path tried, or for the soname the file the dynamic
     * loader mapped, if it has been opened.
     */
    public static Optional<Path> loadedFile() {
        return SEARCH.loadedFile();
    }
}
