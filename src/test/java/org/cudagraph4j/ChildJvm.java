package org.cudagraph4j;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Runs a main class in a child JVM on this JVM's runtime and class path, for what must not kill the runner. */
public final class ChildJvm {
    /** How a child ended: its exit code and everything it printed (stdout and stderr together). */
    public record Result(int exitCode, String output) {}

    private ChildJvm() {}

    /**
     * The library's and the test classes' locations: a JUnit console launcher started with
     * {@code -jar} has only itself on {@code java.class.path}.
     */
    public static String classPath(Class<?> mainClass) {
        return Stream.of(CudaLibrary.class, mainClass)
                .map(type -> type.getProtectionDomain().getCodeSource().getLocation())
                .map(location -> {
                    try {
                        return Path.of(location.toURI()).toString();
                    } catch (URISyntaxException e) {
                        throw new IllegalStateException(location.toString(), e);
                    }
                })
                .distinct()
                .collect(Collectors.joining(File.pathSeparator));
    }

    /**
     * Runs {@code mainClass} with {@code arguments}; {@code jvmOptions} come first, then the class
     * path. The child tests this JVM's {@link TestData#device()}. Waits at most {@code timeoutSeconds}, then kills the child and fails.
     */
    public static Result run(List<String> jvmOptions, Class<?> mainClass, List<String> arguments, long timeoutSeconds)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        String testDevice = System.getProperty("org.cudagraph4j.test.device");
        if (testDevice != null) {
            command.add("-Dorg.cudagraph4j.test.device=" + testDevice); // the child tests the same device
        }
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(classPath(mainClass));
        command.add(mainClass.getName());
        command.addAll(arguments);
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        // Read on another thread: a child that fills the pipe would otherwise never exit.
        StringBuilder output = new StringBuilder();
        Thread reader = Thread.ofPlatform().start(() -> {
            try {
                output.append(new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                output.append("[reading the child's output failed: ").append(e).append(']');
            }
        });
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            reader.join();
            throw new AssertionError("child JVM " + mainClass.getSimpleName() + " ran past " + timeoutSeconds
                    + " s; output:\n" + output);
        }
        reader.join();
        return new Result(process.exitValue(), output.toString());
    }
}
