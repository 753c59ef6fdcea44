package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LlamaConfig}: a Llama 3.2 1B {@code config.json} read field by field, its parameter count,
 * its rotary frequencies against values worked out by hand, and every refusal naming its field.
 * No GPU needed.
 */
class LlamaConfigTest {
    /** Llama 3.2 1B's config.json, as published. */
    static final String LLAMA_3_2_1B = """
            {
              "architectures": ["LlamaForCausalLM"],
              "attention_bias": false,
              "attention_dropout": 0.0,
              "bos_token_id": 128000,
              "eos_token_id": [128001, 128008, 128009],
              "head_dim": 64,
              "hidden_act": "silu",
              "hidden_size": 2048,
              "initializer_range": 0.02,
              "intermediate_size": 8192,
              "max_position_embeddings": 131072,
              "mlp_bias": false,
              "model_type": "llama",
              "num_attention_heads": 32,
              "num_hidden_layers": 16,
              "num_key_value_heads": 8,
              "pretraining_tp": 1,
              "rms_norm_eps": 1e-05,
              "rope_scaling": {
                "factor": 32.0,
                "high_freq_factor": 4.0,
                "low_freq_factor": 1.0,
                "original_max_position_embeddings": 8192,
                "rope_type": "llama3"
              },
              "rope_theta": 500000.0,
              "tie_word_embeddings": true,
              "torch_dtype": "bfloat16",
              "transformers_version": "4.45.0.dev0",
              "use_cache": true,
              "vocab_size": 128256
            }
            """;

    @Test
    void llama32OneBillionReadsFieldByField() {
        LlamaConfig c = LlamaConfig.parse(LLAMA_3_2_1B, "config.json");
        assertEquals(2048, c.hiddenSize());
        assertEquals(8192, c.intermediateSize());
        assertEquals(16, c.layers());
        assertEquals(32, c.heads());
        assertEquals(8, c.keyValueHeads());
        assertEquals(64, c.headDim());
        assertEquals(1e-5, c.rmsNormEps());
        assertEquals(500000.0, c.ropeTheta());
        assertEquals(new LlamaConfig.RopeScaling(32, 1, 4, 8192), c.ropeScaling());
        assertTrue(c.tieWordEmbeddings());
        assertEquals(128256, c.vocabSize());
        assertEquals(131072, c.maxPositionEmbeddings());
        assertEquals(128000, c.bosTokenId());
        assertEquals(List.of(128001, 128008, 128009), c.eosTokenIds());
    }

    @Test
    void llama32OneBillionHasItsPublishedParameterCount() {
        LlamaConfig c = LlamaConfig.parse(LLAMA_3_2_1B, "config.json");
        assertEquals(1_235_814_400L, c.parameterCount());
        assertEquals(2 * 1_235_814_400L, c.weightBytes());
        LlamaConfig untied = LlamaConfig.parse(LLAMA_3_2_1B.replace("\"tie_word_embeddings\": true",
                "\"tie_word_embeddings\": false"), "config.json");
        assertEquals(1_235_814_400L + 128256L * 2048, untied.parameterCount());
    }

    @Test
    void readTakesAFileAndNamesItInErrors(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("config.json");
        Files.writeString(file, LLAMA_3_2_1B);
        assertEquals(LlamaConfig.parse(LLAMA_3_2_1B, "x"), LlamaConfig.read(file));
        Files.writeString(file, LLAMA_3_2_1B.replace("\"vocab_size\": 128256", "\"vocab_size\": \"many\""));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LlamaConfig.read(file));
        assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("vocab_size"), e.getMessage());
        Files.write(file, new byte[] {'{', (byte) 0xC3, '}'});
        assertMessage(() -> LlamaConfig.read(file), "not UTF-8");
    }

    @Test
    void absentOptionalFieldsTakeTransformersDefaults() {
        String json = """
                {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
                 "rms_norm_eps": 1e-6, "rope_theta": 10000, "vocab_size": 1000, "max_position_embeddings": 512,
                 "eos_token_id": 7, "rope_scaling": null}
                """;
        LlamaConfig c = LlamaConfig.parse(json, "config.json");
        assertEquals(8, c.keyValueHeads());
        assertEquals(32, c.headDim());
        assertNull(c.ropeScaling());
        assertFalse(c.tieWordEmbeddings());
        assertEquals(-1, c.bosTokenId());
        assertEquals(List.of(7), c.eosTokenIds());
        assertEquals(10000.0, c.ropeTheta());
    }

    @Test
    void ropeParametersOfNewerTransformersAreRead() {
        String json = LLAMA_3_2_1B
                .replace("\"rope_theta\": 500000.0,", "")
                .replace("\"rope_scaling\"", "\"rope_parameters\"")
                .replace("\"rope_type\": \"llama3\"", "\"rope_type\": \"llama3\", \"rope_theta\": 500000.0");
        assertEquals(LlamaConfig.parse(LLAMA_3_2_1B, "a"), LlamaConfig.parse(json, "a"));
    }

    @Test
    void ropeInverseFrequenciesMatchValuesWorkedOutByHand() {
        double[] f = LlamaConfig.parse(LLAMA_3_2_1B, "config.json").ropeInverseFrequencies();
        assertEquals(32, f.length);
        // Wavelengths below 8192/4 = 2048 keep their frequency: i = 0 (2 pi), 1, 14 (1956.5).
        assertEquals(1.0, f[0]);
        assertClose(Math.pow(500000, -1.0 / 32), f[1]);
        assertClose(0.0032114459947525913, f[14]);
        // Between 2048 and 8192 the two blend: i = 16, 500000^-0.5, wavelength 4442.88,
        // smooth = (8192 / 4442.88 - 1) / 3 = 0.2812826, (1 - smooth) / 32 + smooth = 0.3037425.
        assertClose(0.001414213562373095 * ((1 - 0.28128260516325104) / 32 + 0.28128260516325104), f[16]);
        assertClose(0.00042955679655936815, f[16]);
        assertClose(0.001290547928209264, f[15]);
        assertClose(9.70828780262767e-05, f[17]);
        // Above 8192 the frequency is divided by the factor: i = 18, 31.
        assertClose(0.000622772421914596 / 32, f[18]);
        assertClose(Math.pow(500000, -31.0 / 32) / 32, f[31]);
    }

    @Test
    void withoutScalingTheFrequenciesArePlainPowers() {
        String unscaled = LLAMA_3_2_1B.replaceFirst("\"rope_scaling\": \\{[^}]*}", "\"rope_scaling\": null");
        LlamaConfig c = LlamaConfig.parse(unscaled, "config.json");
        double[] f = c.ropeInverseFrequencies();
        for (int i = 0; i < f.length; i++) {
            assertClose(Math.pow(500000, -2.0 * i / 64), f[i]);
        }
    }

    @Test
    void aMissingFieldIsNamed() {
        for (String field : List.of("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "rms_norm_eps", "rope_theta", "vocab_size", "max_position_embeddings")) {
            String json = LLAMA_3_2_1B.replaceFirst(",\\s*\"" + field + "\": [^,\\n]*", "");
            assertMessage(() -> LlamaConfig.parse(json, "config.json"), "config.json: " + field + " is missing");
        }
        String noFactor = LLAMA_3_2_1B.replace("\"factor\": 32.0,", "");
        assertMessage(() -> LlamaConfig.parse(noFactor, "config.json"), "rope_scaling.factor is missing");
    }

    @Test
    void aFieldOfTheWrongTypeIsNamed() {
        assertMessage(() -> parseReplacing("\"hidden_size\": 2048", "\"hidden_size\": \"2048\""),
                "hidden_size must be an integer, not the string \"2048\"");
        assertMessage(() -> parseReplacing("\"hidden_size\": 2048", "\"hidden_size\": 2048.5"),
                "hidden_size must be an integer");
        assertMessage(() -> parseReplacing("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": true"),
                "rms_norm_eps must be a number, not true");
        assertMessage(() -> parseReplacing("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": 1"),
                "tie_word_embeddings must be true or false");
        assertMessage(() -> parseReplacing("\"eos_token_id\": [128001, 128008, 128009]", "\"eos_token_id\": [\"a\"]"),
                "eos_token_id must be an integer");
        assertMessage(() -> parseReplacing("\"num_hidden_layers\": 16", "\"num_hidden_layers\": 99999999999"),
                "num_hidden_layers is 99999999999, out of the range of an int");
        assertMessage(() -> LlamaConfig.parse("[1]", "config.json"), "config.json is not a JSON object");
        assertMessage(() -> LlamaConfig.parse("{", "config.json"), "not valid JSON");
    }

    @Test
    void anUnsupportedRopeTypeIsRefused() {
        assertMessage(() -> parseReplacing("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\""),
                "rope_scaling.rope_type is \"yarn\"; only \"llama3\" rotary scaling is computed");
        assertMessage(() -> parseReplacing("\"rope_type\": \"llama3\"", "\"type\": \"linear\""),
                "rope_scaling.type is \"linear\"");
        assertMessage(() -> parseReplacing("\"rope_type\": \"llama3\"", "\"kind\": \"llama3\""),
                "rope_scaling.rope_type is missing");
        assertEquals(
                LlamaConfig.parse(LLAMA_3_2_1B, "a"),
                parseReplacing("\"rope_type\": \"llama3\"", "\"type\": \"llama3\""));
        assertNull(parseReplacing("\"rope_type\": \"llama3\"", "\"rope_type\": \"default\"").ropeScaling());
        assertMessage(() -> parseReplacing("\"high_freq_factor\": 4.0", "\"high_freq_factor\": 1.0"),
                "high_freq_factor must be finite and greater than low_freq_factor");
    }

    @Test
    void onlyBfloat16LlamaCheckpointsAreAccepted() {
        assertMessage(() -> parseReplacing("\"torch_dtype\": \"bfloat16\"", "\"torch_dtype\": \"float32\""),
                "torch_dtype is \"float32\"; only bfloat16 (BF16) checkpoints are read");
        assertMessage(() -> parseReplacing("\"torch_dtype\": \"bfloat16\"", "\"dtype\": \"float16\""),
                "dtype is \"float16\"; only bfloat16");
        assertMessage(() -> parseReplacing("\"model_type\": \"llama\"", "\"model_type\": \"mistral\""),
                "model_type is \"mistral\"; only \"llama\" models are read");
        assertMessage(() -> parseReplacing("\"attention_bias\": false", "\"attention_bias\": true"),
                "attention_bias is true");
        assertMessage(() -> parseReplacing("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\""),
                "hidden_act is \"gelu\"");
    }

    @Test
    void inconsistentSizesAreRefused() {
        assertMessage(() -> parseReplacing("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"),
                "num_attention_heads (32) must be a multiple of num_key_value_heads (5)");
        assertMessage(() -> parseReplacing("\"head_dim\": 64", "\"head_dim\": 63"), "head_dim must be even");
        String narrowHeads = LLAMA_3_2_1B.replace("\"head_dim\": 64", "\"head_dim\": 2")
                .replace("\"num_attention_heads\": 32", "\"num_attention_heads\": 3")
                .replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 1");
        assertMessage(() -> LlamaConfig.parse(narrowHeads, "config.json"),
                "num_attention_heads * head_dim (3 * 2 = 6) must be a multiple of 8");
        assertMessage(() -> parseReplacing("\"intermediate_size\": 8192", "\"intermediate_size\": 8190"),
                "intermediate_size (8190) must be a multiple of 8");
        assertMessage(() -> parseReplacing("\"hidden_size\": 2048", "\"hidden_size\": 0"),
                "hidden_size must be positive, not 0");
        assertMessage(() -> parseReplacing("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": -1"),
                "rms_norm_eps must be a finite positive number");
        assertMessage(() -> parseReplacing("\"bos_token_id\": 128000", "\"bos_token_id\": 128256"),
                "bos_token_id 128256 is outside the vocabulary of 128256 tokens");
        String noHeadDim = LLAMA_3_2_1B.replace("\"head_dim\": 64,", "").replace("\"hidden_size\": 2048",
                "\"hidden_size\": 2040");
        assertMessage(() -> LlamaConfig.parse(noHeadDim, "config.json"),
                "head_dim is absent and hidden_size (2040) is not a multiple of num_attention_heads (32)");
    }

    @Test
    void aHeadDimOverrideNeedNotMatchTheHiddenSize() {
        LlamaConfig c = parseReplacing("\"head_dim\": 64", "\"head_dim\": 128");
        assertEquals(128, c.headDim());
        assertEquals(2048, c.hiddenSize());
    }

    private static LlamaConfig parseReplacing(String from, String to) {
        if (!LLAMA_3_2_1B.contains(from)) {
            throw new AssertionError("the test config has no " + from);
        }
        return LlamaConfig.parse(LLAMA_3_2_1B.replace(from, to), "config.json");
    }

    private static void assertClose(double expected, double actual) {
        assertEquals(expected, actual, Math.abs(expected) * 1e-12, () -> "expected " + expected + ", got " + actual);
    }

    static void assertMessage(Executable call, String fragment) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(fragment), () -> "\"" + e.getMessage() + "\" lacks \"" + fragment + "\"");
    }
}
