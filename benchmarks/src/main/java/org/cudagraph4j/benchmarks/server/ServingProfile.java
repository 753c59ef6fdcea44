package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.cudagraph4j.benchmarks.Cli;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Where one unloaded request's microseconds go in the Java server: the server's flight recording
 * ({@code --flight-recording}) read over the windows of {@link HttpLatency}'s kept rounds against
 * it, one table per encoding. Each step is the median over the window's requests: the handler's
 * own steps ({@code org.cudagraph4j.server.Infer}), inside the engine the queue wait and the batch
 * on its lane ({@code org.cudagraph4j.serving.QueueWait}, {@code .Batch}), and what lies outside
 * the handler, the client's median less the handler's: the HTTP stack on both sides and the
 * loopback.
 *
 * <pre>
 *   ServingProfile --recording server.jfr --latency latency.json [--target java] [--out profile.md]
 * </pre>
 */
@Command(name = "ServingProfile", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Where an unloaded request's time goes in the Java server, from its flight recording.")
public final class ServingProfile implements Callable<Integer> {
    @Option(names = "--recording", required = true, description = "the server's flight recording")
    Path recording;

    @Option(names = "--latency", required = true, description = "HttpLatency's --json output")
    Path latency;

    @Option(names = "--target", description = "the Java server's name in it (default: ${DEFAULT-VALUE})")
    String target = "java";

    @Option(names = "--out", description = "write the Markdown there, as well as to the standard output")
    Path out;

    public static void main(String[] args) {
        System.exit(Cli.execute(new ServingProfile(), args));
    }

    @Override
    public Integer call() throws IOException {
        JsonNode points = new ObjectMapper().readTree(latency.toFile()).path("points");
        List<RecordedEvent> events = RecordingFile.readAllEvents(recording);
        StringBuilder text = new StringBuilder("Where an unloaded request's time goes in the Java server: medians over "
                + "the requests of the latency rounds (one keep-alive connection, closed loop, one row), from the "
                + "server's flight recording.\n");
        boolean any = false;
        for (JsonNode point : points) {
            if (!point.path("target").asText().equals(target)) {
                continue;
            }
            List<Instant[]> windows = new ArrayList<>();
            for (JsonNode window : point.path("windowsMillis")) {
                windows.add(new Instant[] {Instant.ofEpochMilli(window.get(0).asLong()),
                        Instant.ofEpochMilli(window.get(1).asLong())});
            }
            boolean binary = point.path("encoding").asText().equals("binary");
            Map<String, List<Double>> steps = new LinkedHashMap<>();
            for (String step : List.of("read", "parse", "engine", "queue", "batch", "write")) {
                steps.put(step, new ArrayList<>());
            }
            List<Double> handler = new ArrayList<>();
            for (RecordedEvent event : events) {
                if (!inside(event.getStartTime(), windows)) {
                    continue;
                }
                double micros = event.getDuration().toNanos() / 1e3;
                switch (event.getEventType().getName()) {
                    case "org.cudagraph4j.server.Infer" -> {
                        if (event.getBoolean("binary") != binary) {
                            continue;
                        }
                        steps.get("read").add(event.getLong("readNanos") / 1e3);
                        steps.get("parse").add(event.getLong("parseNanos") / 1e3);
                        steps.get("engine").add(event.getLong("engineNanos") / 1e3);
                        steps.get("write").add(event.getLong("writeNanos") / 1e3);
                        handler.add(micros);
                    }
                    case "org.cudagraph4j.serving.QueueWait" -> steps.get("queue").add(micros);
                    case "org.cudagraph4j.serving.Batch" -> steps.get("batch").add(micros);
                    default -> { }
                }
            }
            if (handler.isEmpty()) {
                continue;
            }
            any = true;
            double client = point.path("p50Micros").asDouble();
            double inHandler = median(handler);
            double engine = median(steps.get("engine"));
            double queue = median(steps.get("queue"));
            double batch = median(steps.get("batch"));
            text.append(String.format(Locale.ROOT, "%n%s, %d requests recorded%n%n| step | µs (median) |%n|---|---|%n",
                    binary ? "Binary tensor data" : "JSON", handler.size()));
            row(text, "the client's round trip (its p50)", client);
            row(text, "outside the handler (difference of the medians): HTTP on both sides, the loopback", client - inHandler);
            row(text, "the handler, all of it", inHandler);
            row(text, "  reading the body", median(steps.get("read")));
            row(text, "  parsing it", median(steps.get("parse")));
            row(text, "  the engine, from submission until the answer is in the response", engine);
            row(text, "    queue wait (submission until a lane takes the request)", queue);
            row(text, "    the batch on its lane (copy in, graph launch, copy out, sync)", batch);
            row(text, "    the rest (difference of the medians): staging copies, completing the future", engine - queue - batch);
            row(text, "  writing the response" + (binary ? "" : " (serializing it included)"),
                    median(steps.get("write")));
        }
        if (!any) {
            System.err.println("ServingProfile: the recording holds no request of " + target
                    + " inside the latency rounds' windows");
            return 1;
        }
        System.out.print(text);
        if (out != null) {
            Files.writeString(out, text);
        }
        return 0;
    }

    private static boolean inside(Instant time, List<Instant[]> windows) {
        return windows.stream().anyMatch(w -> !time.isBefore(w[0]) && !time.isAfter(w[1]));
    }

    private static void row(StringBuilder text, String step, double micros) {
        text.append(String.format(Locale.ROOT, "| %s | %.1f |%n", step, micros));
    }

    private static double median(List<Double> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
