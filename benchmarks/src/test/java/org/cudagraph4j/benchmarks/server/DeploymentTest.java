package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.ParameterException;

/**
 * The deployment files in {@code deploy/}: the Containerfile and the KServe manifests pass the server
 * options it accepts, and agree with each other on the port, the probes and the names.
 */
class DeploymentTest {
    private static final Path CONTAINERFILE = Path.of("deploy/Containerfile");
    private static final Path RUNTIME = Path.of("deploy/kserve/cluster-serving-runtime.yaml");
    private static final Path SERVICE = Path.of("deploy/kserve/inference-service.yaml");
    private static final String MAIN_CLASS = "org.cudagraph4j.benchmarks.server.InferenceServer";

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode yaml(Path file) throws IOException {
        return YAML.readTree(file.toFile());
    }

    private static JsonNode container(JsonNode runtime) {
        JsonNode containers = runtime.path("spec").path("containers");
        assertEquals(1, containers.size(), "one container in " + RUNTIME);
        return containers.get(0);
    }

    private static List<String> strings(JsonNode array) {
        assertTrue(array.isArray(), "a list: " + array);
        List<String> values = new ArrayList<>();
        array.forEach(value -> {
            assertTrue(value.isTextual(), "every arg is a string, not " + value);
            values.add(value.asText());
        });
        return values;
    }

    /** The Containerfile's instructions, keyword to the text after it; continued lines joined, comments left out. */
    private static Map<String, List<String>> instructions() throws IOException {
        Map<String, List<String>> instructions = new LinkedHashMap<>();
        StringBuilder line = new StringBuilder();
        for (String raw : Files.readAllLines(CONTAINERFILE)) {
            String stripped = raw.strip();
            if (line.isEmpty() && (stripped.isEmpty() || stripped.startsWith("#"))) {
                continue;
            }
            if (stripped.endsWith("\\")) {
                line.append(stripped, 0, stripped.length() - 1).append(' ');
                continue;
            }
            line.append(stripped);
            String[] parts = line.toString().split("\\s+", 2);
            instructions.computeIfAbsent(parts[0].toUpperCase(), k -> new ArrayList<>())
                    .add(parts.length > 1 ? parts[1].strip() : "");
            line.setLength(0);
        }
        return instructions;
    }

    /** The one instruction {@code keyword}'s text. */
    private static String instruction(Map<String, List<String>> instructions, String keyword) {
        List<String> found = instructions.getOrDefault(keyword, List.of());
        assertEquals(1, found.size(), "one " + keyword + " in " + CONTAINERFILE + ": " + found);
        return found.get(0);
    }

    /** An ENTRYPOINT or CMD in exec form: its JSON array. */
    private static List<String> execForm(Map<String, List<String>> instructions, String keyword) throws IOException {
        String text = instruction(instructions, keyword);
        assertTrue(text.startsWith("["), keyword + " in exec (JSON array) form, so signals reach java: " + text);
        return JSON.readValue(text, new TypeReference<List<String>>() {});
    }

    /** The value of {@code ARG name=value}. */
    private static String arg(Map<String, List<String>> instructions, String name) {
        return instructions.getOrDefault("ARG", List.of()).stream()
                .filter(arg -> arg.startsWith(name + "="))
                .map(arg -> arg.substring(name.length() + 1))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no ARG " + name + "=... in " + CONTAINERFILE));
    }

    /** The destination of the COPY whose source is {@code source}. */
    private static String copyDestination(Map<String, List<String>> instructions, String source) {
        return instructions.getOrDefault("COPY", List.of()).stream()
                .map(copy -> copy.split("\\s+"))
                .filter(words -> words.length == 2 && words[0].equals(source))
                .map(words -> words[1])
                .findFirst()
                .orElseThrow(() -> new AssertionError("no COPY " + source + " DEST in " + CONTAINERFILE));
    }

    @Test
    void runtimeArgsAreAcceptedByTheServerAndListenOnTheContainerPort() throws IOException {
        JsonNode runtime = yaml(RUNTIME);
        assertEquals("serving.kserve.io/v1alpha1", runtime.path("apiVersion").asText());
        assertEquals("ClusterServingRuntime", runtime.path("kind").asText());
        assertTrue(strings(runtime.path("spec").path("protocolVersions")).contains("v2"));

        JsonNode container = container(runtime);
        assertEquals("kserve-container", container.path("name").asText());
        String name = yaml(SERVICE).path("metadata").path("name").asText();
        List<String> args = strings(container.path("args")).stream().map(a -> a.replace("{{.Name}}", name)).toList();
        ServerCommand command = ServerCommand.parse(args.toArray(String[]::new));

        JsonNode ports = container.path("ports");
        assertEquals(1, ports.size(), "one container port");
        int port = ports.get(0).path("containerPort").asInt();
        assertEquals("TCP", ports.get(0).path("protocol").asText());
        assertEquals(port, command.port);
        assertEquals("0.0.0.0", command.host, "listens beyond the pod's loopback");
        assertEquals(Path.of("/mnt/models/mlp.safetensors"), command.model, "where KServe puts the storageUri's files");
        assertEquals(ServerCommand.Backend.gpu, command.backend);
        assertEquals(name, command.name);
        assertTrue(command.shutdownTimeout.compareTo(Duration.ofSeconds(30)) < 0,
                "drains within the pod's default grace period of 30 s: " + command.shutdownTimeout);
        assertEquals("1", container.path("resources").path("limits").path("nvidia.com/gpu").asText());
    }

    @Test
    void runtimeProbesAskTheServersHealthEndpointsOnItsPort() throws IOException {
        JsonNode container = container(yaml(RUNTIME));
        int port = container.path("ports").get(0).path("containerPort").asInt();
        Map<String, String> paths = Map.of("startupProbe", "/v2/health/ready", "readinessProbe", "/v2/health/ready",
                "livenessProbe", "/v2/health/live");
        paths.forEach((probe, path) -> {
            JsonNode get = container.path(probe).path("httpGet");
            assertEquals(path, get.path("path").asText(), probe);
            assertEquals(port, get.path("port").asInt(), probe);
        });
    }

    @Test
    void runtimePointsPrometheusAtTheServersMetricsEndpoint() throws IOException {
        JsonNode runtime = yaml(RUNTIME);
        JsonNode annotations = runtime.path("spec").path("annotations");
        assertEquals("/metrics", annotations.path("prometheus.kserve.io/path").asText());
        int port = container(runtime).path("ports").get(0).path("containerPort").asInt();
        assertEquals(String.valueOf(port), annotations.path("prometheus.kserve.io/port").asText());
    }

    @Test
    void containerfileDefaultArgsAreAcceptedByTheServerOnTheExposedPort() throws IOException {
        Map<String, List<String>> instructions = instructions();
        ServerCommand command = ServerCommand.parse(execForm(instructions, "CMD").toArray(String[]::new));
        assertEquals("0.0.0.0", command.host, "listens beyond the container's loopback");
        assertEquals(Integer.parseInt(instruction(instructions, "EXPOSE")), command.port);
    }

    @Test
    void containerfileEntrypointRunsTheServerFromTheCopiedBundle() throws Exception {
        Map<String, List<String>> instructions = instructions();
        List<String> entrypoint = execForm(instructions, "ENTRYPOINT");
        assertEquals(MAIN_CLASS, entrypoint.getLast());
        Class<?> main = Class.forName(entrypoint.getLast(), false, getClass().getClassLoader());
        Method method = main.getMethod("main", String[].class);
        assertTrue(Modifier.isStatic(method.getModifiers()), "a static main");
        assertTrue(entrypoint.contains("--enable-native-access=ALL-UNNAMED"), "the library calls CUDA through FFM");

        String bundle = arg(instructions, "BUNDLE");
        String runtime = copyDestination(instructions, "${BUNDLE}/runtime");
        String jar = copyDestination(instructions, "${BUNDLE}/benchmarks/benchmarks.jar");
        assertEquals(runtime + "/bin/java", entrypoint.getFirst());
        int cp = entrypoint.indexOf("-cp");
        assertTrue(cp > 0, "-cp in " + entrypoint);
        assertEquals(jar, entrypoint.get(cp + 1));

        // The root build's bundle folder, where the COPYs read from.
        Matcher dir = Pattern.compile("<bundle\\.dir>\\$\\{project\\.build\\.directory}/([^<]+)</bundle\\.dir>")
                .matcher(Files.readString(Path.of("../pom.xml")));
        assertTrue(dir.find(), "the root pom's bundle.dir");
        assertEquals("target/" + dir.group(1), bundle);
    }

    @Test
    void inferenceServiceUsesTheRuntimeAndAModelFormatItServes() throws IOException {
        JsonNode runtime = yaml(RUNTIME);
        JsonNode service = yaml(SERVICE);
        assertEquals("serving.kserve.io/v1beta1", service.path("apiVersion").asText());
        assertEquals("InferenceService", service.path("kind").asText());
        JsonNode model = service.path("spec").path("predictor").path("model");
        assertEquals(runtime.path("metadata").path("name").asText(), model.path("runtime").asText());

        List<String> formats = new ArrayList<>();
        runtime.path("spec").path("supportedModelFormats").forEach(format -> formats.add(format.path("name").asText()));
        assertTrue(formats.contains(model.path("modelFormat").path("name").asText()),
                model.path("modelFormat") + " is one of " + formats);

        assertEquals("v2", model.path("protocolVersion").asText());
        assertTrue(strings(runtime.path("spec").path("protocolVersions")).contains("v2"));
        assertEquals("1", model.path("resources").path("limits").path("nvidia.com/gpu").asText());
    }

    @Test
    void anUnknownOptionInAManifestWouldBeRefused() {
        assertThrows(ParameterException.class, () -> ServerCommand.parse("--model", "x", "--no-such-option"));
    }
}
