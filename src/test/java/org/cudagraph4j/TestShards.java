package org.cudagraph4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * Splits the gpu-tagged test classes into shards for {@code bin/run-tests --shard I/N}, so that a
 * sanitizer slow enough to outlast one run (racecheck) still covers every gpu test, shard by shard.
 * Classes are sorted by name and dealt round-robin, so every class is in exactly one shard and the
 * shards stay the same from run to run. Prints one class name per line.
 */
public final class TestShards {
    private TestShards() {}

    /**
     * Prints shard {@code I} of {@code N}.
     *
     * @param args {@code I N}, with 1 ≤ I ≤ N
     */
    public static void main(String[] args) {
        int[] shard = parse(args);
        if (shard == null) {
            System.err.println("usage: TestShards I N (1 <= I <= N), e.g. TestShards 2 4");
            System.exit(2);
        }
        shard(gpuTestClasses(), shard[0], shard[1]).forEach(System.out::println);
    }

    static int[] parse(String[] args) {
        if (args.length != 2 || !args[0].matches("[0-9]{1,4}") || !args[1].matches("[0-9]{1,4}")) {
            return null;
        }
        int index = Integer.parseInt(args[0]);
        int count = Integer.parseInt(args[1]);
        return index >= 1 && index <= count ? new int[] {index, count} : null;
    }

    /** Shard {@code index} (from 1) of {@code count}: every {@code count}-th class of the sorted list. */
    static List<String> shard(List<String> classes, int index, int count) {
        List<String> shard = new ArrayList<>();
        for (int i = index - 1; i < classes.size(); i += count) {
            shard.add(classes.get(i));
        }
        return shard;
    }

    /** The top-level test classes tagged {@code gpu} (directly or through {@link GpuTest}), sorted. */
    static List<String> gpuTestClasses() {
        List<String> gpu = new ArrayList<>();
        for (String name : testClassNames()) {
            try {
                Class<?> type = Class.forName(name, false, TestShards.class.getClassLoader());
                // GpuTest itself is tagged gpu, and holds no tests.
                boolean tagged = !type.isAnnotation() && AnnotationSupport.findRepeatableAnnotations(type, Tag.class)
                        .stream().anyMatch(tag -> tag.value().equals("gpu"));
                if (tagged) {
                    gpu.add(name);
                }
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException("cannot read test class " + name, e);
            }
        }
        return gpu.stream().sorted().toList();
    }

    private static List<String> testClassNames() {
        try {
            Path location = Path.of(TestShards.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            List<String> names;
            if (Files.isDirectory(location)) {
                try (Stream<Path> files = Files.walk(location)) {
                    names = files.map(file -> location.relativize(file).toString().replace('\\', '/')).toList();
                }
            } else {
                try (JarFile jar = new JarFile(location.toFile())) {
                    names = jar.stream().map(entry -> entry.getName()).toList();
                }
            }
            return names.stream().filter(name -> name.endsWith("Test.class") && !name.contains("$"))
                    .map(name -> name.substring(0, name.length() - ".class".length()).replace('/', '.'))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
