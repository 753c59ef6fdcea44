package org.cudagraph4j.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

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
 * An explicit path in the property must load: if it does not, the search stops there with an
 * error rather than quietly taking another runtime. The library is opened once per JVM and never
 * closed: the runtime keeps per-process state that must outlive every handle. A failed search is
 * not cached, so a corrected property lets a later call succeed.
 */
public final class CudartLoader {
    public static final String PATH_PROPERTY = "org.cudagraph4j.cudart.path";
    public static final String SONAME = "libcudart.so.13";
    static final String FALLBACK_DIR = "/usr/local/cuda/lib64";

    private static volatile SymbolLookup library;
    private static volatile Candidate loadedFrom;

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
     * @throws RuntimeException the root's {@code CudaRuntimeNotFoundException}, listing every place tried
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

    /** Where the runtime was opened from, as tried (a path, or the soname), if it has been. */
    public static Optional<String> loadedFrom() {
        return Optional.ofNullable(loadedFrom).map(Candidate::target);
    }

    /** Which search step found the runtime, e.g. {@code "dynamic loader"}, if it has been opened. */
    public static Optional<String> foundBy() {
        return Optional.ofNullable(loadedFrom).map(Candidate::source);
    }

    /**
     * The file the runtime was opened from: the path tried, or for the soname the file the dynamic
     * loader mapped (from {@code /proc/self/maps}), if it has been opened.
     */
    public static Optional<Path> loadedFile() {
        Candidate candidate = loadedFrom;
        if (candidate == null) {
            return Optional.empty();
        }
        if (candidate.target().contains("/")) {
            return Optional.of(Path.of(candidate.target()));
        }
        try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
            return maps.map(line -> line.substring(line.indexOf('/') < 0 ? line.length() : line.indexOf('/')))
                    .filter(file -> file.contains("/" + SONAME))
                    .findFirst()
                    .map(Path::of);
        } catch (IOException | UncheckedIOException e) {
            return Optional.empty(); // not Linux, or no procfs: the soname is all there is to say
        }
    }

    /**
     * One place to try: a file path, or the bare soname for the dynamic loader. An explicit one
     * (the property) must load or the search fails.
     */
    record Candidate(String source, String target, boolean explicit) {
        Candidate(String source, String target) {
            this(source, target, false);
        }

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
                    (Files.isDirectory(path) ? path.resolve(SONAME) : path).toString(), true));
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
            String failure;
            boolean isPath = candidate.target().contains("/");
            if (isPath && !Files.exists(Path.of(candidate.target()))) {
                failure = "no such file";
            } else {
                try {
                    SymbolLookup lookup = SymbolLookup.libraryLookup(candidate.target(), Arena.global());
                    Optional<MemorySegment> probe = lookup.find("cudaRuntimeGetVersion");
                    if (probe.isPresent()) {
                        loadedFrom = candidate;
                        return lookup;
                    }
                    failure = "opened, but it exports no cudaRuntimeGetVersion";
                } catch (IllegalCallerException e) {
                    throw nativeAccessDenied(e);
                } catch (IllegalArgumentException e) {
                    failure = e.getMessage();
                }
            }
            failures.add(candidate + " (" + failure + ")");
            if (candidate.explicit()) {
                throw SharedSecrets.root().runtimeNotFound(failures, "The path given with -D" + PATH_PROPERTY
                        + " must name libcudart.so.13 or a folder holding it; fix it, or remove the property to"
                        + " search the usual places.");
            }
        }
        throw SharedSecrets.root().runtimeNotFound(failures,
                "Install the CUDA 13 runtime, or point at it with -D" + PATH_PROPERTY
                        + "=/path/to/" + SONAME + " or CUDA_HOME=/path/to/cuda.");
    }
}
