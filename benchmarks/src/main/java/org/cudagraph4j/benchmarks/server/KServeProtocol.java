package org.cudagraph4j.benchmarks.server;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;

/**
 * The Open Inference Protocol (KServe v2) for one model of FP32, FP16 or BF16 with one input
 * {@code input} of shape [n, inputWidth] and one output {@code output} of shape [n, outputWidth],
 * both of the model's datatype: request parsing with every check the protocol's {@code 400} stands
 * for, and responses, in JSON or with the binary tensor data extension
 * ({@code Inference-Header-Content-Length}).
 *
 * <p>Binary tensor data holds the datatype's own little-endian bytes, 4 or 2 per element. JSON
 * holds numbers: an FP16 or BF16 request's are rounded to the format (to nearest, ties to even;
 * a finite number past the format's range is refused rather than made infinite), and an FP16 or
 * BF16 answer's are the format's values, widened exactly and written as the shortest decimal that
 * reads back as the same float.
 *
 * <p>Requests are read with Jackson's streaming parser, without a tree. Nothing is allocated from a
 * client's claim: a declared shape is checked against the {@link ServerLimits} in {@code long}
 * arithmetic, and its values are stored only as they arrive (binary data has arrived with the body;
 * JSON values go into a buffer no larger than the body's bytes could fill). Binary data is not
 * copied at all: the request's rows are the body's own bytes, which the engine copies straight
 * into its pinned staging, and a binary answer is written by the engine straight into the
 * response's bytes, after its JSON header. Both hold because the binary tensor format is
 * little-endian, as every host CUDA runs on is.
 */
final class KServeProtocol {
    static final String INPUT = "input";
    static final String OUTPUT = "output";
    static final String HEADER_LENGTH = "Inference-Header-Content-Length";
    static final String VERSION = "1";
    private static final int MAX_NESTING = 64;
    private static final JsonFactory JSON = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_NESTING).build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(StreamReadFeature.USE_FAST_DOUBLE_PARSER)
            .enable(StreamWriteFeature.USE_FAST_DOUBLE_WRITER)
            .build();
    /** Shortest JSON value: a digit and a comma. */
    private static final int MIN_VALUE_BYTES = 2;
    /** Reads one misplaced value, to quote it in a refusal. */
    private static final ObjectMapper TREES = new ObjectMapper(JSON);

    /** A request the protocol refuses: the HTTP status and the {@code {"error": …}} message. */
    static final class ProtocolException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        /** The HTTP status to answer with. */
        final int status;

        ProtocolException(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    /**
     * A parsed request: its id (or null), its rows, their elements of the model's type (in native
     * byte order: the body's own bytes for binary data), and whether the answer is wanted as binary data.
     */
    record Request(String id, int rows, MemorySegment data, boolean binaryOutput) {}

    private final String modelName;
    private final ElementType type;
    /** The protocol's name of {@link #type}. */
    private final String datatype;
    private final int inputWidth;
    private final int outputWidth;
    private final ServerLimits limits;

    KServeProtocol(String modelName, ElementType type, int inputWidth, int outputWidth, ServerLimits limits) {
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalStateException("binary tensor data is little-endian and passes through as native values: "
                    + "this server needs a little-endian host, as CUDA does");
        }
        this.modelName = modelName;
        this.type = type;
        this.datatype = datatype(type);
        this.inputWidth = inputWidth;
        this.outputWidth = outputWidth;
        this.limits = limits;
    }

    /**
     * The protocol's name of a tensor element type.
     *
     * @param type FLOAT32, FLOAT16 or BFLOAT16
     * @return FP32, FP16 or BF16
     * @throws IllegalArgumentException for another type
     */
    static String datatype(ElementType type) {
        return switch (type) {
            case FLOAT32 -> "FP32";
            case FLOAT16 -> "FP16";
            case BFLOAT16 -> "BF16";
            default -> throw new IllegalArgumentException("the server serves FP32, FP16 or BF16 models, not " + type);
        };
    }

    /** {@code GET /v2}: the server's name, version and protocol extensions. */
    static byte[] serverMetadata(String name, String version) {
        return serverMetadata(name, version, List.of("binary_tensor_data"));
    }

    /** {@code GET /v2}: the server's name, version and the protocol extensions it serves. */
    static byte[] serverMetadata(String name, String version, List<String> extensions) {
        return write(json -> {
            json.writeStartObject();
            json.writeStringField("name", name);
            json.writeStringField("version", version);
            json.writeArrayFieldStart("extensions");
            for (String extension : extensions) {
                json.writeString(extension);
            }
            json.writeEndArray();
            json.writeEndObject();
        });
    }

    /** {@code GET /v2/models/{name}}. */
    byte[] metadata() {
        return write(json -> {
            json.writeStartObject();
            json.writeStringField("name", modelName);
            json.writeArrayFieldStart("versions");
            json.writeString(VERSION);
            json.writeEndArray();
            json.writeStringField("platform", "cudagraph4j");
            json.writeArrayFieldStart("inputs");
            tensorMetadata(json, INPUT, inputWidth);
            json.writeEndArray();
            json.writeArrayFieldStart("outputs");
            tensorMetadata(json, OUTPUT, outputWidth);
            json.writeEndArray();
            json.writeEndObject();
        });
    }

    private void tensorMetadata(JsonGenerator json, String name, int width) throws IOException {
        json.writeStartObject();
        json.writeStringField("name", name);
        json.writeStringField("datatype", datatype);
        json.writeArrayFieldStart("shape");
        json.writeNumber(-1);
        json.writeNumber(width);
        json.writeEndArray();
        json.writeEndObject();
    }

    /** {@code GET /v2/models/{name}/ready}: the protocol's model-ready object. */
    byte[] modelReady(boolean ready) {
        return modelReady(modelName, ready);
    }

    /** {@code GET /v2/models/{name}/ready} of the model {@code name}. */
    static byte[] modelReady(String name, boolean ready) {
        return write(json -> {
            json.writeStartObject();
            json.writeStringField("name", name);
            json.writeBooleanField("ready", ready);
            json.writeEndObject();
        });
    }

    static byte[] error(String message) {
        return write(json -> {
            json.writeStartObject();
            json.writeStringField("error", message);
            json.writeEndObject();
        });
    }

    /** What the JSON part of a request says, before it is checked as a whole. */
    private static final class Parsed {
        String id;
        int inputs;
        String inputName;
        boolean inputNamed;
        String datatype;
        long[] shape;
        String shapeText;
        JsonToken binaryDataSize;
        long binaryBytes = -1;
        String binaryDataSizeText;
        boolean hasData;
        boolean dataIsArray;
        String dataError;
        float[] values = new float[0];
        int count;
        boolean requestBinaryOutput;
        Boolean outputBinary;
    }

    /**
     * Parses an inference request body.
     *
     * @param body the whole body, already counted against {@link ServerLimits#maxBodyBytes()}
     * @param headerLength the {@code Inference-Header-Content-Length} value, or null for a JSON-only body
     * @return the request
     * @throws ProtocolException with status 400 for anything malformed or over a limit
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
        Parsed parsed = new Parsed();
        try (JsonParser json = JSON.createParser(body, 0, jsonLength)) {
            if (json.nextToken() != JsonToken.START_OBJECT) {
                throw badRequest("the request must be a JSON object");
            }
            readRoot(json, parsed, jsonLength);
            if (json.nextToken() != null) {
                throw badRequest("malformed JSON: more after the request's object");
            }
        } catch (JsonProcessingException e) {
            throw badRequest("malformed JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return check(parsed, body, jsonLength, headerLength != null);
    }

    private void readRoot(JsonParser json, Parsed parsed, int jsonLength) throws IOException {
        while (json.nextToken() == JsonToken.FIELD_NAME) {
            String field = json.currentName();
            JsonToken value = json.nextToken();
            switch (field) {
                case "id" -> parsed.id = value == JsonToken.VALUE_STRING ? json.getText() : skip(json, null);
                case "inputs" -> readInputs(json, parsed, jsonLength);
                case "outputs" -> readOutputs(json, parsed);
                case "parameters" -> {
                    if (value == JsonToken.START_OBJECT) {
                        while (json.nextToken() == JsonToken.FIELD_NAME) {
                            String name = json.currentName();
                            json.nextToken();
                            if (name.equals("binary_data_output")) {
                                parsed.requestBinaryOutput = asBoolean(json);
                            }
                            json.skipChildren();
                        }
                    } else {
                        json.skipChildren();
                    }
                }
                default -> json.skipChildren();
            }
        }
    }

    private void readInputs(JsonParser json, Parsed parsed, int jsonLength) throws IOException {
        if (json.currentToken() != JsonToken.START_ARRAY) {
            json.skipChildren();
            parsed.inputs = -1;
            return;
        }
        while (json.nextToken() != JsonToken.END_ARRAY) {
            parsed.inputs++;
            if (parsed.inputs == 1 && json.currentToken() == JsonToken.START_OBJECT) {
                readInput(json, parsed, jsonLength);
            } else {
                json.skipChildren();
            }
        }
    }

    private void readInput(JsonParser json, Parsed parsed, int jsonLength) throws IOException {
        while (json.nextToken() == JsonToken.FIELD_NAME) {
            String field = json.currentName();
            JsonToken value = json.nextToken();
            switch (field) {
                case "name" -> {
                    parsed.inputNamed = value == JsonToken.VALUE_STRING;
                    parsed.inputName = value.isScalarValue() && value != JsonToken.VALUE_NULL ? json.getText()
                            : skip(json, null);
                }
                case "datatype" -> parsed.datatype = value.isScalarValue() && value != JsonToken.VALUE_NULL
                        ? json.getText() : skip(json, "null");
                case "shape" -> readShape(json, parsed);
                case "parameters" -> {
                    if (value == JsonToken.START_OBJECT) {
                        while (json.nextToken() == JsonToken.FIELD_NAME) {
                            String name = json.currentName();
                            JsonToken token = json.nextToken();
                            if (name.equals("binary_data_size")) {
                                parsed.binaryDataSize = token;
                                parsed.binaryBytes = asLong(json);
                                parsed.binaryDataSizeText = token.isScalarValue() ? json.getText() : "(not a number)";
                            }
                            json.skipChildren();
                        }
                    } else {
                        json.skipChildren();
                    }
                }
                case "data" -> {
                    parsed.hasData = true;
                    parsed.dataIsArray = value == JsonToken.START_ARRAY;
                    if (parsed.dataIsArray) {
                        readValues(json, parsed, jsonLength);
                    } else {
                        json.skipChildren();
                    }
                }
                default -> json.skipChildren();
            }
        }
    }

    private static void readShape(JsonParser json, Parsed parsed) throws IOException {
        if (json.currentToken() != JsonToken.START_ARRAY) {
            parsed.shapeText = json.currentToken().isScalarValue() ? json.getText() : "(not a list)";
            json.skipChildren();
            return;
        }
        long[] dims = new long[2];
        int n = 0;
        boolean integral = true;
        StringBuilder text = new StringBuilder("[");
        while (json.nextToken() != JsonToken.END_ARRAY) {
            JsonToken token = json.currentToken();
            if (text.length() < 64) {
                text.append(text.length() > 1 ? "," : "").append(token.isScalarValue() ? json.getText() : "…");
            }
            if (token == JsonToken.VALUE_NUMBER_INT && json.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                if (n < 2) {
                    dims[n] = json.getLongValue();
                }
            } else {
                integral = false;
                json.skipChildren();
            }
            n++;
        }
        parsed.shapeText = text.append("]").toString();
        parsed.shape = integral && n == 2 ? dims : null;
    }

    /**
     * Appends the numbers of a nested array, row-major, to {@code parsed.values}: the buffer grows
     * with the values read, up to one past the limit on elements.
     */
    private void readValues(JsonParser json, Parsed parsed, int jsonLength) throws IOException {
        int depth = 1;
        while (depth > 0) {
            JsonToken token = json.nextToken();
            switch (token) {
                case START_ARRAY -> depth++;
                case END_ARRAY -> depth--;
                case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                    if (parsed.count == 0 && parsed.values.length == 0 && parsed.shape != null) {
                        // The shape came first, as clients write it: room for what it declares, but
                        // never more than the body's bytes could hold or the limit allows.
                        long declared = declaredElements(parsed.shape);
                        long backed = (long) jsonLength / MIN_VALUE_BYTES + 1;
                        parsed.values = new float[(int) Math.min(Math.min(declared, backed),
                                limits.maxElements() + 1L)];
                    }
                    if (parsed.count == parsed.values.length) {
                        if (parsed.count > limits.maxElements()) {
                            throw badRequest("input \"" + INPUT + "\" holds more than " + limits.maxElements()
                                    + " values, over the limit per request (--max-elements)");
                        }
                        int room = (int) Math.min(Math.max(16, 2L * parsed.count), limits.maxElements() + 1L);
                        parsed.values = Arrays.copyOf(parsed.values, room);
                    }
                    parsed.values[parsed.count++] = json.getFloatValue();
                }
                default -> {
                    if (parsed.dataError == null) {
                        String shown = token.isScalarValue() ? json.getText() : "an object";
                        parsed.dataError = "input \"" + INPUT + "\" holds a value that is not a number: "
                                + (token == JsonToken.VALUE_STRING ? "\"" + shown + "\"" : shown);
                    }
                    json.skipChildren();
                }
            }
        }
    }

    /** The elements a two-dimensional shape declares, Long.MAX_VALUE past that, 0 for a negative dimension. */
    private static long declaredElements(long[] shape) {
        if (shape[0] < 0 || shape[1] < 0) {
            return 0;
        }
        try {
            return Math.multiplyExact(shape[0], shape[1]);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    private static void readOutputs(JsonParser json, Parsed parsed) throws IOException {
        JsonToken value = json.currentToken();
        if (value == JsonToken.VALUE_NULL) {
            return;
        }
        if (value != JsonToken.START_ARRAY) {
            throw badRequest("\"outputs\" must be a list of output tensors, got " + TREES.readTree(json));
        }
        while (json.nextToken() != JsonToken.END_ARRAY) {
            if (json.currentToken() != JsonToken.START_OBJECT) {
                throw badRequest("each entry of \"outputs\" must be an object, got " + TREES.readTree(json));
            }
            String name = null;
            Boolean binary = null;
            while (json.nextToken() == JsonToken.FIELD_NAME) {
                String field = json.currentName();
                JsonToken token = json.nextToken();
                if (field.equals("name") && token == JsonToken.VALUE_STRING) {
                    name = json.getText();
                } else if (field.equals("parameters") && token == JsonToken.START_OBJECT) {
                    while (json.nextToken() == JsonToken.FIELD_NAME) {
                        String parameter = json.currentName();
                        JsonToken setting = json.nextToken();
                        if (parameter.equals("binary_data") && setting != JsonToken.VALUE_NULL) {
                            binary = asBoolean(json);
                        }
                        json.skipChildren();
                    }
                } else {
                    json.skipChildren();
                }
            }
            if (!OUTPUT.equals(name)) {
                throw badRequest("unknown output " + (name == null ? "(no name)" : "\"" + name + "\"")
                        + "; the model's output is \"" + OUTPUT + "\"");
            }
            if (binary != null) {
                parsed.outputBinary = binary;
            }
        }
    }

    private Request check(Parsed parsed, byte[] body, int jsonLength, boolean hasHeaderLength) {
        if (parsed.inputs != 1) {
            throw badRequest("the request needs exactly one input, \"" + INPUT + "\"");
        }
        if (!parsed.inputNamed || !INPUT.equals(parsed.inputName)) {
            throw badRequest("unknown input " + (parsed.inputName == null ? "(no name)" : "\"" + parsed.inputName
                    + "\"") + "; the model's input is \"" + INPUT + "\"");
        }
        if (!datatype.equals(parsed.datatype)) {
            throw badRequest("input \"" + INPUT + "\" must be " + datatype + ", not " + parsed.datatype);
        }
        String shape = parsed.shapeText == null ? "" : parsed.shapeText;
        if (parsed.shape == null) {
            throw badRequest("input \"" + INPUT + "\" needs shape [n, " + inputWidth + "], got " + shape);
        }
        long rows = parsed.shape[0];
        if (rows < 1 || parsed.shape[1] != inputWidth) {
            throw badRequest("input \"" + INPUT + "\" needs shape [n, " + inputWidth + "] with n >= 1, got " + shape);
        }
        if (rows > limits.maxRows()) {
            throw badRequest("input \"" + INPUT + "\" has " + rows + " rows, over the limit of " + limits.maxRows()
                    + " rows per request (--max-rows)");
        }
        long elements = rows * inputWidth; // rows <= maxRows (an int): no overflow
        if (elements > limits.maxElements()) {
            throw badRequest("input \"" + INPUT + "\" of shape " + shape + " holds " + elements
                    + " values, over the limit of " + limits.maxElements() + " per request (--max-elements)");
        }
        MemorySegment data;
        if (parsed.binaryDataSize != null) {
            if (!hasHeaderLength) {
                throw badRequest("binary_data_size needs the " + HEADER_LENGTH + " header");
            }
            long size = parsed.binaryBytes;
            long needed = elements * type.byteSize();
            if (size != needed || body.length - jsonLength != size) {
                throw badRequest("input \"" + INPUT + "\" of shape " + shape + " needs " + needed
                        + " bytes of binary data; binary_data_size says " + parsed.binaryDataSizeText
                        + " and the body holds " + (body.length - jsonLength));
            }
            data = MemorySegment.ofArray(body).asSlice(jsonLength, size);
        } else {
            if (!parsed.hasData || !parsed.dataIsArray) {
                throw badRequest("input \"" + INPUT + "\" has no data array (or binary_data_size)");
            }
            if (parsed.dataError != null) {
                throw badRequest(parsed.dataError);
            }
            if (parsed.count != elements) {
                throw badRequest("input \"" + INPUT + "\" of shape " + shape + " needs " + elements + " values, got "
                        + parsed.count);
            }
            data = type == ElementType.FLOAT32 ? MemorySegment.ofArray(parsed.values).asSlice(0, elements * Float.BYTES)
                    : rounded(parsed.values, (int) elements);
        }
        if (type == ElementType.FLOAT32) {
            for (long at = 0; at < data.byteSize(); at += Float.BYTES) {
                if (!Float.isFinite(data.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at))) {
                    throw notFinite();
                }
            }
        } else {
            short exponent = exponentBits(type);
            for (long at = 0; at < data.byteSize(); at += Short.BYTES) {
                if ((data.get(ValueLayout.JAVA_SHORT_UNALIGNED, at) & exponent) == exponent) {
                    throw notFinite();
                }
            }
        }
        boolean binaryOutput = parsed.outputBinary != null ? parsed.outputBinary : parsed.requestBinaryOutput;
        return new Request(parsed.id, (int) rows, data, binaryOutput);
    }

    /**
     * JSON numbers rounded to the model's 16-bit format. A finite number the format cannot hold
     * (one that would round to infinity) is refused, naming it; a non-finite one is left to the
     * check that refuses every non-finite value.
     */
    private MemorySegment rounded(float[] values, int count) {
        boolean bfloat = type == ElementType.BFLOAT16;
        short exponent = exponentBits(type);
        short[] bits = new short[count];
        for (int i = 0; i < count; i++) {
            float value = values[i];
            short half = bfloat ? HalfFloats.floatToBfloat16(value) : HalfFloats.floatToFloat16(value);
            if ((half & exponent) == exponent && Float.isFinite(value)) {
                float largest = bfloat ? HalfFloats.bfloat16ToFloat((short) 0x7F7F)
                        : HalfFloats.float16ToFloat((short) 0x7BFF);
                throw badRequest("input \"" + INPUT + "\" holds " + value + ", outside the range of " + datatype
                        + " (its largest finite value is " + largest + ")");
            }
            bits[i] = half;
        }
        return MemorySegment.ofArray(bits);
    }

    /** The exponent field of a 16-bit format: all ones in an infinity or a NaN. */
    private static short exponentBits(ElementType type) {
        return type == ElementType.BFLOAT16 ? (short) 0x7F80 : (short) 0x7C00;
    }

    private static ProtocolException notFinite() {
        return badRequest("input \"" + INPUT + "\" holds a value that is not finite");
    }

    /** Jackson's {@code JsonNode.asBoolean()} of the current value: true, a non-zero number, or "true". */
    private static boolean asBoolean(JsonParser json) throws IOException {
        return switch (json.currentToken()) {
            case VALUE_TRUE -> true;
            case VALUE_NUMBER_INT -> json.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                    ? json.getBigIntegerValue().signum() != 0 : json.getLongValue() != 0;
            case VALUE_STRING -> "true".equals(json.getText().strip());
            default -> false;
        };
    }

    /** The current value as a whole number of bytes, or -1 if it is none. */
    private static long asLong(JsonParser json) throws IOException {
        JsonToken token = json.currentToken();
        if (token == JsonToken.VALUE_NUMBER_INT && json.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
            return json.getLongValue();
        }
        if (token == JsonToken.VALUE_STRING) {
            try {
                return Long.parseLong(json.getText().strip());
            } catch (NumberFormatException e) {
                return -1;
            }
        }
        return -1;
    }

    private static String skip(JsonParser json, String result) throws IOException {
        json.skipChildren();
        return result;
    }

    /**
     * A response made before its answer: {@link #output()} is where the answer's elements go (the
     * response's own bytes, after its JSON header, for a binary answer), and {@link #body()} the
     * bytes to send once they are there.
     */
    final class Response {
        private final Request request;
        private final byte[] binaryBody;
        private final int headerLength;
        /** A JSON answer of FP32: the values. */
        private final float[] values;
        /** A JSON answer of FP16 or BF16: the values' bits. */
        private final short[] bits;
        private final MemorySegment output;

        private Response(Request request) {
            this.request = request;
            long answerBytes = (long) request.rows() * outputWidth * type.byteSize();
            if (request.binaryOutput()) {
                byte[] header = header(request, answerBytes);
                this.headerLength = header.length;
                this.binaryBody = Arrays.copyOf(header, Math.toIntExact(header.length + answerBytes));
                this.values = null;
                this.bits = null;
                this.output = MemorySegment.ofArray(binaryBody).asSlice(header.length, answerBytes);
            } else {
                this.headerLength = -1;
                this.binaryBody = null;
                if (type == ElementType.FLOAT32) {
                    this.values = new float[request.rows() * outputWidth];
                    this.bits = null;
                    this.output = MemorySegment.ofArray(values);
                } else {
                    this.values = null;
                    this.bits = new short[request.rows() * outputWidth];
                    this.output = MemorySegment.ofArray(bits);
                }
            }
        }

        /** Where the answer's elements go, in native byte order. */
        MemorySegment output() {
            return output;
        }

        /** The JSON header's length, for {@code Inference-Header-Content-Length}; -1 for a JSON-only response. */
        int headerLength() {
            return headerLength;
        }

        /** The whole response body, once {@link #output()} holds the answer. */
        byte[] body() {
            if (binaryBody != null) {
                return binaryBody;
            }
            return write(out -> {
                start(out, request);
                // Non-finite values are written as the strings "NaN", "Infinity" and "-Infinity"
                // (Jackson's default): the bare tokens would not be JSON.
                out.writeArrayFieldStart("data");
                if (values != null) {
                    for (float value : values) {
                        out.writeNumber(value);
                    }
                } else {
                    boolean bfloat = type == ElementType.BFLOAT16;
                    for (short half : bits) {
                        out.writeNumber(bfloat ? HalfFloats.bfloat16ToFloat(half) : HalfFloats.float16ToFloat(half));
                    }
                }
                out.writeEndArray();
                end(out);
            });
        }
    }

    /** The response to {@code request}, before its answer. */
    Response response(Request request) {
        return new Response(request);
    }

    private byte[] header(Request request, long answerBytes) {
        return write(out -> {
            start(out, request);
            out.writeObjectFieldStart("parameters");
            out.writeNumberField("binary_data_size", answerBytes);
            out.writeEndObject();
            end(out);
        });
    }

    /** The response object up to its output's shape. */
    private void start(JsonGenerator out, Request request) throws IOException {
        out.writeStartObject();
        out.writeStringField("model_name", modelName);
        out.writeStringField("model_version", VERSION);
        if (request.id() != null) {
            out.writeStringField("id", request.id());
        }
        out.writeArrayFieldStart("outputs");
        out.writeStartObject();
        out.writeStringField("name", OUTPUT);
        out.writeStringField("datatype", datatype);
        out.writeArrayFieldStart("shape");
        out.writeNumber(request.rows());
        out.writeNumber(outputWidth);
        out.writeEndArray();
    }

    private static void end(JsonGenerator out) throws IOException {
        out.writeEndObject();
        out.writeEndArray();
        out.writeEndObject();
    }

    private static ProtocolException badRequest(String message) {
        return new ProtocolException(400, message);
    }

    private interface JsonWriter {
        void write(JsonGenerator json) throws IOException;
    }

    private static byte[] write(JsonWriter writer) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try (JsonGenerator json = JSON.createGenerator(bytes)) {
            writer.write(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}
