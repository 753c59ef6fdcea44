package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Checks {@link LlamaTokenizer} against Hugging Face {@code tokenizers}: a Llama 3 style tokenizer
 * and the ids and texts {@code tokenizers} gave for a set of tricky strings, written by
 * {@code benchmarks/native/llama_tokenizer_reference.py}.
 */
class LlamaTokenizerReferenceTest {
    private static final Path DIR = Path.of("src/test/resources/org/cudagraph4j/llm");
    private static final Path TOKENIZER = DIR.resolve("tokenizer.json");
    private static final Path CASES = DIR.resolve("tokenizer_cases.json");

    private static LlamaTokenizer tokenizer;
    private static List<Map<String, Object>> cases;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void load() throws IOException {
        Assumptions.assumeTrue(Files.exists(TOKENIZER) && Files.exists(CASES),
                TOKENIZER + " and " + CASES + " are absent; benchmarks/native/llama_tokenizer_reference.py"
                        + " --out " + DIR + " writes them (it needs the tokenizers package)");
        tokenizer = LlamaTokenizer.load(TOKENIZER);
        Map<String, Object> root =
                (Map<String, Object>) Json.parse(Files.readString(CASES, StandardCharsets.UTF_8), CASES.toString());
        cases = (List<Map<String, Object>>) (List<?>) root.get("cases");
        assertTrue(cases.size() > 10, "too few cases in " + CASES);
        Object vocabSize = root.get("vocab_size");
        if (vocabSize != null) {
            assertEquals(((Long) vocabSize).intValue(), tokenizer.vocabularySize());
        }
    }

    @Test
    void encodeWithSpecialTokensMatchesTokenizers() {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> c : cases) {
            check(failures, c, "ids", tokenizer.encode(text(c)));
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }

    @Test
    void encodeWithoutSpecialTokensMatchesTokenizers() {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> c : cases) {
            check(failures, c, "ids_plain", tokenizer.encode(text(c), false));
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }

    @Test
    void decodeMatchesTokenizers() {
        for (Map<String, Object> c : cases) {
            int[] ids = ids(c, "ids");
            assertEquals(c.get("decoded"), tokenizer.decode(ids), () -> "decode of " + quote(text(c)));
            if (c.containsKey("decoded_skip")) {
                assertEquals(c.get("decoded_skip"), tokenizer.decode(ids, true),
                        () -> "decode skipping special tokens of " + quote(text(c)));
            }
        }
    }

    @Test
    void streamingDecodeMatchesDecode() {
        for (Map<String, Object> c : cases) {
            int[] ids = ids(c, "ids");
            LlamaTokenizer.TextStream stream = tokenizer.newStream();
            StringBuilder text = new StringBuilder();
            for (int id : ids) {
                text.append(stream.accept(id));
            }
            text.append(stream.finish());
            assertEquals(c.get("decoded"), text.toString(), () -> "streamed decode of " + quote(text(c)));
        }
    }

    private static void check(List<String> failures, Map<String, Object> c, String field, int[] got) {
        int[] expected = ids(c, field);
        if (!Arrays.equals(expected, got)) {
            failures.add(field + " of " + quote(text(c)) + ": expected " + Arrays.toString(expected)
                    + ", got " + Arrays.toString(got));
        }
    }

    private static String text(Map<String, Object> c) {
        return (String) c.get("text");
    }

    private static int[] ids(Map<String, Object> c, String field) {
        List<?> list = (List<?>) c.get(field);
        return list.stream().mapToInt(o -> ((Long) o).intValue()).toArray();
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        s.codePoints().forEach(cp -> {
            if (cp < 0x20 || cp == 0x85 || (cp >= 0x2028 && cp <= 0x2029)) {
                b.append(String.format("\\u%04x", cp));
            } else {
                b.appendCodePoint(cp);
            }
        });
        return b.append('"').toString();
    }
}
