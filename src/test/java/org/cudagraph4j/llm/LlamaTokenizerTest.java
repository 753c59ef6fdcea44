package org.cudagraph4j.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link LlamaTokenizer} on a small hand-built {@code tokenizer.json}: the 256 byte tokens, a few merges,
 * the Llama 3 pre-tokenizer pattern and special tokens.
 */
class LlamaTokenizerTest {
    static final String LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
            + " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

    static final int BOS = 1000;
    static final int EOS = 1001;
    static final int END = 1002;
    static final int EOT = 1003;
    static final int PLAIN_ADDED = 1004;

    /** GPT-2's bytes_to_unicode, written out independently of the class under test. */
    static final char[] BYTE_CHAR = new char[256];

    static {
        int n = 0;
        for (int b = 0; b < 256; b++) {
            boolean keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            BYTE_CHAR[b] = keep ? (char) b : (char) (256 + n++);
        }
    }

    /** The byte-level form of text: each UTF-8 byte as its char. */
    static String bl(String text) {
        StringBuilder b = new StringBuilder();
        for (byte x : text.getBytes(StandardCharsets.UTF_8)) {
            b.append(BYTE_CHAR[x & 0xFF]);
        }
        return b.toString();
    }

    /** Builds tokenizer.json text; merges are given as plain text pairs. */
    static final class Builder {
        final Map<String, Integer> vocab = new LinkedHashMap<>();
        final List<String[]> merges = new ArrayList<>();
        boolean ignoreMerges = true;
        boolean mergesAsPairs = false;
        String modelType = "BPE";
        String preTokenizer = null;
        String postProcessor = null;
        String decoder = "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true,"
                + " \"use_regex\": true}";

        Builder() {
            for (int b = 0; b < 256; b++) {
                vocab.put(String.valueOf(BYTE_CHAR[b]), b);
            }
        }

        Builder merge(String a, String b) {
            return mergeByteLevel(bl(a), bl(b));
        }

        Builder mergeByteLevel(String a, String b) {
            merges.add(new String[] {a, b});
            vocab.putIfAbsent(a + b, vocab.size());
            return this;
        }

        Builder ignoreMerges(boolean ignore) {
            ignoreMerges = ignore;
            return this;
        }

        Builder token(String text) {
            vocab.putIfAbsent(bl(text), vocab.size());
            return this;
        }

        String json() {
            StringBuilder j = new StringBuilder("{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n");
            j.append("\"added_tokens\": [");
            String[] names = {"<|begin_of_text|>", "<|end_of_text|>", "<|end|>", "<|eot_id|>", "[plain]"};
            for (int i = 0; i < names.length; i++) {
                j.append(i == 0 ? "" : ",").append("{\"id\": ").append(BOS + i).append(", \"content\": ")
                        .append(str(names[i])).append(", \"single_word\": false, \"lstrip\": false,")
                        .append(" \"rstrip\": false, \"normalized\": ").append(i == 4)
                        .append(", \"special\": ").append(i != 4).append("}");
            }
            j.append("],\n\"normalizer\": null,\n\"pre_tokenizer\": ");
            j.append(preTokenizer != null ? preTokenizer
                    : "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": "
                            + str(LLAMA3_PATTERN) + "}, \"behavior\": \"Isolated\", \"invert\": false},"
                            + " {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true,"
                            + " \"use_regex\": false}]}");
            j.append(",\n\"post_processor\": ");
            j.append(postProcessor != null ? postProcessor
                    : "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\":"
                            + " \"<|begin_of_text|>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\","
                            + " \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {\"<|begin_of_text|>\":"
                            + " {\"id\": \"<|begin_of_text|>\","
                            + " \"ids\": [" + BOS + "], \"tokens\": [\"<|begin_of_text|>\"]}}}");
            j.append(",\n\"decoder\": ").append(decoder);
            j.append(",\n\"model\": {\"type\": ").append(str(modelType))
                    .append(", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": null,")
                    .append(" \"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": false,")
                    .append(" \"ignore_merges\": ").append(ignoreMerges).append(",\n\"vocab\": {");
            boolean first = true;
            for (Map.Entry<String, Integer> e : vocab.entrySet()) {
                j.append(first ? "" : ", ").append(str(e.getKey())).append(": ").append(e.getValue());
                first = false;
            }
            j.append("},\n\"merges\": [");
            for (int i = 0; i < merges.size(); i++) {
                String[] m = merges.get(i);
                j.append(i == 0 ? "" : ", ");
                j.append(mergesAsPairs ? "[" + str(m[0]) + ", " + str(m[1]) + "]" : str(m[0] + " " + m[1]));
            }
            return j.append("]}}\n").toString();
        }

        LlamaTokenizer build() {
            return LlamaTokenizer.parse(json(), "test tokenizer.json");
        }

        static String str(String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    case '\r' -> b.append("\\r");
                    default -> b.append(c);
                }
            }
            return b.append('"').toString();
        }
    }

    /** The standard test tokenizer. */
    static Builder standard() {
        return new Builder()
                .merge(" ", "t") // rank 0
                .merge("h", "e")
                .merge(" t", "he")
                .merge("i", "n")
                .merge("in", "g")
                .merge(" ", " ")
                .merge("1", "2")
                .merge("12", "3")
                .merge("l", "l")
                .merge("'", "ll")
                .merge("b", "c") // rank 10: before "a b", so "abc" is a + bc
                .merge("a", "b")
                .merge("a", "a")
                .merge("y", "z")
                .mergeByteLevel(bytes(0xF0), bytes(0x9F)) // the first half of U+1F600's four bytes
                .token("xyz");
    }

    /** The byte-level form of raw bytes. */
    static String bytes(int... b) {
        StringBuilder s = new StringBuilder();
        for (int x : b) {
            s.append(BYTE_CHAR[x]);
        }
        return s.toString();
    }

    static int id(LlamaTokenizer t, String text) {
        OptionalInt id = t.tokenId(bl(text));
        assertTrue(id.isPresent(), "no token for " + text);
        return id.getAsInt();
    }

    private final LlamaTokenizer tok = standard().build();

    @Test
    void byteTokensFollowGpt2Table() {
        assertEquals(Optional.of("\u0120"), tok.token(' '), "space is \u0120");
        assertEquals(Optional.of("\u010a"), tok.token('\n'), "newline is \u010a");
        assertEquals(Optional.of("\u0100"), tok.token(0));
        assertEquals(Optional.of("\u0121"), tok.token(0x7F));
        assertEquals(Optional.of("\u0143"), tok.token(0xAD), "soft hyphen is the last mapped byte");
        assertEquals(Optional.of("A"), tok.token('A'));
        assertEquals(Optional.of("\u00e9"), tok.token(0xE9), "printable Latin-1 bytes stand for themselves");
        assertArrayEquals(new int[] {'A', 0xC3, 0xA9}, tok.encode("A\u00e9", false));
        assertArrayEquals(new int[] {0, 1, 0x7F}, tok.encode("\u0000\u0001\u007f", false));
    }

    @Test
    void everyByteRoundTrips() {
        for (int b = 0; b < 256; b++) {
            String text = b < 0x80 ? String.valueOf((char) b) : null;
            if (text != null) {
                assertEquals(text, tok.decode(tok.encode(text, false)), "byte " + b);
            }
            assertEquals(b < 0x80 ? text : "\ufffd", tok.decode(new int[] {b}), "lone byte " + b);
        }
    }

    @Test
    void mergesApplyByRank() {
        assertArrayEquals(new int[] {'a', id(tok, "bc")}, tok.encode("abc", false), "b c ranks before a b");
        assertArrayEquals(new int[] {id(tok, "ab")}, tok.encode("ab", false));
        assertArrayEquals(new int[] {id(tok, "aa"), 'a'}, tok.encode("aaa", false), "leftmost pair first");
        assertArrayEquals(new int[] {id(tok, "aa"), id(tok, "aa")}, tok.encode("aaaa", false));
        assertArrayEquals(new int[] {id(tok, " the")}, tok.encode(" the", false));
        assertArrayEquals(new int[] {'t', id(tok, "he")}, tok.encode("the", false));
        assertArrayEquals(new int[] {'s', id(tok, "ing")}, tok.encode("sing", false));
        assertArrayEquals(new int[] {id(tok, " the"), id(tok, " t"), 'o', 'p'}, tok.encode(" the top", false));
    }

    @Test
    void ignoreMergesTakesWholeVocabularyWords() {
        assertArrayEquals(new int[] {id(tok, "xyz")}, tok.encode("xyz", false));
        LlamaTokenizer merging = standard().ignoreMerges(false).build();
        assertArrayEquals(new int[] {'x', id(merging, "yz")}, merging.encode("xyz", false));
        assertArrayEquals(new int[] {'w', id(tok, "yz")}, tok.encode("wyz", false));
    }

    @Test
    void mergesAsPairsReadTheSame() {
        Builder b = standard();
        b.mergesAsPairs = true;
        LlamaTokenizer pairs = b.build();
        for (String s : new String[] {"abc the thing", "aaaa 123", "xyz we'll"}) {
            assertArrayEquals(tok.encode(s), pairs.encode(s), s);
        }
    }

    @Test
    void preTokenizerFollowsLlama3Pattern() {
        assertEquals(List.of("Hello", " world", "'s", " ", "123", "456", "7", "   \n\n", " x"),
                tok.preTokenize("Hello world's 1234567   \n\n x"));
        assertEquals(List.of("I", "'M", " we", "'ll"), tok.preTokenize("I'M we'll"));
        assertEquals(List.of("12", " ", "345", "678", "9"), tok.preTokenize("12 3456789"));
        assertEquals(List.of("  ", " leading"), tok.preTokenize("   leading"));
        assertEquals(List.of("trailing", "   "), tok.preTokenize("trailing   "));
        assertEquals(List.of("a", ",", " b", "!!!\n", "c"), tok.preTokenize("a, b!!!\nc"));
        assertEquals(List.of("\u65e5\u672c\u8a9e", "\u3002"), tok.preTokenize("\u65e5\u672c\u8a9e\u3002"));
        assertEquals(List.of("\uD83D\uDE00\uD83D\uDE02"), tok.preTokenize("\uD83D\uDE00\uD83D\uDE02"));
    }

    @Test
    void patternClassesAreUnicode() {
        // \s must be Unicode White_Space, as in Oniguruma: with ASCII \s a no-break space would be
        // "other" and run with its neighbour.
        for (char space : new char[] {'\u00a0', '\u3000', '\u0085', '\u2028', '\u000b'}) {
            assertEquals(List.of("a", String.valueOf(space), String.valueOf(space), "1"),
                    tok.preTokenize("a" + space + space + "1"), "U+" + Integer.toHexString(space));
        }
        // \p{N} is every number (No, Nl, other scripts' Nd), three at a time.
        assertEquals(List.of("x", "\u00b2\u00b3\u00bd", "\u216b"), tok.preTokenize("x\u00b2\u00b3\u00bd\u216b"));
        assertEquals(List.of("\u0663\u0664\u0665", "\u0666"), tok.preTokenize("\u0663\u0664\u0665\u0666"));
        // Case-insensitive contractions; combining marks are not letters.
        assertEquals(List.of("DON", "'T"), tok.preTokenize("DON'T"));
        assertEquals(List.of("e", "\u0301"), tok.preTokenize("e\u0301"));
    }

    @Test
    void translatesOnigurumaSpellings() {
        assertEquals(LLAMA3_PATTERN, LlamaTokenizer.translateRegex(LLAMA3_PATTERN));
        assertEquals("\\P{L}\\p{N}", LlamaTokenizer.translateRegex("\\p{^L}\\P{^N}"));
        assertEquals("\\p{IsHan}\\p{Lu}", LlamaTokenizer.translateRegex("\\p{Han}\\p{Lu}"));
        assertEquals("[0-9a-fA-F]+\\s", LlamaTokenizer.translateRegex("\\h+\\s"));
        Pattern han = Pattern.compile(LlamaTokenizer.translateRegex("\\p{Han}+"), Pattern.UNICODE_CHARACTER_CLASS);
        assertTrue(han.matcher("\u4e2d\u6587").matches());
    }

    @Test
    void specialTokensInTextAreSplitOut() {
        int[] ids = tok.encode("a<|eot_id|>b", false);
        assertArrayEquals(new int[] {'a', EOT, 'b'}, ids);
        assertArrayEquals(new int[] {BOS, BOS, EOT, EOT}, tok.encode("<|begin_of_text|><|eot_id|><|eot_id|>"));
        // Longest match at the leftmost start: <|end_of_text|> over <|end|>.
        assertArrayEquals(new int[] {EOS, END}, tok.encode("<|end_of_text|><|end|>", false));
        assertArrayEquals(new int[] {'x', END, '_', 'o', 'f'}, tok.encode("x<|end|>_of", false));
        // Text around a special token is pre-tokenized on its own: " " does not join the following word.
        assertArrayEquals(new int[] {' ', EOT, id(tok, " the")}, tok.encode(" <|eot_id|> the", false));
        assertArrayEquals(new int[] {PLAIN_ADDED}, tok.encode("[plain]", false));
        int[] partial = tok.encode("<|eot_id|", false);
        assertFalse(contains(partial, EOT));
        assertEquals("<|eot_id|", tok.decode(partial));
    }

    @Test
    void templateAddsBeginOfText() {
        assertArrayEquals(new int[] {BOS}, tok.encode(""));
        assertArrayEquals(new int[0], tok.encode("", false));
        assertArrayEquals(new int[] {BOS, 'h', 'i'}, tok.encode("hi"));
        assertArrayEquals(tok.encode("hi"), tok.encode("hi", true));
        Builder sequence = standard();
        sequence.postProcessor = "{\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\","
                + " \"add_prefix_space\": true, \"trim_offsets\": false, \"use_regex\": true},"
                + " {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<|begin_of_text|>\","
                + " \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\":"
                + " \"<|end_of_text|>\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": {\"<|begin_of_text|>\":"
                + " {\"id\": \"<|begin_of_text|>\", \"ids\": [" + BOS + "], \"tokens\": [\"<|begin_of_text|>\"]},"
                + " \"<|end_of_text|>\": {\"id\": \"<|end_of_text|>\", \"ids\": [" + EOS + "], \"tokens\":"
                + " [\"<|end_of_text|>\"]}}}]}";
        assertArrayEquals(new int[] {BOS, 'h', 'i', EOS}, sequence.build().encode("hi"));
        Builder none = standard();
        none.postProcessor = "null";
        assertArrayEquals(new int[] {'h', 'i'}, none.build().encode("hi"));
    }

    @Test
    void decodeRoundTrips() {
        String[] texts = {
            "", " ", "\n\n\n", "Hello, world!", "  leading and trailing  ", "1234567 12 3",
            "I'M we'll they'VE", "tabs\tand\r\nwindows", "\u00dcn\u00efc\u00f6d\u00e9 Stra\u00dfe",
            "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587",
            "emoji \uD83D\uDE00\uD83D\uDC4D\uD83C\uDFFD"
                    + " \uD83D\uDC68\u200D\uD83D\uDC69\u200D\uD83D\uDC67", "e\u0301\u0302 \u0915\u094d\u0937",
            "x\u00b2 \u00bd \u0663\u0664", "no\u00a0break\u3000space", "<|eot_id|> inside <|begin_of_text|>"
        };
        for (String text : texts) {
            assertEquals(text, tok.decode(tok.encode(text, false)), text);
            assertEquals("<|begin_of_text|>" + text, tok.decode(tok.encode(text)), text);
            assertEquals(text.replace("<|eot_id|>", "").replace("<|begin_of_text|>", ""),
                    tok.decode(tok.encode(text), true), text);
        }
    }

    @Test
    void invalidUtf8DecodesAsReplacementCharacters() {
        assertEquals("\ufffd", tok.decode(new int[] {0xF0, 0x9F}), "a cut sequence is one U+FFFD");
        assertEquals("\ufffda", tok.decode(new int[] {0xE4, 'a'}));
        assertEquals("\ufffd\ufffd", tok.decode(new int[] {0xC0, 0x80}), "overlong: each byte alone");
        assertEquals("\ufffd\ufffd\ufffd", tok.decode(new int[] {0xED, 0xA0, 0x80}), "surrogate code point");
        assertEquals("\ufffd\ufffd", tok.decode(new int[] {0xE4, 0xB8, 0xE4, 0xB8}));
        assertEquals("\ufffd", tok.decode(new int[] {0xFF}));
    }

    @Test
    void streamingHoldsBackSplitCharacters() {
        int[] ids = tok.encode("a\uD83D\uDE00b", false);
        int f09f = tok.tokenId(bytes(0xF0, 0x9F)).orElseThrow();
        assertArrayEquals(new int[] {'a', f09f, 0x98, 0x80, 'b'}, ids);
        LlamaTokenizer.TextStream stream = tok.newStream();
        assertEquals("a", stream.accept(ids[0]));
        assertEquals("", stream.accept(ids[1]));
        assertEquals("", stream.accept(ids[2]));
        assertEquals("\uD83D\uDE00", stream.accept(ids[3]));
        assertEquals("b", stream.accept(ids[4]));
        assertEquals("", stream.finish());
        // An unfinished character at the end comes out as U+FFFD; a broken one as soon as it is broken.
        assertEquals("", stream.accept(f09f));
        assertEquals("\ufffd", stream.finish());
        assertEquals("", stream.accept(0xE4));
        assertEquals("\ufffdx", stream.accept('x'));
        // Special tokens are text unless skipped.
        assertEquals("<|eot_id|>", stream.accept(EOT));
        LlamaTokenizer.TextStream skipping = tok.newStream(true);
        assertEquals("", skipping.accept(EOT));
        assertEquals("hi", skipping.accept('h') + skipping.accept('i'));
        assertThrows(IllegalArgumentException.class, () -> skipping.accept(-1));
    }

    @Test
    void vocabularyQueries() {
        assertEquals(PLAIN_ADDED + 1, tok.vocabularySize());
        assertEquals(OptionalInt.of(BOS), tok.tokenId("<|begin_of_text|>"));
        assertEquals(OptionalInt.of(' '), tok.tokenId("\u0120"));
        assertEquals(OptionalInt.empty(), tok.tokenId("nope"));
        assertEquals(Optional.of("<|eot_id|>"), tok.token(EOT));
        assertEquals(Optional.empty(), tok.token(-1));
        assertEquals(Optional.empty(), tok.token(999), "a gap in the ids");
        assertEquals(Optional.empty(), tok.token(PLAIN_ADDED + 1));
        assertTrue(tok.isSpecial(BOS));
        assertTrue(tok.isSpecial(EOT));
        assertFalse(tok.isSpecial(PLAIN_ADDED), "an added token that is not special");
        assertFalse(tok.isSpecial('a'));
        assertFalse(tok.isSpecial(-5));
    }

    @Test
    void badIdsAreRefused() {
        for (int bad : new int[] {-1, 999, PLAIN_ADDED + 1, Integer.MAX_VALUE}) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> tok.decode(new int[] {'a', bad}));
            assertTrue(e.getMessage().contains(Integer.toString(bad)), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> tok.newStream().accept(999));
    }

    @Test
    void unpairedSurrogateIsRefused() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> tok.encode("ab\uD83D", false));
        assertTrue(e.getMessage().contains("surrogate"), e.getMessage());
    }

    @Test
    void malformedFilesAreRefused() {
        assertRefused("{", "test tokenizer.json");
        assertRefused("[]", "not a JSON object");
        Builder unigram = standard();
        unigram.modelType = "Unigram";
        assertRefused(unigram.json(), "Unigram");
        Builder metaspace = standard();
        metaspace.preTokenizer = "{\"type\": \"Metaspace\", \"replacement\": \"\u2581\"}";
        assertRefused(metaspace.json(), "Metaspace");
        Builder removed = standard();
        removed.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\":"
                + " {\"Regex\": \"\\\\s+\"}, \"behavior\": \"Removed\", \"invert\": false},"
                + " {\"type\": \"ByteLevel\"}]}";
        assertRefused(removed.json(), "Removed");
        Builder wordPiece = standard();
        wordPiece.decoder = "{\"type\": \"WordPiece\"}";
        assertRefused(wordPiece.json(), "WordPiece");
        Builder roberta = standard();
        roberta.postProcessor = "{\"type\": \"RobertaProcessing\"}";
        assertRefused(roberta.json(), "RobertaProcessing");
        Builder badRegex = standard();
        badRegex.preTokenizer = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\":"
                + " {\"Regex\": \"(\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\"}]}";
        assertRefused(badRegex.json(), "Regex");
        Builder badMerge = standard();
        badMerge.merges.add(new String[] {"q", "q"});
        assertRefused(badMerge.json(), "qq");
        assertRefused(standard().json().replace("\"merges\": [", "\"merges\": [\"a b c\", "), "a b c");
    }

    private static void assertRefused(String json, String expectedInMessage) {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> LlamaTokenizer.parse(json, "test tokenizer.json"));
        assertTrue(e.getMessage().contains(expectedInMessage), e.getMessage());
    }

    private static boolean contains(int[] ids, int id) {
        for (int x : ids) {
            if (x == id) {
                return true;
            }
        }
        return false;
    }
}
