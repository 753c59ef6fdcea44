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
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;

/**
 * Finds and opens one CUDA shared library for its generated bindings, the same way for each:
 * {@link CudartLoader} for the runtime and {@link NvrtcLoader} for the runtime compiler.
 *
 * <p>Search order, first hit wins:
 * <ol>
 *   <li>the library's system property (a file, or a folder holding the soname);
 *   <li>{@code $CUDA_HOME/lib64}, then {@code $CUDA_PATH/lib64};
 *   <li>the soname through the dynamic loader ({@code LD_LIBRARY_PATH}, ld.so.cache);
 *   <li>{@value #FALLBACK_DIR}.
 * </ol>
 * An explicit path in the property must load: if it does not, the search stops there with an
 * error rather than quietly taking another copy. A library is opened once per JVM and never
 * closed: CUDA keeps per-process state that must outlive every handle. A failed search is not
 * cached, so a corrected property lets a later call succeed.
 *
 * <p>jextract's generated classes resolve symbols through {@code SymbolLookup.loaderLookup()},
 * which sees the libraries this class loader has loaded with {@link System#load}; so the file found
 * is {@code System.load}ed by its absolute path (for the soname, the file the dynamic loader
 * mapped).
 */
final class NativeLibrarySearch {
    static final String FALLBACK_DIR = "/usr/local/cuda/lib64";

    private final String description;
    private final String soname;
    private final String pathProperty;
    private final String probeSymbol;
    private final Pattern companion;
    private volatile SymbolLookup library;
    private volatile Candidate loadedFrom;
    private volatile Path loadedFile;

    /**
     * @param description what the library is, for messages, e.g. "the CUDA runtime (libcudart.so.13)"
     * @param soname the file name to look for
     * @param pathProperty the system property that names it explicitly
     * @param probeSymbol a symbol that the right library exports
     * @param companion file names in the library's folder that it opens itself by soname, and
     *     that are loaded first so that it finds them wherever it lies (NVRTC's builtins); null for none
     */
    NativeLibrarySearch(String description, String soname, String pathProperty, String probeSymbol,
            Pattern companion) {
        this.description = description;
        this.soname = soname;
        this.pathProperty = pathProperty;
        this.probeSymbol = probeSymbol;
        this.companion = companion;
    }

    /** Opens the library if it is not open yet; once open, this is one volatile read. */
    SymbolLookup ensureLoaded() {
        SymbolLookup lookup = library;
        if (lookup == null) {
            synchronized (this) {
                lookup = library;
                if (lookup == null) {
                    lookup = load(candidates(System::getProperty, System::getenv));
                    library = lookup;
                }
            }
        }
        return lookup;
    }

    Optional<String> loadedFrom() {
        return Optional.ofNullable(loadedFrom).map(Candidate::target);
    }

    Optional<String> foundBy() {
        return Optional.ofNullable(loadedFrom).map(Candidate::source);
    }

    Optional<Path> loadedFile() {
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
    List<Candidate> candidates(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        List<Candidate> candidates = new ArrayList<>();
        String property = properties.apply(pathProperty);
        if (property != null && !property.isBlank()) {
            Path path = Path.of(property);
            candidates.add(new Candidate("-D" + pathProperty,
                    (Files.isDirectory(path) ? path.resolve(soname) : path).toString(), true));
        }
        for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
            String home = environment.apply(variable);
            if (home != null && !home.isBlank()) {
                candidates.add(new Candidate("$" + variable, Path.of(home, "lib64", soname).toString()));
            }
        }
        candidates.add(new Candidate("dynamic loader", soname));
        candidates.add(new Candidate("default install", Path.of(FALLBACK_DIR, soname).toString()));
        return candidates;
    }

    /** The JVM refuses restricted methods to this module: say so, and what to add to the command line. */
    static IllegalCallerException nativeAccessDenied(IllegalCallerException cause) {
        Module module = NativeLibrarySearch.class.getModule();
        String grant = module.isNamed() ? module.getName() : "ALL-UNNAMED";
        return new IllegalCallerException("cudagraph4j calls the CUDA runtime through the Foreign Function & Memory"
                + " API, and this JVM denies native access to " + (module.isNamed() ? "module " + grant
                : "the class path") + ": run java with --enable-native-access=" + grant
                + (module.isNamed() ? "" : " (or --enable-native-access=org.cudagraph4j on the module path)"), cause);
    }

    /**
     * Loads the files beside {@code library} that it opens by soname at run time: loaded, the
     * dynamic loader hands them over by soname without searching {@code LD_LIBRARY_PATH}.
     */
    private void loadCompanions(Path library) {
        Path folder = library.toAbsolutePath().getParent();
        if (companion == null || folder == null) {
            return;
        }
        try (Stream<Path> files = Files.list(folder)) {
            files.filter(file -> companion.matcher(file.getFileName().toString()).matches())
                    .sorted()
                    .forEach(file -> System.load(file.toString()));
        } catch (IOException | UncheckedIOException | UnsatisfiedLinkError e) {
            // The library then searches for them itself, and says so if it fails.
        }
    }

    @SuppressWarnings("restricted") // opening a CUDA library is this class's purpose
    SymbolLookup load(List<Candidate> candidates) {
        List<String> failures = new ArrayList<>();
        for (Candidate candidate : candidates) {
            String failure;
            boolean isPath = candidate.target().contains("/");
            if (isPath && !Files.exists(Path.of(candidate.target()))) {
                failure = "no such file";
            } else {
                try {
                    SymbolLookup lookup = SymbolLookup.libraryLookup(candidate.target(), Arena.global());
                    Optional<MemorySegment> probe = lookup.find(probeSymbol);
                    Optional<Path> file = isPath ? Optional.of(Path.of(candidate.target()).toAbsolutePath())
                            : mappedFile(candidate.target());
                    if (probe.isPresent() && file.isPresent()) {
                        loadCompanions(file.get());
                        // What the generated bindings' loaderLookup() sees: the same file, opened again
                        // by this class loader (the dynamic loader hands back the handle it has).
                        System.load(file.get().toString());
                        loadedFrom = candidate;
                        loadedFile = file.get();
                        return lookup;
                    }
                    failure = probe.isEmpty() ? "opened, but it exports no " + probeSymbol
                            : "opened, but /proc/self/maps does not say from which file, which System.load needs";
                } catch (IllegalCallerException e) {
                    throw nativeAccessDenied(e);
                } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
                    failure = e.getMessage();
                }
            }
            failures.add(candidate + " (" + failure + ")");
            if (candidate.explicit()) {
                throw new CudaRuntimeNotFoundException(description, failures, "The path given with -D"
                        + pathProperty + " must name " + soname + " or a folder holding it; fix it, or remove the"
                        + " property to search the usual places.");
            }
        }
        throw new CudaRuntimeNotFoundException(description, failures, "Install CUDA 13's " + soname
                + ", or point at it with -D" + pathProperty + "=/path/to/" + soname + " or CUDA_HOME=/path/to/cuda.");
    }
}
