package org.cudagraph4j.llm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The shape of a Llama 3 family model, as its Hugging Face {@code config.json} gives it: the sizes,
 * the normalization epsilon, the rotary embedding and the special tokens.
 *
 * <p>Only what the decoder computes is accepted: a {@code LlamaForCausalLM} without biases, SiLU
 * activation, rotary embedding either unscaled or scaled as Llama 3.1 does ({@code "llama3"}), and
 * BF16 weights. Every row of a weight is a whole number of 16-byte vectors, so the hidden size, the
 * intermediate size and the attention width ({@code heads * headDim}) are multiples of 8.
 *
 * <p>Thread safety: immutable; safe to share between threads.
 *
 * @param hiddenSize the width of the residual stream, {@code hidden_size}
 * @param intermediateSize the width of the MLP, {@code intermediate_size}
 * @param layers the number of decoder layers, {@code num_hidden_layers}
 * @param heads the number of query heads, {@code num_attention_heads}
 * @param keyValueHeads the number of key and value heads, {@code num_key_value_heads}; divides
 *     {@code heads}
 * @param headDim the width of one head, {@code head_dim} (by default {@code hidden_size / heads});
 *     even
 * @param rmsNormEps the epsilon added to the mean square in RMS normalization, {@code rms_norm_eps}
 * @param ropeTheta the base of the rotary embedding's frequencies, {@code rope_theta}
 * @param ropeScaling the Llama 3 frequency scaling, or null for none ({@code rope_scaling})
 * @param tieWordEmbeddings whether the output projection is the token embedding
 *     ({@code tie_word_embeddings}), so that the checkpoint has no {@code lm_head.weight}
 * @param vocabSize the number of tokens, {@code vocab_size}
 * @param maxPositionEmbeddings the longest context the model was trained for,
 *     {@code max_position_embeddings}
 * @param bosTokenId the beginning-of-sequence token, {@code bos_token_id}, or -1 if there is none
 * @param eosTokenIds the end-of-sequence tokens, {@code eos_token_id} (one or a list); possibly
 *     empty, never null
 */
public record LlamaConfig(
        int hiddenSize,
        int intermediateSize,
        int layers,
        int heads,
        int keyValueHeads,
        int headDim,
        double rmsNormEps,
        double ropeTheta,
        RopeScaling ropeScaling,
        boolean tieWordEmbeddings,
        int vocabSize,
        int maxPositionEmbeddings,
        int bosTokenId,
        List<Integer> eosTokenIds) {

    /** The multiple every row width must be: 8 BF16 values, 16 bytes. */
    private static final int ROW_MULTIPLE = 8;

    /**
     * The frequency scaling of Llama 3.1 and later ({@code rope_type "llama3"}): low frequencies are
     * divided by {@code factor}, high ones kept, and those between blended smoothly.
     *
     * <p>Thread safety: immutable; safe to share between threads.
     *
     * @param factor the divisor of the low frequencies, {@code factor}; at least 1
     * @param lowFreqFactor {@code low_freq_factor}; positive
     * @param highFreqFactor {@code high_freq_factor}; greater than {@code lowFreqFactor}
     * @param originalMaxPositionEmbeddings the context length before scaling,
     *     {@code original_max_position_embeddings}; positive
     */
    public record RopeScaling(
            double factor, double lowFreqFactor, double highFreqFactor, int originalMaxPositionEmbeddings) {

        /**
         * Checks the values.
         *
         * @throws IllegalArgumentException if a value is out of its range or not finite
         */
        public RopeScaling {
            if (!(factor >= 1) || !Double.isFinite(factor)) {
                throw new IllegalArgumentException("rope_scaling.factor must be a finite number >= 1, not " + factor);
            }
            if (!(lowFreqFactor > 0) || !Double.isFinite(lowFreqFactor)) {
                throw new IllegalArgumentException(
                        "rope_scaling.low_freq_factor must be a finite positive number, not " + lowFreqFactor);
            }
            if (!(highFreqFactor > lowFreqFactor) || !Double.isFinite(highFreqFactor)) {
                throw new IllegalArgumentException("rope_scaling.high_freq_factor must be finite and greater than "
                        + "low_freq_factor (" + lowFreqFactor + "), not " + highFreqFactor);
            }
            if (originalMaxPositionEmbeddings <= 0) {
                throw new IllegalArgumentException("rope_scaling.original_max_position_embeddings must be positive, "
                        + "not " + originalMaxPositionEmbeddings);
            }
        }
    }

    /**
     * Checks the values and copies the list of end tokens.
     *
     * @throws IllegalArgumentException if a size is not positive, the heads do not divide, a width is
     *     not a multiple of 8, a number is not finite and positive, or a token is outside the
     *     vocabulary
     * @throws NullPointerException if {@code eosTokenIds} is null or holds a null
     */
    public LlamaConfig {
        requirePositive("hidden_size", hiddenSize);
        requirePositive("intermediate_size", intermediateSize);
        requirePositive("num_hidden_layers", layers);
        requirePositive("num_attention_heads", heads);
        requirePositive("num_key_value_heads", keyValueHeads);
        requirePositive("head_dim", headDim);
        requirePositive("vocab_size", vocabSize);
        requirePositive("max_position_embeddings", maxPositionEmbeddings);
        if (heads % keyValueHeads != 0) {
            throw new IllegalArgumentException("num_attention_heads (" + heads
                    + ") must be a multiple of num_key_value_heads (" + keyValueHeads + ")");
        }
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("head_dim must be even for the rotary embedding, not " + headDim);
        }
        requireRowMultiple("hidden_size", hiddenSize);
        requireRowMultiple("intermediate_size", intermediateSize);
        long attentionWidth = (long) heads * headDim;
        if (attentionWidth % ROW_MULTIPLE != 0 || attentionWidth > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("num_attention_heads * head_dim (" + heads + " * " + headDim + " = "
                    + attentionWidth + ") must be a multiple of " + ROW_MULTIPLE + " below 2^31");
        }
        if (!(rmsNormEps > 0) || !Double.isFinite(rmsNormEps)) {
            throw new IllegalArgumentException("rms_norm_eps must be a finite positive number, not " + rmsNormEps);
        }
        if (!(ropeTheta > 1) || !Double.isFinite(ropeTheta)) {
            throw new IllegalArgumentException("rope_theta must be a finite number > 1, not " + ropeTheta);
        }
        if (bosTokenId < -1 || bosTokenId >= vocabSize) {
            throw new IllegalArgumentException(
                    "bos_token_id " + bosTokenId + " is outside the vocabulary of " + vocabSize + " tokens");
        }
        eosTokenIds = List.copyOf(Objects.requireNonNull(eosTokenIds, "eosTokenIds"));
        for (int eos : eosTokenIds) {
            if (eos < 0 || eos >= vocabSize) {
                throw new IllegalArgumentException(
                        "eos_token_id " + eos + " is outside the vocabulary of " + vocabSize + " tokens");
            }
        }
    }

    /**
     * Reads and checks a {@code config.json}.
     *
     * @param configJson the file
     * @return the configuration
     * @throws UncheckedIOException if the file cannot be read
     * @throws IllegalArgumentException if it is not UTF-8 JSON, or {@link #parse} refuses it
     */
    public static LlamaConfig read(Path configJson) {
        Objects.requireNonNull(configJson, "configJson");
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(configJson);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + configJson + ": " + e, e);
        }
        String text;
        try {
            text = StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(configJson + " is not UTF-8 text", e);
        }
        return parse(text, configJson.toString());
    }

    /**
     * Parses and checks the text of a {@code config.json}.
     *
     * <p>Required: {@code hidden_size}, {@code intermediate_size}, {@code num_hidden_layers},
     * {@code num_attention_heads}, {@code rms_norm_eps}, {@code rope_theta}, {@code vocab_size},
     * {@code max_position_embeddings}. Optional, with Hugging Face's defaults:
     * {@code num_key_value_heads} (the heads), {@code head_dim} ({@code hidden_size / heads}),
     * {@code tie_word_embeddings} (false), {@code rope_scaling} (none), {@code bos_token_id} and
     * {@code eos_token_id} (none). Where present, {@code model_type} must be {@code "llama"},
     * {@code torch_dtype} and {@code dtype} {@code "bfloat16"}, {@code hidden_act} {@code "silu"},
     * and {@code attention_bias} and {@code mlp_bias} false. The rotary parameters may also come in
     * a {@code rope_parameters} object, as newer releases of Transformers write them.
     *
     * @param json the text
     * @param source what the text is, for error messages (a file name)
     * @return the configuration
     * @throws IllegalArgumentException naming the field, if the text is not JSON, a field is missing
     *     or of the wrong type, or a value is one the decoder does not compute
     */
    public static LlamaConfig parse(String json, String source) {
        Objects.requireNonNull(json, "json");
        Objects.requireNonNull(source, "source");
        if (!(Json.parse(json, source) instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException(source + " is not a JSON object");
        }
        Fields f = new Fields(root, source, "");
        String modelType = f.optionalString("model_type");
        if (modelType != null && !modelType.equals("llama")) {
            throw f.error("model_type", "is \"" + modelType + "\"; only \"llama\" models are read");
        }
        for (String dtypeKey : List.of("torch_dtype", "dtype")) {
            String dtype = f.optionalString(dtypeKey);
            if (dtype != null && !dtype.equals("bfloat16")) {
                throw f.error(dtypeKey, "is \"" + dtype + "\"; only bfloat16 (BF16) checkpoints are read");
            }
        }
        String activation = f.optionalString("hidden_act");
        if (activation != null && !activation.equals("silu")) {
            throw f.error("hidden_act", "is \"" + activation + "\"; only \"silu\" is computed");
        }
        for (String biasKey : List.of("attention_bias", "mlp_bias")) {
            if (f.optionalBoolean(biasKey, false)) {
                throw f.error(biasKey, "is true; projections with biases are not computed");
            }
        }
        int hidden = f.requiredInt("hidden_size");
        int heads = f.requiredInt("num_attention_heads");
        int keyValueHeads = f.optionalInt("num_key_value_heads", heads);
        int headDim;
        if (f.has("head_dim")) {
            headDim = f.requiredInt("head_dim");
        } else {
            if (heads <= 0 || hidden % heads != 0) {
                throw f.error("head_dim", "is absent and hidden_size (" + hidden
                        + ") is not a multiple of num_attention_heads (" + heads + ")");
            }
            headDim = hidden / heads;
        }

        Fields rope = f.has("rope_parameters") ? f.object("rope_parameters") : null;
        double theta;
        if (f.has("rope_theta") || rope == null) {
            theta = f.requiredDouble("rope_theta");
        } else {
            theta = rope.requiredDouble("rope_theta");
        }
        RopeScaling scaling;
        if (f.has("rope_scaling")) {
            scaling = ropeScaling(f.object("rope_scaling"));
        } else if (rope != null) {
            scaling = ropeScaling(rope);
        } else {
            scaling = null;
        }

        int intermediate = f.requiredInt("intermediate_size");
        int layers = f.requiredInt("num_hidden_layers");
        double eps = f.requiredDouble("rms_norm_eps");
        boolean tied = f.optionalBoolean("tie_word_embeddings", false);
        int vocab = f.requiredInt("vocab_size");
        int maxPositions = f.requiredInt("max_position_embeddings");
        int bos = f.optionalInt("bos_token_id", -1);
        List<Integer> eos = f.intOrIntList("eos_token_id");
        try {
            return new LlamaConfig(hidden, intermediate, layers, heads, keyValueHeads, headDim, eps, theta, scaling,
                    tied, vocab, maxPositions, bos, eos);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
    }

    /** {@return the scaling an object with a {@code rope_type} (or {@code type}) describes, or null for none} */
    private static RopeScaling ropeScaling(Fields r) {
        String typeKey = r.has("rope_type") ? "rope_type" : "type";
        String type = r.optionalString(typeKey);
        if (type == null) {
            throw r.error("rope_type", "is missing; the rotary scaling must say its type");
        }
        if (type.equals("default")) {
            return null;
        }
        if (!type.equals("llama3")) {
            throw r.error(typeKey, "is \"" + type + "\"; only \"llama3\" rotary scaling is computed");
        }
        double factor = r.requiredDouble("factor");
        double low = r.requiredDouble("low_freq_factor");
        double high = r.requiredDouble("high_freq_factor");
        int original = r.requiredInt("original_max_position_embeddings");
        try {
            return new RopeScaling(factor, low, high, original);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(r.source() + ": " + e.getMessage(), e);
        }
    }

    /**
     * {@return the rotary embedding's inverse frequencies, {@code headDim / 2} of them, computed in
     * double}
     *
     * <p>{@code inv_freq[i] = ropeTheta^(-2i / headDim)}, then with {@link #ropeScaling} as
     * Transformers' {@code _compute_llama3_parameters} does: a frequency whose wavelength
     * {@code 2 pi / inv_freq} exceeds {@code original / lowFreqFactor} is divided by
     * {@code factor}; one whose wavelength is below {@code original / highFreqFactor} is kept;
     * between, {@code smooth = (original / wavelength - low) / (high - low)} blends the two:
     * {@code (1 - smooth) * inv_freq / factor + smooth * inv_freq}. Position {@code p} rotates pair
     * {@code i} by the angle {@code p * inv_freq[i]}.
     */
    public double[] ropeInverseFrequencies() {
        int half = headDim / 2;
        double[] inverse = new double[half];
        for (int i = 0; i < half; i++) {
            inverse[i] = 1.0 / Math.pow(ropeTheta, (2.0 * i) / headDim);
        }
        if (ropeScaling == null) {
            return inverse;
        }
        double original = ropeScaling.originalMaxPositionEmbeddings();
        double factor = ropeScaling.factor();
        double low = ropeScaling.lowFreqFactor();
        double high = ropeScaling.highFreqFactor();
        double lowFreqWavelength = original / low;
        double highFreqWavelength = original / high;
        for (int i = 0; i < half; i++) {
            double wavelength = 2 * Math.PI / inverse[i];
            if (wavelength > lowFreqWavelength) {
                inverse[i] = inverse[i] / factor;
            } else if (wavelength >= highFreqWavelength) {
                double smooth = (original / wavelength - low) / (high - low);
                inverse[i] = (1 - smooth) * inverse[i] / factor + smooth * inverse[i];
            }
        }
        return inverse;
    }

    /**
     * {@return the number of weights: the embedding, per layer the two norms and seven projections,
     * the final norm, and the output projection unless it is tied to the embedding}
     */
    public long parameterCount() {
        long h = hiddenSize;
        long attention = (long) heads * headDim;
        long keyValue = (long) keyValueHeads * headDim;
        long perLayer = 2 * h // input and post-attention norms
                + 2 * attention * h // q_proj, o_proj
                + 2 * keyValue * h // k_proj, v_proj
                + 3L * intermediateSize * h; // gate_proj, up_proj, down_proj
        long embedding = (long) vocabSize * h;
        return embedding + layers * perLayer + h + (tieWordEmbeddings ? 0 : embedding);
    }

    /**
     * {@return the bytes of all weights in BF16, a tied embedding counted once: what one decoding
     * step reads at least, the floor of its time on a memory-bound device}
     */
    public long weightBytes() {
        return 2 * parameterCount();
    }

    private static void requirePositive(String field, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(field + " must be positive, not " + value);
        }
    }

    private static void requireRowMultiple(String field, int value) {
        if (value % ROW_MULTIPLE != 0) {
            throw new IllegalArgumentException(field + " (" + value + ") must be a multiple of " + ROW_MULTIPLE
                    + " so that every BF16 weight row is whole 16-byte vectors");
        }
    }

    /** Typed access to one JSON object's fields, with errors that name the file and the field. */
    private record Fields(Map<?, ?> map, String source, String prefix) {
        boolean has(String key) {
            return map.containsKey(key) && map.get(key) != null;
        }

        IllegalArgumentException error(String key, String what) {
            return new IllegalArgumentException(source + ": " + prefix + key + " " + what);
        }

        private Object required(String key) {
            if (!map.containsKey(key)) {
                throw error(key, "is missing");
            }
            Object value = map.get(key);
            if (value == null) {
                throw error(key, "is null");
            }
            return value;
        }

        int requiredInt(String key) {
            return toInt(key, required(key));
        }

        int optionalInt(String key, int absent) {
            return has(key) ? toInt(key, map.get(key)) : absent;
        }

        private int toInt(String key, Object value) {
            if (!(value instanceof Long number)) {
                throw error(key, "must be an integer, not " + describe(value));
            }
            if (number < Integer.MIN_VALUE || number > Integer.MAX_VALUE) {
                throw error(key, "is " + number + ", out of the range of an int");
            }
            return number.intValue();
        }

        double requiredDouble(String key) {
            Object value = required(key);
            if (value instanceof Long number) {
                return number.doubleValue();
            }
            if (value instanceof Double number) {
                return number;
            }
            throw error(key, "must be a number, not " + describe(value));
        }

        String optionalString(String key) {
            if (!has(key)) {
                return null;
            }
            if (!(map.get(key) instanceof String text)) {
                throw error(key, "must be a string, not " + describe(map.get(key)));
            }
            return text;
        }

        boolean optionalBoolean(String key, boolean absent) {
            if (!has(key)) {
                return absent;
            }
            if (!(map.get(key) instanceof Boolean flag)) {
                throw error(key, "must be true or false, not " + describe(map.get(key)));
            }
            return flag;
        }

        Fields object(String key) {
            if (!(required(key) instanceof Map<?, ?> inner)) {
                throw error(key, "must be an object, not " + describe(map.get(key)));
            }
            return new Fields(inner, source, prefix + key + ".");
        }

        List<Integer> intOrIntList(String key) {
            if (!has(key)) {
                return List.of();
            }
            Object value = map.get(key);
            if (value instanceof List<?> list) {
                List<Integer> ids = new ArrayList<>(list.size());
                for (Object element : list) {
                    ids.add(toInt(key, element));
                }
                return ids;
            }
            return List.of(toInt(key, value));
        }

        private static String describe(Object value) {
            return switch (value) {
                case null -> "null";
                case String s -> "the string \"" + s + "\"";
                case Long l -> "the integer " + l;
                case Double d -> "the number " + d;
                case Boolean b -> b.toString();
                case List<?> _ -> "an array";
                case Map<?, ?> _ -> "an object";
                default -> value.getClass().getSimpleName();
            };
        }
    }
}
