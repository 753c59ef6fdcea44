package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The Open Inference Protocol (KServe v2) for one FP32 model with one input {@code input} of shape
 * [n, inputWidth] and one output {@code output} of shape [n, outputWidth]: request parsing with
 * every check the protocol's {@code 400} stands for, and responses, in JSON or with the binary
 * tensor data extension ({@code Inference-Header-Content-Length}).
 */
final class KServeProtocol {
    static final String INPUT = "input";
    static final String OUTPUT = "output";
    static final String HEADER_LENGTH = "Inference-Header-Content-Length";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A request the protocol refuses: the HTTP status and the {@code {"error": …}} message. */
    static final class ProtocolException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;

        ProtocolException(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    /** A parsed request: its id (or null), its rows, and whether the answer is wanted as binary data. */
    record Request(String id, int rows, float[] data, boolean binaryOutput) {}

    private final String modelName;
    private final int inputWidth;
    private final int outputWidth;

    KServeProtocol(String modelName, int inputWidth, int outputWidth) {
        this.modelName = modelName;
        this.inputWidth = inputWidth;
        this.outputWidth = outputWidth;
    }

    /** {@code GET /v2/models/{name}}. */
    byte[] metadata() {
        ObjectNode root = JSON.createObjectNode();
        root.put("name", modelName);
        root.putArray("versions").add("1");
        root.put("platform", "cudagraph4j");
        tensorMetadata(root.putArray("inputs"), INPUT, inputWidth);
        tensorMetadata(root.putArray("outputs"), OUTPUT, outputWidth);
        return bytes(root);
    }

    private static void tensorMetadata(ArrayNode list, String name, int width) {
        ObjectNode tensor = list.addObject();
        tensor.put("name", name);
        tensor.put("datatype", "FP32");
        tensor.putArray("shape").add(-1).add(width);
    }

    static byte[] error(String message) {
        ObjectNode root = JSON.createObjectNode();
        root.put("error", message);
        return bytes(root);
    }

    /**
     * Parses an inference request body.
     *
     * @param body the whole body
     * @param headerLength the {@code Inference-Header-Content-Length} value, or null for a JSON-only body
     * @return the request
     * @throws ProtocolException with status 400 for anything malformed
     */
    Request parse(byte[] body, String headerLength) {
        int jsonLength = body.length;
        if (headerLength != null) {
            try {
                jsonLength = Integer.parseInt(headerLength.strip());
            } catch (NumberFormatException e) {
                throw badRequest(HEADER_LENGTH + " is not a number: " + headerLength);
            }
            if (jsonLength < 0 || jsonLength > body.length) {
                throw badRequest(HEADER_LENGTH + " " + jsonLength + " is outside the body's " + body.length + " bytes");
            }
        }
        JsonNode root;
        try {
            root = JSON.readTree(new String(body, 0, jsonLength, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw badRequest("malformed JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw badRequest("the request must be a JSON object");
        }
        JsonNode inputs = root.path("inputs");
        if (!inputs.isArray() || inputs.size() != 1) {
            throw badRequest("the request needs exactly one input, \"" + INPUT + "\"");
        }
        JsonNode input = inputs.get(0);
        String name = input.path("name").asText(null);
        if (!INPUT.equals(name)) {
            throw badRequest("unknown input " + (name == null ? "(no name)" : "\"" + name + "\"") + "; the model's "
                    + "input is \"" + INPUT + "\"");
        }
        String datatype = input.path("datatype").asText(null);
        if (!"FP32".equals(datatype)) {
            throw badRequest("input \"" + INPUT + "\" must be FP32, not " + datatype);
        }
        JsonNode shape = input.path("shape");
        if (!shape.isArray() || shape.size() != 2 || !shape.get(0).canConvertToInt() || !shape.get(1).canConvertToInt()
                || !shape.get(0).isIntegralNumber() || !shape.get(1).isIntegralNumber()) {
            throw badRequest("input \"" + INPUT + "\" needs shape [n, " + inputWidth + "], got " + shape);
        }
        int rows = shape.get(0).asInt();
        if (rows < 1 || shape.get(1).asInt() != inputWidth) {
            throw badRequest("input \"" + INPUT + "\" needs shape [n, " + inputWidth + "] with n >= 1, got " + shape);
        }
        long elements = (long) rows * inputWidth;
        float[] data;
        JsonNode binarySize = input.path("parameters").path("binary_data_size");
        if (!binarySize.isMissingNode()) {
            if (headerLength == null) {
                throw badRequest("binary_data_size needs the " + HEADER_LENGTH + " header");
            }
            long size = binarySize.asLong(-1);
            if (size != elements * Float.BYTES || body.length - jsonLength != size) {
                throw badRequest("input \"" + INPUT + "\" of shape " + shape + " needs " + elements * Float.BYTES
                        + " bytes of binary data; binary_data_size says " + binarySize + " and the body holds "
                        + (body.length - jsonLength));
            }
            data = new float[(int) elements];
            ByteBuffer.wrap(body, jsonLength, (int) size).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(data);
        } else {
            JsonNode values = input.path("data");
            if (!values.isArray()) {
                throw badRequest("input \"" + INPUT + "\" has no data array (or binary_data_size)");
            }
            data = new float[(int) Math.min(elements, Integer.MAX_VALUE)];
            int count = flatten(values, data, 0);
            if (count != elements) {
                throw badRequest("input \"" + INPUT + "\" of shape " + shape + " needs " + elements + " values, got "
                        + count);
            }
        }
        for (float value : data) {
            if (!Float.isFinite(value)) {
                throw badRequest("input \"" + INPUT + "\" holds a value that is not finite");
            }
        }
        boolean binaryOutput = root.path("parameters").path("binary_data_output").asBoolean(false);
        for (JsonNode output : root.path("outputs")) {
            binaryOutput |= output.path("parameters").path("binary_data").asBoolean(false);
        }
        JsonNode id = root.path("id");
        return new Request(id.isTextual() ? id.asText() : null, rows, data, binaryOutput);
    }

    /** Copies numbers, row-major through nested arrays; the count, which may exceed the array's room. */
    private int flatten(JsonNode values, float[] into, int at) {
        int count = at;
        for (JsonNode value : values) {
            if (value.isArray()) {
                count = flatten(value, into, count);
            } else if (value.isNumber()) {
                if (count < into.length) {
                    into[count] = value.floatValue();
                }
                count++;
            } else {
                throw badRequest("input \"" + INPUT + "\" holds a value that is not a number: " + value);
            }
        }
        return count;
    }

    /** The response: the JSON bytes, and the binary data (empty for a JSON-only response). */
    record Response(byte[] json, byte[] binary) {}

    Response response(Request request, float[] output) {
        ObjectNode root = JSON.createObjectNode();
        root.put("model_name", modelName);
        root.put("model_version", "1");
        if (request.id() != null) {
            root.put("id", request.id());
        }
        ObjectNode tensor = root.putArray("outputs").addObject();
        tensor.put("name", OUTPUT);
        tensor.put("datatype", "FP32");
        tensor.putArray("shape").add(request.rows()).add(outputWidth);
        if (request.binaryOutput()) {
            byte[] binary = new byte[output.length * Float.BYTES];
            ByteBuffer.wrap(binary).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(output);
            tensor.putObject("parameters").put("binary_data_size", binary.length);
            return new Response(bytes(root), binary);
        }
        ArrayNode data = tensor.putArray("data");
        for (float value : output) {
            data.add(value);
        }
        return new Response(bytes(root), new byte[0]);
    }

    private static ProtocolException badRequest(String message) {
        return new ProtocolException(400, message);
    }

    private static byte[] bytes(JsonNode node) {
        return node.toString().getBytes(StandardCharsets.UTF_8);
    }
}
