package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.cudagraph4j.benchmarks.Cli;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Each GPU's share of a running Java server's work (does an engine over several GPUs use all of
 * them?). It reads {@code GET /v2/models/{name}/metrics} (see {@link InferenceServer}) and
 * prints, per GPU, the batches and request rows it has run since the server started, with their
 * shares of the whole.
 *
 * <pre>
 *   DeviceShares --url http://127.0.0.1:8000 [--model mlp] [--json shares.json]
 * </pre>
 * Exits 0 when every GPU of the engine has run batches, 1 when one has run none, and 2 when the
 * server cannot be asked.
 */
@Command(name = "DeviceShares", mixinStandardHelpOptions = true,
        description = "Each GPU's share of a running Java server's batches and rows, from its metrics.")
public final class DeviceShares implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One GPU's work.
     *
     * @param device its ordinal
     * @param batches batches it ran
     * @param rows request rows it served
     * @param batchShare its batches over all batches (0 when there were none)
     * @param rowShare its rows over all rows (0 when there were none)
     */
    public record Share(int device, long batches, long rows, double batchShare, double rowShare) {}

    /**
     * A server's shares.
     *
     * @param url the server's base URL
     * @param model the model's name
     * @param shares one per GPU of the engine, by ordinal
     * @param everyDeviceWorked whether every GPU ran at least one batch
     */
    public record Result(String url, String model, List<Share> shares, boolean everyDeviceWorked) {}

    private DeviceShares() {}

    /**
     * Asks a server for its engine's metrics.
     *
     * @param base the server's base URL ({@code http://127.0.0.1:8000})
     * @param model the model's name
     * @return the shares
     * @throws IOException if the server does not answer with metrics
     * @throws InterruptedException if interrupted while waiting
     */
    public static Result read(URI base, String model) throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        try {
            URI url = base.resolve("/v2/models/" + model + "/metrics");
            HttpResponse<byte[]> response = client.send(HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(30))
                    .build(), HttpResponse.BodyHandlers.ofByteArray());
            if (response.statusCode() != 200) {
                throw new IOException(url + " answered " + response.statusCode() + ": "
                        + new String(response.body(), StandardCharsets.UTF_8));
            }
            return shares(base.toString(), model, JSON.readTree(response.body()));
        } finally {
            client.shutdownNow();
        }
    }

    /**
     * The shares in an engine's metrics, as {@code /v2/models/{name}/metrics} gives them.
     *
     * @param url the server's base URL, for the report
     * @param model the model's name, for the report
     * @param metrics the metrics, with {@code batchesPerDevice} and {@code rowsPerDevice}
     * @return the shares
     * @throws IOException if the metrics have no per-device counts
     */
    static Result shares(String url, String model, JsonNode metrics) throws IOException {
        JsonNode batches = metrics.path("batchesPerDevice");
        JsonNode rows = metrics.path("rowsPerDevice");
        if (!batches.isObject() || batches.isEmpty()) {
            throw new IOException(url + " gave no batches per device: " + metrics);
        }
        long allBatches = 0;
        long allRows = 0;
        for (JsonNode count : batches) {
            allBatches += count.asLong();
        }
        for (JsonNode count : rows) {
            allRows += count.asLong();
        }
        List<Share> shares = new ArrayList<>();
        for (Map.Entry<String, JsonNode> device : batches.properties()) {
            long deviceBatches = device.getValue().asLong();
            long deviceRows = rows.path(device.getKey()).asLong();
            shares.add(new Share(Integer.parseInt(device.getKey()), deviceBatches, deviceRows,
                    allBatches == 0 ? 0 : (double) deviceBatches / allBatches,
                    allRows == 0 ? 0 : (double) deviceRows / allRows));
        }
        return new Result(url, model, List.copyOf(shares), shares.stream().allMatch(s -> s.batches() > 0));
    }

    /** The shares as a table, with the verdict. */
    static String table(Result result) {
        StringBuilder text = new StringBuilder(String.format(Locale.ROOT,
                "each GPU's share of %s (model %s) since the server started:%n", result.url(), result.model()));
        text.append(String.format(Locale.ROOT, "%5s %10s %8s %12s %8s%n", "GPU", "batches", "share", "rows", "share"));
        for (Share s : result.shares()) {
            text.append(String.format(Locale.ROOT, "%5d %10d %7.1f%% %12d %7.1f%%%s%n", s.device(), s.batches(),
                    100 * s.batchShare(), s.rows(), 100 * s.rowShare(), s.batches() == 0 ? "  ran no batch" : ""));
        }
        text.append(result.everyDeviceWorked() ? "PASS: every GPU ran batches\n"
                : "FAIL: a GPU of the engine ran no batch\n");
        return text.toString();
    }

    @Option(names = "--url", required = true, description = "the Java server, e.g. http://127.0.0.1:18000")
    URI url;

    @Option(names = "--model", description = "the served model's name (default: ${DEFAULT-VALUE})")
    String model = "mlp";

    @Option(names = "--json", description = "write the result there")
    Path json;

    public static void main(String[] args) {
        System.exit(Cli.execute(new DeviceShares(), args));
    }

    /** The exit status: 0 when every GPU ran batches, 1 when one ran none, 2 without the metrics. */
    @Override
    public Integer call() throws IOException, InterruptedException {
        Result result;
        try {
            result = read(url, model);
        } catch (IOException e) {
            System.err.println("DeviceShares: cannot read the engine's metrics: " + e.getMessage());
            return 2;
        }
        System.out.print(table(result));
        if (json != null) {
            JSON.enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), result);
        }
        return result.everyDeviceWorked() ? 0 : 1;
    }
}
