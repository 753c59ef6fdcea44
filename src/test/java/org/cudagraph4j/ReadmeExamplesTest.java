package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every Java block of the README, and of each guide under {@code src/site/markdown/}, compiles against
 * the library and runs: to the end on a GPU host, and up to the first call that needs the driver
 * elsewhere, which must then be the named no-driver error. Each document's blocks are compiled
 * together, apart from the other documents'. Tagged {@code build}: it needs the JDK's compiler and
 * the checkout's documents.
 */
@Tag("build")
class ReadmeExamplesTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern CLASS_NAME = Pattern.compile("public final class (\\w+)");
    private static final Path GUIDES = Path.of("src/site/markdown");

    @Test
    void everyJavaBlockOfTheReadmeCompilesAndRunsAsFarAsThisMachineAllows(@TempDir Path dir) throws Exception {
        compileAndRun(Path.of("README.md"), dir);
    }

    /** The guides that hold Java blocks; none at all is a configuration error, which fails the test. */
    static Stream<Path> guidesWithJavaBlocks() throws IOException {
        try (Stream<Path> files = Files.list(GUIDES)) {
            List<Path> guides = files.filter(file -> file.getFileName().toString().endsWith(".md")).sorted().toList();
            List<Path> withBlocks = new ArrayList<>();
            for (Path guide : guides) {
                if (JAVA_BLOCK.matcher(Files.readString(guide)).find()) {
                    withBlocks.add(guide);
                }
            }
            return withBlocks.stream();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("guidesWithJavaBlocks")
    void everyJavaBlockOfTheGuidesCompilesAndRunsAsFarAsThisMachineAllows(Path guide, @TempDir Path dir)
            throws Exception {
        compileAndRun(guide, dir);
    }

    private static void compileAndRun(Path document, Path dir) throws Exception {
        List<Path> sources = new ArrayList<>();
        Matcher block = JAVA_BLOCK.matcher(Files.readString(document));
        while (block.find()) {
            Matcher name = CLASS_NAME.matcher(block.group(1));
            assertTrue(name.find(), "a Java block of " + document + " is not a complete class:\n" + block.group(1));
            Path source = dir.resolve(name.group(1) + ".java");
            assertFalse(Files.exists(source), document + " has two examples named " + name.group(1));
            sources.add(Files.writeString(source, block.group(1)));
        }
        assertFalse(sources.isEmpty(), document + " has Java blocks");

        Path library = Path.of(CudaLibrary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path classes = dir.resolve("classes");
        List<String> javac = new ArrayList<>(List.of("--release", "22", "-Xlint:all", "-Werror", "-cp",
                library.toString(), "-d", classes.toString()));
        sources.forEach(source -> javac.add(source.toString()));
        assertEquals(0, ToolProvider.findFirst("javac").orElseThrow().run(System.out, System.err,
                javac.toArray(String[]::new)), "the examples of " + document + " compile without warnings");
        // The kernel of your own (core-api.md): the test fatbin holds a saxpy with the examples' signature.
        try (InputStream kernels = TestData.class.getResourceAsStream("test_kernels.fatbin")) {
            Files.write(classes.resolve("my_kernels.cubin"), kernels.readAllBytes());
        }

        for (Path source : sources) {
            String example = source.getFileName().toString().replace(".java", "");
            Process process = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                    "--enable-native-access=ALL-UNNAMED", "-cp", library + File.pathSeparator + classes, example)
                    .redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes());
            int exit = process.waitFor();
            boolean noGpuHere = output.contains("no CUDA device 0: this machine has 0: ");
            assertTrue(exit == 0 || noGpuHere, document + ": " + example + " exited " + exit + ":\n" + output);
        }
    }
}
