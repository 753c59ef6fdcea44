package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Dependencies between the library's packages point one way, down these levels:
 * {@code {cudart, nvrtc, driver, cublaslt, error, internal.image, internal.lifetime} ← internal ← root ←
 * {compile, blas} ← graph ← kernels ← {serving, llm}}. A package may use its own classes and those of any package on a lower
 * level, never one on its own level or above; the bottom level's packages therefore use no other
 * package of the library, and with levels in a total order no cycle is possible. The same check by
 * hand: {@code jdeps -verbose:package -filter:none target/classes}.
 *
 * <p>jdeps sees only what the class files name, so no class may load one of the library's classes
 * by name ({@code Class.forName}, {@code ClassLoader.loadClass}): such a dependency is invisible to
 * it, and can point any way.
 *
 * <p>Tagged {@code build}: it runs jdeps from the JDK, which the GPU bundle's runtime leaves out.
 */
@Tag("build")
class PackageLayeringTest {
    /**
     * Bottom first. Packages on one level are independent: none may use another. The bottom level
     * holds the generated bindings and the pure Java models, which use nothing of the library.
     */
    static final List<List<String>> LAYERS = List.of(
            List.of("org.cudagraph4j.cudart", "org.cudagraph4j.nvrtc", "org.cudagraph4j.driver",
                    "org.cudagraph4j.cublaslt", "org.cudagraph4j.error",
                    "org.cudagraph4j.internal.image", "org.cudagraph4j.internal.lifetime"),
            List.of("org.cudagraph4j.internal"), List.of("org.cudagraph4j"),
            List.of("org.cudagraph4j.compile", "org.cudagraph4j.blas"),
            List.of("org.cudagraph4j.graph"), List.of("org.cudagraph4j.kernels"),
            List.of("org.cudagraph4j.serving", "org.cudagraph4j.llm"));

    /** One line of {@code jdeps -verbose:class}: {@code    a.b.From -> c.d.To    where}. */
    private static final Pattern EDGE = Pattern.compile("^\\s+(org\\.cudagraph4j\\.[\\w.$]+)\\s+->\\s+(\\S+)\\s");

    /** A class-level dependency of the library on one of its own classes. */
    record Edge(String from, String to) {
        String fromPackage() {
            return packageOf(from);
        }

        String toPackage() {
            return packageOf(to);
        }
    }

    @Test
    void everyDependencyPointsDownTheLayers() throws Exception {
        List<Edge> edges = edges();

        assertTrue(edges.size() > 100, "jdeps reported " + edges.size() + " dependencies between the library's classes");
        assertTrue(edges.contains(new Edge("org.cudagraph4j.internal.Status", "org.cudagraph4j.cudart.cudart_h")),
                "the parser reads jdeps' lines");
        List<String> violations = violations(edges);
        assertTrue(violations.isEmpty(), () -> "dependencies must point down " + describeLayers() + ":\n  "
                + String.join("\n  ", violations));
    }

    @Test
    void anUpwardDependencyIsNamedWithItsClasses() {
        List<Edge> edges = List.of(
                new Edge("org.cudagraph4j.graph.CudaGraph", "org.cudagraph4j.CudaStream"),
                new Edge("org.cudagraph4j.CudaStream", "org.cudagraph4j.graph.StreamCapture"),
                new Edge("org.cudagraph4j.cudart.cudart_h", "org.cudagraph4j.internal.CudartLoader"),
                new Edge("org.cudagraph4j.internal.lifetime.Lifetime", "org.cudagraph4j.internal.Status"),
                new Edge("org.cudagraph4j.internal.lifetime.Lifetime", "org.cudagraph4j.internal.lifetime.LiveCounters"),
                new Edge("org.cudagraph4j.internal.image.ImageValidator", "org.cudagraph4j.internal.lifetime.Lifetime"),
                new Edge("org.cudagraph4j.internal.Libraries", "org.cudagraph4j.internal.image.ImageValidator"),
                new Edge("org.cudagraph4j.extra.Thing", "org.cudagraph4j.CudaStream"));

        assertEquals(List.of(
                "org.cudagraph4j -> org.cudagraph4j.graph: org.cudagraph4j.CudaStream uses"
                        + " org.cudagraph4j.graph.StreamCapture",
                "org.cudagraph4j.cudart -> org.cudagraph4j.internal: org.cudagraph4j.cudart.cudart_h uses"
                        + " org.cudagraph4j.internal.CudartLoader",
                "org.cudagraph4j.internal.lifetime -> org.cudagraph4j.internal:"
                        + " org.cudagraph4j.internal.lifetime.Lifetime uses org.cudagraph4j.internal.Status",
                "org.cudagraph4j.internal.image -> org.cudagraph4j.internal.lifetime (same level):"
                        + " org.cudagraph4j.internal.image.ImageValidator uses org.cudagraph4j.internal.lifetime.Lifetime",
                "org.cudagraph4j.extra is not in PackageLayeringTest.LAYERS: place it in the order"),
                violations(edges));
    }

    @Test
    void noClassLoadsALibraryClassByName() throws Exception {
        List<String> loaders = new ArrayList<>();
        Path classes = libraryClasses();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".class")).sorted().toList()) {
                if (loadsLibraryClassByName(Files.readAllBytes(file))) {
                    loaders.add(classes.relativize(file).toString());
                }
            }
        }
        assertTrue(loaders.isEmpty(), () -> "these classes load a class of the library by name, a dependency jdeps "
                + "cannot see: name the class in code instead\n  " + String.join("\n  ", loaders));
    }

    @Test
    void aLoadByNameIsFound() throws Exception {
        assertTrue(loadsLibraryClassByName(classBytes(LoadsByName.class)), "Class.forName of a library class");
        assertFalse(loadsLibraryClassByName(classBytes(PackageLayeringTest.class)), "no load by name");
    }

    /** Loads a class of the library the way no library class may. */
    static final class LoadsByName {
        static Class<?> load() throws ClassNotFoundException {
            return Class.forName("org.cudagraph4j.CudaStream");
        }
    }

    /**
     * Whether a class file calls {@code Class.forName} or {@code ClassLoader.loadClass} and holds a
     * string naming something in {@code org.cudagraph4j}: what a load by name of a library class
     * compiles to, whether the name is a literal or a constant (javac inlines those).
     */
    static boolean loadsLibraryClassByName(byte[] classFile) {
        ByteBuffer in = ByteBuffer.wrap(classFile);
        if (in.getInt() != 0xCAFEBABE) {
            throw new IllegalArgumentException("not a class file");
        }
        in.getInt(); // minor and major version
        int count = Short.toUnsignedInt(in.getShort());
        String[] utf8 = new String[count];
        int[] classNames = new int[count];
        int[] stringValues = new int[count];
        int[][] memberRefs = new int[count][];
        int[][] nameAndTypes = new int[count][];
        for (int i = 1; i < count; i++) {
            int tag = Byte.toUnsignedInt(in.get());
            switch (tag) {
                case 1 -> {
                    byte[] bytes = new byte[Short.toUnsignedInt(in.getShort())];
                    in.get(bytes);
                    utf8[i] = new String(bytes, StandardCharsets.UTF_8); // modified UTF-8; names are ASCII
                }
                case 7 -> classNames[i] = Short.toUnsignedInt(in.getShort());
                case 8 -> stringValues[i] = Short.toUnsignedInt(in.getShort());
                case 10, 11 -> memberRefs[i] = new int[] {Short.toUnsignedInt(in.getShort()),
                        Short.toUnsignedInt(in.getShort())};
                case 12 -> nameAndTypes[i] = new int[] {Short.toUnsignedInt(in.getShort()),
                        Short.toUnsignedInt(in.getShort())};
                case 3, 4, 9, 17, 18 -> in.getInt();
                case 5, 6 -> {
                    in.getLong();
                    i++; // eight-byte constants take two slots
                }
                case 15 -> {
                    in.get();
                    in.getShort();
                }
                case 16, 19, 20 -> in.getShort();
                default -> throw new IllegalArgumentException("constant pool tag " + tag);
            }
        }
        boolean loads = false;
        boolean namesLibrary = false;
        for (int i = 1; i < count; i++) {
            if (memberRefs[i] != null) {
                String owner = utf8[classNames[memberRefs[i][0]]];
                String method = utf8[nameAndTypes[memberRefs[i][1]][0]];
                loads |= owner.equals("java/lang/Class") && method.equals("forName")
                        || owner.equals("java/lang/ClassLoader") && method.equals("loadClass");
            }
            if (stringValues[i] != 0) {
                namesLibrary |= utf8[stringValues[i]].startsWith("org.cudagraph4j.");
            }
        }
        return loads && namesLibrary;
    }

    private static byte[] classBytes(Class<?> type) throws Exception {
        try (InputStream in = type.getResourceAsStream(type.getName().substring(type.getPackageName().length() + 1)
                + ".class")) {
            return in.readAllBytes();
        }
    }

    /** What breaks the order: each edge up or across a level, and each package the order does not place. */
    static List<String> violations(List<Edge> edges) {
        List<String> violations = new ArrayList<>();
        Set<String> unplaced = new TreeSet<>();
        for (Edge edge : edges) {
            int from = level(edge.fromPackage());
            int to = level(edge.toPackage());
            if (from < 0 || to < 0) {
                unplaced.add(from < 0 ? edge.fromPackage() : edge.toPackage());
            } else if (to > from || (to == from && !edge.fromPackage().equals(edge.toPackage()))) {
                violations.add(edge.fromPackage() + " -> " + edge.toPackage() + (to == from ? " (same level)" : "")
                        + ": " + edge.from() + " uses " + edge.to());
            }
        }
        unplaced.forEach(pkg -> violations.add(pkg + " is not in PackageLayeringTest.LAYERS: place it in the order"));
        return violations;
    }

    /** The level of a package, bottom 0, or -1 where the order does not place it. */
    static int level(String pkg) {
        for (int i = 0; i < LAYERS.size(); i++) {
            if (LAYERS.get(i).contains(pkg)) {
                return i;
            }
        }
        return -1;
    }

    /** The levels as a failure message shows them, bottom first. */
    static String describeLayers() {
        List<String> levels = new ArrayList<>();
        for (List<String> level : LAYERS) {
            levels.add(level.size() == 1 ? level.getFirst() : "{" + String.join(", ", level) + "}");
        }
        return String.join(" <- ", levels);
    }

    /** Every dependency of a library class on a library class, from jdeps. */
    static List<Edge> edges() throws Exception {
        ToolProvider jdeps = ToolProvider.findFirst("jdeps")
                .orElseThrow(() -> new AssertionError("this runtime has no jdeps (module jdk.jdeps)"));
        Path classes = libraryClasses();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = jdeps.run(new PrintWriter(out), new PrintWriter(err), "-verbose:class", "-filter:none",
                classes.toString());
        assertEquals(0, status, "jdeps failed: " + err);
        List<Edge> edges = new ArrayList<>();
        for (String line : out.toString().split("\n")) {
            Matcher matcher = EDGE.matcher(line);
            if (matcher.find() && matcher.group(2).startsWith("org.cudagraph4j.")) {
                edges.add(new Edge(matcher.group(1), matcher.group(2)));
            }
        }
        return edges;
    }

    /** The library's compiled classes, not the tests'. */
    static Path libraryClasses() throws Exception {
        return Path.of(CudaLibrary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** The package of a class name as jdeps prints it; nested classes carry a {@code $}. */
    static String packageOf(String className) {
        return className.substring(0, className.lastIndexOf('.'));
    }
}
