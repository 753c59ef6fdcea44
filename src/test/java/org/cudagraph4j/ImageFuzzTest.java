package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Corrupted images (truncations, bit flips, header-field mutations: {@link ImageMutations}) of every
 * shipped cubin and PTX and of the gpu tests' fatbin, loaded through {@link CudaLibrary}, must end
 * in an exception, never in a crash. {@link ImageFuzz} runs in a child JVM; when the child dies (a
 * signal, a non-zero exit, or no output for {@link #STALL}), the mutation it last announced is
 * recorded as a crash and a new child carries on from the next one, so that one run finds every
 * crashing mutation.
 *
 * <p>{@value #COUNT_PROPERTY} sets the mutations per image (default 1000), {@value #SEED_PROPERTY}
 * the seed. On an H200 (sm_90) the driver takes the shipped compute_120 PTX without compiling it
 * (it reports no kernels), so the PTX mutations cost about as much as the cubins'. On sm_120 and
 * newer every PTX mutation that passes validation is JIT-compiled instead, which is far slower:
 * the count stays 1000 there too, and the time limit ({@link #LIMIT}) is what bounds the run.
 */
@GpuTest
class ImageFuzzTest {
    static final String COUNT_PROPERTY = "org.cudagraph4j.fuzz.count";
    static final String SEED_PROPERTY = "org.cudagraph4j.fuzz.seed";
    private static final Duration STALL = Duration.ofSeconds(30);
    private static final Duration LIMIT = Duration.ofMinutes(30);
    private static final String OUT_OF_TIME = "out of time";
    private static final int TAIL_LINES = 12;
    private static final Pattern MUTATION = Pattern.compile("MUTATION (\\S+) (\\d+): (.*)");
    private static final Pattern RESULT = Pattern.compile("RESULT (\\S+) (\\d+): (.*)");
    private static final Pattern SUMMARY = Pattern.compile("FUZZ (\\S+): .*");

    /** A mutation that killed the child. */
    private record Crash(String image, int index, String description, String death, List<String> tail) {
        @Override
        public String toString() {
            return image + " #" + index + " (" + death + "): " + description + "\n    last output:\n      "
                    + String.join("\n      ", tail);
        }
    }

    @Test
    @Tag("fault") // its children may abort on purpose; under a sanitizer they would also take an hour
    @LongRunning // minutes on an H200: the compute_120 PTX's mutations alone took 110 to 240 s
    void corruptedImagesNeverCrashTheProcess(TestReporter reporter) throws IOException, InterruptedException {
        int count = Integer.getInteger(COUNT_PROPERTY, 1000);
        long seed = Long.getLong(SEED_PROPERTY, 20_251_129L);
        List<String> images = ImageMutations.shippedImages();
        Map<String, Map<String, Integer>> outcomes = new LinkedHashMap<>();
        images.forEach(image -> outcomes.put(image, new LinkedHashMap<>()));
        List<Crash> crashes = new ArrayList<>();
        List<String> summaries = new ArrayList<>();
        boolean healthy = false;
        long deadline = System.nanoTime() + LIMIT.toNanos();

        // After a crash a child starts at the next mutation; the last child, maybe with no images left,
        // checks the device.
        int first = 0;
        int from = 0;
        while (true) {
            Path log = Files.createTempFile("image-fuzz", ".log");
            try {
                String death = runChild(seed, count, from, images.subList(first, images.size()), log, deadline);
                List<String> lines = Files.readAllLines(log);
                List<String> tail = lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size());
                if (OUT_OF_TIME.equals(death)) {
                    throw new AssertionError("the fuzz ran past its " + LIMIT.toMinutes() + "-minute limit; crashes so "
                            + "far: " + crashes + "\n  last output:\n    " + String.join("\n    ", tail));
                }
                String[] last = null;
                for (String line : lines) {
                    Matcher matcher;
                    if ((matcher = MUTATION.matcher(line)).matches()) {
                        last = new String[] {matcher.group(1), matcher.group(2), matcher.group(3)};
                    } else if ((matcher = RESULT.matcher(line)).matches()) {
                        outcomes.get(matcher.group(1)).merge(matcher.group(3), 1, Integer::sum);
                        last = null;
                    } else if (SUMMARY.matcher(line).matches()) {
                        summaries.add(line);
                    }
                    healthy |= line.equals("FUZZ HEALTHY");
                }
                if (death == null) {
                    break;
                }
                if (last == null) {
                    throw new AssertionError("the fuzz child died (" + death + ") outside any mutation; crashes so "
                            + "far: " + crashes + "\n  last output:\n    " + String.join("\n    ", tail));
                }
                int index = Integer.parseInt(last[1]);
                crashes.add(new Crash(last[0], index, last[2], death, List.copyOf(tail)));
                outcomes.get(last[0]).merge("crashed", 1, Integer::sum);
                first = images.indexOf(last[0]);
                from = index + 1;
                if (from == count) {
                    first++;
                    from = 0;
                }
            } finally {
                Files.delete(log);
            }
        }

        summaries.forEach(summary -> reporter.publishEntry("fuzz", summary));
        assertEquals(List.of(), crashes, crashes.size() + " mutations crashed the process:\n  "
                + String.join("\n  ", crashes.stream().map(Crash::toString).toList()));
        outcomes.forEach((image, counts) -> assertEquals(count,
                counts.values().stream().mapToInt(Integer::intValue).sum(), image + ": " + counts));
        assertTrue(healthy, "the device was not shown healthy after the fuzz");
    }

    /**
     * Runs ImageFuzz to the end; returns null for a clean exit, {@link #OUT_OF_TIME} past the
     * deadline, else how the child died.
     */
    private static String runChild(long seed, int count, int from, List<String> images, Path log, long deadline)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.add("--enable-native-access=ALL-UNNAMED");
        // A crash is expected here: keep its report out of the working directory, and no core dump.
        command.add("-XX:ErrorFile=" + Path.of(System.getProperty("java.io.tmpdir"), "image-fuzz-hs_err_%p.log"));
        command.add("-XX:-CreateCoredumpOnCrash");
        System.getProperties().stringPropertyNames().stream().filter(name -> name.startsWith("org.cudagraph4j."))
                .forEach(name -> command.add("-D" + name + "=" + System.getProperty(name)));
        command.addAll(List.of("-cp", ChildJvm.classPath(ImageFuzz.class), ImageFuzz.class.getName(),
                Long.toString(seed), Integer.toString(count), Integer.toString(from)));
        command.addAll(images);
        Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long lastSize = -1;
        long lastProgress = System.nanoTime();
        while (!child.waitFor(1, TimeUnit.SECONDS)) {
            long size = Files.size(log);
            long now = System.nanoTime();
            if (now > deadline) {
                child.destroyForcibly().waitFor();
                return OUT_OF_TIME;
            }
            if (size != lastSize) {
                lastSize = size;
                lastProgress = now;
            } else if (now - lastProgress > STALL.toNanos()) {
                child.destroyForcibly().waitFor();
                return "hung: no output for " + STALL.toSeconds() + " s";
            }
        }
        int exit = child.exitValue();
        return exit == 0 ? null : exit > 128 ? "killed by signal " + (exit - 128) + ", exit " + exit : "exit " + exit;
    }
}
