package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.spi.ToolProvider;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An application in a named module loads a cubin from its own, unopened package: compiled here
 * and run on the module path, as a modular application would be. Tagged {@code build}: it needs
 * the compiler and the build's module folder, which the GPU bundle does not ship.
 */
@Tag("build")
class NamedModuleResourceTest {
    private static final String MAIN = """
            package app;

            import java.lang.invoke.MethodHandles;
            import java.util.function.Supplier;
            import org.cudagraph4j.CudaLibrary;

            public final class Main {
                public static void main(String[] args) {
                    report("lookup", () -> CudaLibrary.loadResource(MethodHandles.lookup(), "kernels.fatbin"));
                    report("class", () -> CudaLibrary.loadResource(Main.class, "kernels.fatbin"));
                }

                private static void report(String how, Supplier<CudaLibrary> load) {
                    try (CudaLibrary library = load.get()) {
                        System.out.println(how + ": loaded");
                    } catch (RuntimeException e) {
                        System.out.println(how + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
                    }
                }
            }
            """;

    @Test
    void aNamedModuleReadsItsOwnEncapsulatedCubinThroughItsLookup(@TempDir Path dir) throws Exception {
        Path library = Path.of(CudaLibrary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path source = dir.resolve("src");
        Files.createDirectories(source.resolve("app"));
        Files.writeString(source.resolve("module-info.java"), "module app { requires org.cudagraph4j; }");
        Files.writeString(source.resolve("app/Main.java"), MAIN);
        Path classes = dir.resolve("classes");
        int compiled = ToolProvider.findFirst("javac").orElseThrow().run(System.out, System.err, "--module-path", library.toString(),
                "-d", classes.toString(), source.resolve("module-info.java").toString(),
                source.resolve("app/Main.java").toString());
        assertEquals(0, compiled, "the test application compiles");
        try (InputStream fatbin = TestData.class.getResourceAsStream("test_kernels.fatbin")) {
            Files.write(classes.resolve("app/kernels.fatbin"), fatbin.readAllBytes());
        }

        Process process = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=org.cudagraph4j", "--module-path", library + java.io.File.pathSeparator + classes,
                "--module", "app/app.Main").redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS));

        List<String> lines = output.lines().filter(line -> line.startsWith("lookup:") || line.startsWith("class:"))
                .toList();
        assertEquals(2, lines.size(), output);
        // Read through the lookup, the image reaches the runtime: it loads on a GPU host, and fails
        // only for want of a driver elsewhere, never for want of the resource.
        assertFalse(lines.get(0).contains("no resource"), output);
        assertTrue(lines.get(0).equals("lookup: loaded") || lines.get(0).startsWith("lookup: Cuda"), output);
        assertEquals("class: IllegalArgumentException: no resource kernels.fatbin next to app.Main (in a named module,"
                + " pass MethodHandles.lookup() instead of a class, or open its package)", lines.get(1), output);
    }
}
