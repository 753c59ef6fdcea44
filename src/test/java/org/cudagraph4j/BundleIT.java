package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checks the GPU bundle that {@code mvn -Pgpu-bundle verify} builds: its contents, its size, and
 * that its own runtime runs the CPU tests through {@code bin/run-tests}. Tagged {@code build}: it
 * needs the build tree, so the bundle itself leaves it out.
 */
@Tag("build")
class BundleIT {
    /**
     * Half of the 64 MiB that may travel to the GPU host with the working tree, with nothing in the
     * bundle twice (the benchmarks' jar takes the library from lib/) and the runtime's native
     * symbols stripped, packed with xz.
     */
    private static final long MAX_BYTES = 32L << 20;

    private final Path tarball = Path.of(System.getProperty("bundle.tarball", "target/cudagraph4j-gpu-bundle.tar.xz"));
    private final Path bundle = Path.of(System.getProperty("bundle.dir", "target/cudagraph4j-gpu-bundle/cudagraph4j-gpu-bundle"));

    @Test
    void tarballIsUnderTheSizeLimit() throws IOException {
        long size = Files.size(tarball);
        assertTrue(size <= MAX_BYTES, tarball + " is " + String.format("%.1f", size / 1048576.0) + " MiB; the limit is "
                + (MAX_BYTES >> 20) + " MiB");
    }

    @Test
    void containsRuntimeLibraryTestsLauncherAndScripts() throws Exception {
        List<String> entries = run(List.of("tar", "-tJf", tarball.toString()));

        for (String expected : List.of("cudagraph4j-gpu-bundle/runtime/bin/java",
                "cudagraph4j-gpu-bundle/bin/run-tests", "cudagraph4j-gpu-bundle/lib/logging.properties",
                "cudagraph4j-gpu-bundle/bin/run-benchmarks",
                "cudagraph4j-gpu-bundle/bin/soak", "cudagraph4j-gpu-bundle/bin/profile-benchmark",
                "cudagraph4j-gpu-bundle/benchmarks/benchmarks.jar",
                "cudagraph4j-gpu-bundle/benchmarks/benchmarks-tests.jar",
                "cudagraph4j-gpu-bundle/benchmarks/native/launch_overhead.cu",
                "cudagraph4j-gpu-bundle/benchmarks/native/build.sh",
                "cudagraph4j-gpu-bundle/benchmarks/native/skinny_test.cu",
                "cudagraph4j-gpu-bundle/benchmarks/native/graph_timing.cuh",
                "cudagraph4j-gpu-bundle/benchmarks/native/mlp_torch.py",
                "cudagraph4j-gpu-bundle/benchmarks/native/torch_graphs.py",
                "cudagraph4j-gpu-bundle/benchmarks/native/mlp_cublaslt.cu",
                "cudagraph4j-gpu-bundle/bin/run-serving-benchmark", "cudagraph4j-gpu-bundle/bin/run-multi-gpu",
                "cudagraph4j-gpu-bundle/benchmarks/server/torch_server.py",
                "cudagraph4j-gpu-bundle/benchmarks/wrk/infer.lua")) {
            assertTrue(entries.contains(expected), "missing " + expected);
        }
        for (String jar : List.of("lib/cudagraph4j-", "lib/junit-platform-console-standalone-")) {
            assertTrue(entries.stream().anyMatch(e -> e.startsWith("cudagraph4j-gpu-bundle/" + jar)), "missing " + jar);
        }
        assertTrue(entries.stream().anyMatch(e -> e.startsWith("cudagraph4j-gpu-bundle/lib/") && e.endsWith("-tests.jar")),
                "missing the tests jar");
        // bin/soak runs the soak from the tests jar, though its sources are in src/tools/java.
        try (Stream<Path> lib = Files.list(bundle.resolve("lib"))) {
            Path tests = lib.filter(p -> p.getFileName().toString().endsWith("-tests.jar")).findFirst().orElseThrow();
            try (JarFile jar = new JarFile(tests.toFile())) {
                for (String soak : List.of("org/cudagraph4j/Soak.class", "org/cudagraph4j/ServingSoak.class")) {
                    assertTrue(jar.getEntry(soak) != null, tests.getFileName() + " is missing " + soak);
                }
            }
        }
        // bin/run-tests --benchmarks runs the benchmarks' gpu tests, which call cuBLAS through JavaCPP.
        try (JarFile jar = new JarFile(bundle.resolve("benchmarks/benchmarks.jar").toFile())) {
            for (String javacpp : List.of("org/bytedeco/cuda/linux-x86_64/libjnicublas.so",
                    "org/bytedeco/cuda/global/cublas.class", "org/bytedeco/cuda/presets/cublas.class",
                    "org/bytedeco/cuda/linux-x86_64/libjnicudart.so", "org/bytedeco/cuda/global/cudart.class")) {
                assertTrue(jar.getEntry(javacpp) != null, "benchmarks.jar is missing " + javacpp);
            }
        }
        try (JarFile jar = new JarFile(bundle.resolve("benchmarks/benchmarks-tests.jar").toFile())) {
            String interop = "org/cudagraph4j/benchmarks/interop/JavaCppCublasGraphTest.class";
            assertTrue(jar.getEntry(interop) != null, "benchmarks-tests.jar is missing " + interop);
        }
        assertTrue(Files.isExecutable(bundle.resolve("bin/run-tests")));
        assertTrue(Files.isExecutable(bundle.resolve("bin/soak")));
        assertTrue(Files.isExecutable(bundle.resolve("bin/run-serving-benchmark")));
        assertTrue(Files.isExecutable(bundle.resolve("bin/profile-benchmark")));
        assertTrue(Files.isExecutable(bundle.resolve("bin/run-multi-gpu")));
    }

    @Test
    void runtimeHasOnlyTheModulesItNeeds() throws Exception {
        List<String> modules = run(List.of(bundle.resolve("runtime/bin/java").toString(), "--list-modules"));

        List<String> names = modules.stream().map(m -> m.split("@")[0]).sorted().toList();
        assertEquals(List.of("java.base", "java.logging", "java.management", "java.net.http", "java.scripting",
                "java.xml", "jdk.jfr", "jdk.management", "jdk.management.jfr", "jdk.unsupported", "jdk.zipfs"), names);
    }

    @Test
    void runTestsRunsTheSuiteOnTheBundledRuntime() throws Exception {
        List<String> output = run(List.of(bundle.resolve("bin/run-tests").toString(), "--exclude-tag", "gpu",
                "--details=summary"));

        assertTrue(output.stream().anyMatch(l -> l.matches(".*\\b0 tests failed.*")), String.join("\n", output));
        assertTrue(output.stream().anyMatch(l -> l.matches(".*\\b[1-9]\\d* tests successful.*")),
                String.join("\n", output));
        // What passing tests log stays out of the output (lib/logging.properties).
        assertEquals(List.of(), output.stream().filter(l -> l.matches("(SEVERE|WARNING|INFO): .*")).toList(),
                String.join("\n", output));
    }

    /**
     * The validator's mutation fuzz is a CPU test tagged long: left out by default, with a line that
     * says so, run with {@code --long}. The other tests of its class run either way.
     */
    @Test
    void runTestsLeavesOutTheLongTestsUnlessAskedForThem() throws Exception {
        List<String> command = new ArrayList<>(List.of(bundle.resolve("bin/run-tests").toString(), "--exclude-tag",
                "gpu", "--include-classname", ".*\\.ImageValidatorTest", "--disable-ansi-colors", "--details=tree"));
        List<String> byDefault = run(command);
        String output = String.join("\n", byDefault);
        assertTrue(byDefault.getFirst().startsWith("run-tests: leaving out the tests tagged long"), output);
        assertTrue(output.contains("everyShippedImagePasses()"), output);
        assertFalse(output.contains("mutationsAreRejectedCleanlyOrAccepted()"), output);

        command.add(1, "--long");
        command.addAll(List.of("--include-methodname", ".*mutationsAreRejectedCleanlyOrAccepted.*"));
        output = String.join("\n", run(command));
        assertTrue(output.contains("mutationsAreRejectedCleanlyOrAccepted()"), output);
        assertFalse(output.contains("leaving out"), output);
    }

    @Test
    void runBenchmarksStopsWithOneClearLineWithoutAGpu(@TempDir Path out) throws Exception {
        Assumptions.assumeFalse(hasGpu(), "this machine has a GPU: run-benchmarks would run the benchmarks");
        Process process = new ProcessBuilder(bundle.resolve("bin/run-benchmarks").toString(), "--out", out.toString())
                .redirectErrorStream(true).start();
        List<String> lines = new String(process.getInputStream().readAllBytes()).lines().toList();
        assertTrue(process.waitFor(2, TimeUnit.MINUTES));
        assertEquals(2, process.exitValue(), String.join("\n", lines));
        assertEquals(1, lines.size(), String.join("\n", lines));
        assertEquals("run-benchmarks: needs a CUDA GPU: " + Cuda.unavailableReason().orElseThrow(), lines.get(0));
    }

    @Test
    void runMultiGpuStopsWithOneClearLineWithoutAGpu(@TempDir Path out) throws Exception {
        Assumptions.assumeFalse(hasGpu(), "this machine has a GPU: run-multi-gpu would count them");
        Process process = new ProcessBuilder(bundle.resolve("bin/run-multi-gpu").toString(), "--out", out.toString())
                .redirectErrorStream(true).start();
        List<String> lines = new String(process.getInputStream().readAllBytes()).lines().toList();
        assertTrue(process.waitFor(2, TimeUnit.MINUTES));
        assertEquals(2, process.exitValue(), String.join("\n", lines));
        assertEquals(1, lines.size(), String.join("\n", lines));
        assertEquals("run-multi-gpu: needs a CUDA GPU: " + Cuda.unavailableReason().orElseThrow(), lines.get(0));
        try (Stream<Path> written = Files.list(out)) {
            assertEquals(0, written.count(), "nothing written without the GPUs");
        }
    }

    @Test
    void runTestsBenchmarksFindsTheBenchmarksGpuTestsAndFailsThemWithoutAGpu(@TempDir Path reports) throws Exception {
        Assumptions.assumeFalse(hasGpu(), "this machine has a GPU: the benchmarks' gpu tests would run");
        ProcessBuilder builder = new ProcessBuilder(bundle.resolve("bin/run-tests").toString(), "--benchmarks",
                "--disable-ansi-colors", "--details=tree").redirectErrorStream(true);
        builder.environment().put("REPORTS_DIR", reports.toString());
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(2, TimeUnit.MINUTES));
        assertEquals(1, process.exitValue(), output);
        assertTrue(output.contains("JavaCppCublasGraphTest") && output.contains(
                "gpu test JavaCppCublasGraphTest needs a CUDA device: " + Cuda.unavailableReason().orElseThrow()), output);
        assertTrue(output.lines().anyMatch(l -> l.matches(".*\\b[1-9]\\d* tests found.*")), output);
        try (Stream<Path> written = Files.list(reports)) {
            assertTrue(written.anyMatch(p -> p.getFileName().toString().endsWith(".xml")), "no JUnit report");
        }
    }

    @Test
    void runTestsRefusesToShardTheBenchmarksTests() throws Exception {
        Process process = new ProcessBuilder(bundle.resolve("bin/run-tests").toString(), "--benchmarks", "--shard",
                "1/2").redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(1, TimeUnit.MINUTES));
        assertEquals(2, process.exitValue(), output);
        assertTrue(output.startsWith("run-tests: --shard splits the library's gpu test classes; leave it out with "
                + "--benchmarks\nusage: run-tests [--device N]"), output);
    }

    @Test
    void runTestsShardsTheGpuTestClassesAndRefusesABadShard() throws Exception {
        Path tests;
        try (Stream<Path> jars = Files.list(bundle.resolve("lib"))) {
            tests = jars.filter(jar -> jar.toString().endsWith("-tests.jar")).findFirst().orElseThrow();
        }
        Path launcher;
        try (Stream<Path> jars = Files.list(bundle.resolve("lib"))) {
            launcher = jars.filter(jar -> jar.getFileName().toString().startsWith("junit-platform-console"))
                    .findFirst().orElseThrow();
        }
        String classpath = tests + ":" + launcher;
        List<String> first = run(List.of(bundle.resolve("runtime/bin/java").toString(), "-cp", classpath,
                "org.cudagraph4j.TestShards", "1", "2"));
        List<String> second = run(List.of(bundle.resolve("runtime/bin/java").toString(), "-cp", classpath,
                "org.cudagraph4j.TestShards", "2", "2"));
        List<String> union = new java.util.ArrayList<>(first);
        union.addAll(second);
        assertEquals(TestShards.gpuTestClasses(), union.stream().sorted().toList(),
                "two shards of the bundle's tests jar hold every gpu test class once");

        Process process = new ProcessBuilder(bundle.resolve("bin/run-tests").toString(), "--shard", "3/2")
                .redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(1, TimeUnit.MINUTES));
        assertEquals(2, process.exitValue(), output);
        assertTrue(output.contains("usage: TestShards I N"), output);
    }

    @Test
    void runTestsRejectsAnUnknownSanitizerToolWithTheUsage() throws Exception {
        Process process = new ProcessBuilder(bundle.resolve("bin/run-tests").toString(), "--sanitize", "bogus")
                .redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(1, TimeUnit.MINUTES));
        assertEquals(2, process.exitValue(), output);
        assertTrue(output.contains("usage: run-tests [--device N] [--sanitize memcheck|racecheck|synccheck|initcheck]"),
                output);
    }

    @Test
    void runTestsRejectsADeviceThatIsNoOrdinalWithTheUsage() throws Exception {
        Process process = new ProcessBuilder(bundle.resolve("bin/run-tests").toString(), "--device", "gpu1")
                .redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(1, TimeUnit.MINUTES));
        assertEquals(2, process.exitValue(), output);
        assertTrue(output.startsWith("run-tests: --device needs a device ordinal\nusage: run-tests [--device N]"), output);
    }

    private static boolean hasGpu() {
        return Cuda.isAvailable();
    }

    private static List<String> run(List<String> command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        List<String> lines = new String(process.getInputStream().readAllBytes()).lines().toList();
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), "timed out: " + command);
        assertEquals(0, process.exitValue(), command + " failed:\n" + String.join("\n", lines));
        return lines;
    }
}
