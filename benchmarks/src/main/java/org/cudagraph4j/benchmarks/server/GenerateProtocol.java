package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.OptionalInt;
import java.util.concurrent.ThreadLocalRandom;
import org.cudagraph4j.llm.Sampling;

/**
 * The Open Inference Protocol's generate extension for a {@link TextGenerator}: request parsing,
 * with a {@code 400} naming the field for anything malformed or out of range, and the answers.
 *
 * <pre>
 *   request:  {"text_input": "…", "parameters": {"max_tokens": 64, "temperature": 0, "top_k": 64,
 *              "top_p": 1, "seed": 7, "stream": false}}
 *   generate: {"model_name", "model_version", "text_output", "finish_reason", "prompt_tokens",
 *              "generated_tokens"}
 *   generate_stream, text/event-stream: one "data: {"model_name", "model_version", "text_output"}"
 *              event per piece of text, then one with "text_output": "" and the generate answer's
 *              other fields; a failure after the first event is an event {"error": "…"}
 * </pre>
 *
 * Every parameter is optional: {@code max_tokens} defaults to {@link TextGenerator#DEFAULT_MAX_TOKENS}
 * (fewer where the sequence has less room), {@code temperature} to 0 (greedy, which ignores the
 * other sampling parameters), {@code top_k} to {@link Sampling#MAX_TOP_K}, {@code top_p} to 1 and
 * {@code seed} to a random one. A JSON null is an absent parameter; parameters of other names are
 * ignored, as the protocol's parameters are open to any.
 */
final class GenerateProtocol {
    static final String TEXT_INPUT = "text_input";
    static final String TEXT_OUTPUT = "text_output";
    private static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build()).enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** A parsed request: the prompt and how to generate. */
    record Request(String textInput, TextGenerator.Parameters parameters) {}

    private GenerateProtocol() {}

    /**
     * Parses a generate request.
     *
     * @param body the whole body, already counted against {@link ServerLimits#maxBodyBytes()}
     * @param streaming whether it came to {@code generate_stream}, which any {@code stream} value suits;
     *     {@code generate} refuses {@code "stream": true}
     * @return the request
     * @throws KServeProtocol.ProtocolException with status 400, naming the field
     */
    static Request parse(byte[] body, boolean streaming) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw badRequest("malformed JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (root == null || !root.isObject()) {
            throw badRequest("the request must be a JSON object");
        }
        JsonNode text = root.get(TEXT_INPUT);
        if (text == null || text.isNull()) {
            throw badRequest("the request needs \"" + TEXT_INPUT + "\", the prompt as a string");
        }
        if (!text.isTextual()) {
            throw badRequest("\"" + TEXT_INPUT + "\" must be a string, got " + shown(text));
        }
        JsonNode parameters = root.path("parameters");
        if (!parameters.isMissingNode() && !parameters.isNull() && !parameters.isObject()) {
            throw badRequest("\"parameters\" must be an object, got " + shown(parameters));
        }
        JsonNode stream = present(parameters, "stream");
        if (stream != null && !stream.isBoolean()) {
            throw badRequest("parameters.stream must be true or false, got " + shown(stream));
        }
        if (stream != null && stream.booleanValue() && !streaming) {
            throw badRequest("parameters.stream is true; a stream of text is POST …/generate_stream");
        }
        OptionalInt maxTokens = OptionalInt.empty();
        JsonNode max = present(parameters, "max_tokens");
        if (max != null) {
            if (!max.isIntegralNumber() || !max.canConvertToInt() || max.intValue() < 1) {
                throw badRequest("parameters.max_tokens must be a whole number of at least 1, got " + shown(max));
            }
            maxTokens = OptionalInt.of(max.intValue());
        }
        JsonNode temperatureNode = present(parameters, "temperature");
        double temperature = 0;
        if (temperatureNode != null) {
            temperature = temperatureNode.isNumber() ? temperatureNode.doubleValue() : Double.NaN;
            if (!(temperature >= 0 && temperature <= Float.MAX_VALUE)) {
                throw badRequest("parameters.temperature must be 0 (greedy) or a positive finite number, got "
                        + shown(temperatureNode));
            }
        }
        int topK = Sampling.MAX_TOP_K;
        JsonNode k = present(parameters, "top_k");
        if (k != null) {
            if (!k.isIntegralNumber() || !k.canConvertToInt() || k.intValue() < 1 || k.intValue() > Sampling.MAX_TOP_K) {
                throw badRequest("parameters.top_k must be a whole number from 1 to " + Sampling.MAX_TOP_K + ", got "
                        + shown(k));
            }
            topK = k.intValue();
        }
        float topP = 1;
        JsonNode p = present(parameters, "top_p");
        if (p != null) {
            double value = p.isNumber() ? p.doubleValue() : Double.NaN;
            if (!(value > 0 && value <= 1) || (float) value == 0) {
                throw badRequest("parameters.top_p must be a number in (0, 1], got " + shown(p));
            }
            topP = (float) value;
        }
        long seed = ThreadLocalRandom.current().nextLong();
        JsonNode s = present(parameters, "seed");
        if (s != null) {
            if (!s.isIntegralNumber() || !s.canConvertToLong()) {
                throw badRequest("parameters.seed must be a whole number that fits 64 bits, got " + shown(s));
            }
            seed = s.longValue();
        }
        // A temperature too small for a float is still a request to sample, not greedy decoding.
        Sampling sampling = temperature == 0 ? Sampling.greedy()
                : Sampling.of(Math.max((float) temperature, Float.MIN_VALUE), topK, topP, seed);
        return new Request(text.textValue(), new TextGenerator.Parameters(maxTokens, sampling));
    }

    /** A parameter's value, or null when it is absent or JSON null. */
    private static JsonNode present(JsonNode parameters, String name) {
        JsonNode value = parameters.get(name);
        return value == null || value.isNull() ? null : value;
    }

    /** A value as a refusal quotes it: its JSON, cut short. */
    private static String shown(JsonNode value) {
        String json = value.toString();
        return json.length() <= 64 ? json : json.substring(0, 61) + "...";
    }

    /** The {@code generate} answer. */
    static byte[] response(String model, String text, TextGenerator.Completion completion) {
        return write(json -> {
            json.writeStartObject();
            header(json, model, text);
            completion(json, completion);
            json.writeEndObject();
        });
    }

    /** One {@code generate_stream} event of text. */
    static byte[] event(String model, String text) {
        return event(write(json -> {
            json.writeStartObject();
            header(json, model, text);
            json.writeEndObject();
        }));
    }

    /** The last {@code generate_stream} event: no text, and how the generation ended. */
    static byte[] lastEvent(String model, TextGenerator.Completion completion) {
        return event(write(json -> {
            json.writeStartObject();
            header(json, model, "");
            completion(json, completion);
            json.writeEndObject();
        }));
    }

    /** A {@code generate_stream} event that ends the stream with an error. */
    static byte[] errorEvent(String message) {
        return event(KServeProtocol.error(message));
    }

    /** {@code GET /v2/models/{name}} of a generative model: one string in, one string out. */
    static byte[] metadata(String model) {
        return write(json -> {
            json.writeStartObject();
            json.writeStringField("name", model);
            json.writeArrayFieldStart("versions");
            json.writeString(KServeProtocol.VERSION);
            json.writeEndArray();
            json.writeStringField("platform", "cudagraph4j");
            json.writeArrayFieldStart("inputs");
            tensorMetadata(json, TEXT_INPUT);
            json.writeEndArray();
            json.writeArrayFieldStart("outputs");
            tensorMetadata(json, TEXT_OUTPUT);
            json.writeEndArray();
            json.writeEndObject();
        });
    }

    private static void tensorMetadata(JsonGenerator json, String name) throws IOException {
        json.writeStartObject();
        json.writeStringField("name", name);
        json.writeStringField("datatype", "BYTES");
        json.writeArrayFieldStart("shape");
        json.writeNumber(1);
        json.writeEndArray();
        json.writeEndObject();
    }

    private static void header(JsonGenerator json, String model, String text) throws IOException {
        json.writeStringField("model_name", model);
        json.writeStringField("model_version", KServeProtocol.VERSION);
        json.writeStringField(TEXT_OUTPUT, text);
    }

    private static void completion(JsonGenerator json, TextGenerator.Completion completion) throws IOException {
        json.writeStringField("finish_reason", completion.finishReason());
        json.writeNumberField("prompt_tokens", completion.promptTokens());
        json.writeNumberField("generated_tokens", completion.generatedTokens());
    }

    /** An SSE event of one JSON line: Jackson escapes line breaks inside strings, so the JSON has none. */
    private static byte[] event(byte[] json) {
        byte[] prefix = "data: ".getBytes(StandardCharsets.US_ASCII);
        byte[] event = new byte[prefix.length + json.length + 2];
        System.arraycopy(prefix, 0, event, 0, prefix.length);
        System.arraycopy(json, 0, event, prefix.length, json.length);
        event[event.length - 2] = '\n';
        event[event.length - 1] = '\n';
        return event;
    }

    private static KServeProtocol.ProtocolException badRequest(String message) {
        return new KServeProtocol.ProtocolException(400, message);
    }

    private interface JsonWriter {
        void write(JsonGenerator json) throws IOException;
    }

    private static byte[] write(JsonWriter writer) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (JsonGenerator json = JSON.getFactory().createGenerator(bytes)) {
            writer.write(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}
