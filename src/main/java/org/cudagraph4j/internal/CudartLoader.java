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
 * Finds and opens {@code libcudart.so.13} for the generated bindings: the one gate in front of them.
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
 *
 * <p>The generated {@code cudart_h} resolves symbols through jextract's default lookup,
 * {@code SymbolLookup.loaderLookup()}, which sees the libraries this class loader has loaded with
 * {@link System#load}; so the file found is {@code System.load}ed by its absolute path (for the
 * soname, the file the dynamic loader mapped). jextract resolves each function once, in a nested
 * holder class, on its first call: a call before the load would fail that class's initialization
 * for the life of the JVM. So every path into the runtime begins at an entry point of this package
 * that calls {@link #ensureLoaded()} first: the device and version queries and {@code Devices.use},
 * {@code Memory.mallocHost}, {@code Libraries.load}, {@code Graphs.create} and {@code Status}'s
 * error texts. Every other call takes a handle, or needs a current device, that only those could
 * have produced. {@code RuntimeGateTest} checks that no public path gets past them.
 */
public final class CudartLoader {
    public static final String PATH_PROPERTY = "org.cudagraph4j.cudart.path";
    public static final String SONAME = "libcudart.so.13";
    static final String FALLBACK_DIR = "/usr/local/cuda/lib64";

    private static volatile SymbolLookup library;
    private static volatile Candidate loadedFrom;
    private static volatile Path loadedFile;

    private CudartLoader() {}

    /**
     * Opens the runtime if it is not open yet; the gate every entry point passes before its first
     * call into the bindings. Once open, this is one volatile read.
     *
     * @return a lookup of the runtime's own symbols
     * @throws RuntimeException the root's {@code CudaRuntimeNotFoundException}, listing every place tried
     * @throws IllegalCallerException if the JVM denies this module native access
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
     * loader mapped, if it has been opened.
     */
    public static Optional<Path> loadedFile() {
        return Optional.ofNullable(loadedFile);
    }

    /** The file the dynamic loader mapped for {@code soname}, from {@code /proc/self/maps}. */
    static Optional<Path> mappedFile(String soname) {
        try (Stream<String> maps = Files.lines(Path.of("/proc/self/maps"))) {
            return maps.map(line -> line.substring(line.indexOf('/') < 0 ? line.length() : line.indexOf('/')))
                    .filter(file -> file.contains("/" + soname))
                    .findFirst()
                    .map(Path::of);
        } catch (IOException | UncheckedIOException e) {
            return Optional.empty(); // not Linux, or no procfs
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
                    Optional<Path> file = isPath ? Optional.of(Path.of(candidate.target()).toAbsolutePath())
                            : mappedFile(candidate.target());
                    if (probe.isPresent() && file.isPresent()) {
                        // What the generated bindings' loaderLookup() sees: the same file, opened again
                        // by this class loader (the dynamic loader hands back the handle it has).
                        System.load(file.get().toString());
                        loadedFrom = candidate;
                        loadedFile = file.get();
                        return lookup;
                    }
                    failure = probe.isEmpty() ? "opened, but it exports no cudaRuntimeGetVersion"
                            : "opened, but /proc/self/maps does not say from which file, which System.load needs";
                } catch (IllegalCallerException e) {
                    throw nativeAccessDenied(e);
                } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
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
