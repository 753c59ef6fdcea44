package org.cudagraph4j.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.cudagraph4j.CudaRuntimeNotFoundException;

/**
 * Finds and opens {@code libcudart.so.13}, and is the symbol lookup of the generated bindings.
 *
 * <p>Search order, first hit wins:
 * <ol>
 *   <li>the system property {@value #PATH_PROPERTY} (a file, or a folder holding the soname);
 *   <li>{@code $CUDA_HOME/lib64}, then {@code $CUDA_PATH/lib64};
 *   <li>the soname {@value #SONAME} through the dynamic loader ({@code LD_LIBRARY_PATH}, ld.so.cache);
 *   <li>{@value #FALLBACK_DIR}.
 * </ol>
 * The library is opened once per JVM and never closed: the runtime keeps per-process state that
 * must outlive every handle. A failed search is not cached, so a corrected property lets a later
 * call succeed.
 */
public final class CudartLoader {
    public static final String PATH_PROPERTY = "org.cudagraph4j.cudart.path";
    public static final String SONAME = "libcudart.so.13";
    static final String FALLBACK_DIR = "/usr/local/cuda/lib64";

    private static volatile SymbolLookup library;
    private static volatile String loadedFrom;

    private CudartLoader() {}

    /**
     * The lookup the generated bindings resolve symbols through. It opens the runtime on first use,
     * so every binding sees the library this class chose.
     */
    public static SymbolLookup symbolLookup() {
        return name -> ensureLoaded().find(name);
    }

    /**
     * Opens the runtime if it is not open yet.
     *
     * @throws CudaRuntimeNotFoundException listing every place tried
     */
    public static SymbolLookup ensureLoaded() {
        SymbolLookup lookup = library;
        if (lookup == null) {
            synchronized (CudartLoader.class) {
                lookup = library;
                if (lookup == null) {
                    lookup = load(candidates(System::getProperty, System::getenv));
                    library = lookup;
                }
            }
        }
        return lookup;
    }

    /** Where the runtime was opened from, if it has been. */
    public static Optional<String> loadedFrom() {
        return Optional.ofNullable(loadedFrom);
    }

    /** One place to try: a file path, or the bare soname for the dynamic loader. */
    record Candidate(String source, String target) {
        @Override
        public String toString() {
            return source + ": " + target;
        }
    }

    /** The places to try, in order, given the system properties and the environment. */
    static List<Candidate> candidates(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        List<Candidate> candidates = new ArrayList<>();
        String property = properties.apply(PATH_PROPERTY);
        if (property != null && !property.isBlank()) {
            Path path = Path.of(property);
            candidates.add(new Candidate("-D" + PATH_PROPERTY,
                    (Files.isDirectory(path) ? path.resolve(SONAME) : path).toString()));
        }
        for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
            String home = environment.apply(variable);
            if (home != null && !home.isBlank()) {
                candidates.add(new Candidate("$" + variable, Path.of(home, "lib64", SONAME).toString()));
            }
        }
        candidates.add(new Candidate("dynamic loader", SONAME));
        candidates.add(new Candidate("default install", Path.of(FALLBACK_DIR, SONAME).toString()));
        return candidates;
    }

    /** The JVM refuses restricted methods to this module: say so, and what to add to the command line. */
    static IllegalCallerException nativeAccessDenied(IllegalCallerException cause) {
        Module module = CudartLoader.class.getModule();
        String grant = module.isNamed() ? module.getName() : "ALL-UNNAMED";
        return new IllegalCallerException("cudagraph4j calls the CUDA runtime through the Foreign Function & Memory"
                + " API, and this JVM denies native access to " + (module.isNamed() ? "module " + grant
                : "the class path") + ": run java with --enable-native-access=" + grant
                + (module.isNamed() ? "" : " (or --enable-native-access=org.cudagraph4j on the module path)"), cause);
    }

    @SuppressWarnings("restricted") // opening the CUDA runtime is this class's purpose
    static SymbolLookup load(List<Candidate> candidates) {
        List<String> failures = new ArrayList<>();
        for (Candidate candidate : candidates) {
            boolean isPath = candidate.target().contains("/");
            if (isPath && !Files.exists(Path.of(candidate.target()))) {
                failures.add(candidate + " (no such file)");
                continue;
            }
            try {
                SymbolLookup lookup = SymbolLookup.libraryLookup(candidate.target(), Arena.global());
                Optional<MemorySegment> probe = lookup.find("cudaRuntimeGetVersion");
                if (probe.isEmpty()) {
                    failures.add(candidate + " (opened, but it exports no cudaRuntimeGetVersion)");
                    continue;
                }
                loadedFrom = candidate.target();
                return lookup;
            } catch (IllegalCallerException e) {
                throw nativeAccessDenied(e);
            } catch (IllegalArgumentException e) {
                failures.add(candidate + " (" + e.getMessage() + ")");
            }
        }
        throw new CudaRuntimeNotFoundException(failures,
                "Install the CUDA 13 runtime, or point at it with -D" + PATH_PROPERTY
                        + "=/path/to/" + SONAME + " or CUDA_HOME=/path/to/cuda.");
    }
}
