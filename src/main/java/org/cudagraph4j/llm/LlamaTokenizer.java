package org.cudagraph4j.llm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The tokenizer of a Llama 3 checkpoint, read from its {@code tokenizer.json} (the Hugging Face
 * {@code tokenizers} format): byte-level BPE with a regex pre-tokenizer, added (special) tokens and a
 * template post processor. It encodes and decodes as {@code tokenizers} does for that configuration.
 *
 * <p>Supported components: normalizer {@code null}; pre_tokenizer {@code ByteLevel}, or a
 * {@code Sequence} of {@code Split} (behavior {@code Isolated}) steps ending in {@code ByteLevel};
 * model {@code BPE} (merges as {@code "a b"} strings or {@code [a, b]} pairs, {@code ignore_merges},
 * {@code unk_token}, {@code fuse_unk}); post_processor {@code null}, {@code TemplateProcessing},
 * {@code ByteLevel} or a {@code Sequence} of these; decoder {@code ByteLevel}. Anything else is
 * refused with an {@link IllegalArgumentException} that names the component.
 *
 * <p>Split patterns are written for Oniguruma, which {@code tokenizers} uses; they are compiled with
 * {@link Pattern#UNICODE_CHARACTER_CLASS}, so that {@code \s}, {@code \d}, {@code \w} and case-insensitive
 * groups mean the Unicode classes there too, and the few Oniguruma spellings Java lacks are rewritten
 * ({@code \p{^X}}, {@code \h}, script names in {@code \p{...}}).
 *
 * <p>Instances are immutable and thread-safe (the per-word cache is concurrent); a {@link TextStream}
 * is not.
 */
public final class LlamaTokenizer {
    /** GPT-2's pre-tokenizer pattern, which {@code ByteLevel} applies when {@code use_regex} is true. */
    static final String GPT2_PATTERN =
            "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

    private static final int MAX_ID = 1 << 26;
    private static final int CACHE_ENTRIES = 10_000;
    private static final int CACHE_WORD_CHARS = 256;

    /** GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest map to U+0100... */
    private static final char[] BYTE_TO_CHAR = new char[256];
    /** The inverse of {@link #BYTE_TO_CHAR}, indexed by char; -1 for chars that are no byte. */
    private static final int[] CHAR_TO_BYTE = new int[0x144];

    static {
        Arrays.fill(CHAR_TO_BYTE, -1);
        int next = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) (256 + next++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private final String source;
    private final Map<String, Integer> vocab;
    private final int[] charIds;
    private final MergeTable merges;
    private final boolean ignoreMerges;
    private final int unkId;
    private final boolean fuseUnk;
    private final String[] idToToken;
    private final byte[][] tokenBytes;
    private final boolean[] special;
    private final Map<String, Integer> addedIds;
    private final AddedTokenMatcher rawAdded;
    private final AddedTokenMatcher normalizedAdded;
    private final List<Pattern> splits;
    private final boolean prefixSpace;
    private final Pattern byteLevelPattern;
    private final int[] templatePrefix;
    private final int[] templateSuffix;
    private final ConcurrentHashMap<String, int[]> cache = new ConcurrentHashMap<>();

    private LlamaTokenizer(String source, Map<String, Object> root) {
        this.source = source;
        requireNull(root.get("normalizer"), "normalizer");

        Map<String, Object> model = object(root.get("model"), "model");
        Object modelType = model.get("type");
        if (modelType != null && !"BPE".equals(modelType)) {
            throw unsupported("model type " + modelType);
        }
        if (Boolean.TRUE.equals(model.get("byte_fallback"))) {
            throw unsupported("model byte_fallback true");
        }
        Object dropout = model.get("dropout");
        if (dropout != null && ((Number) number(dropout, "model.dropout")).doubleValue() != 0.0) {
            throw unsupported("model dropout " + dropout);
        }
        for (String affix : new String[] {"continuing_subword_prefix", "end_of_word_suffix"}) {
            Object value = model.get(affix);
            if (value != null && !"".equals(value)) {
                throw unsupported("model " + affix + " " + value);
            }
        }
        ignoreMerges = Boolean.TRUE.equals(model.get("ignore_merges"));
        fuseUnk = Boolean.TRUE.equals(model.get("fuse_unk"));

        Map<String, Object> vocabJson = object(model.get("vocab"), "model.vocab");
        vocab = new HashMap<>(vocabJson.size() * 4 / 3 + 16);
        int maxId = -1;
        for (Map.Entry<String, Object> e : vocabJson.entrySet()) {
            int id = e.getValue() instanceof Long v && v >= 0 && v < MAX_ID
                    ? (int) (long) v
                    : id(e.getValue(), "model.vocab entry " + quote(e.getKey()));
            vocab.put(e.getKey(), id);
            maxId = Math.max(maxId, id);
        }

        List<Object> addedJson =
                root.get("added_tokens") == null ? List.of() : list(root.get("added_tokens"), "added_tokens");
        List<AddedToken> added = new ArrayList<>();
        for (int i = 0; i < addedJson.size(); i++) {
            String where = "added_tokens[" + i + "]";
            Map<String, Object> t = object(addedJson.get(i), where);
            String content = string(t.get("content"), where + ".content");
            if (content.isEmpty()) {
                throw error(where + ".content is empty");
            }
            AddedToken token = new AddedToken(
                    id(t.get("id"), where + ".id"),
                    content,
                    Boolean.TRUE.equals(t.get("special")),
                    Boolean.TRUE.equals(t.get("single_word")),
                    Boolean.TRUE.equals(t.get("lstrip")),
                    Boolean.TRUE.equals(t.get("rstrip")),
                    !Boolean.FALSE.equals(t.get("normalized")));
            added.add(token);
            maxId = Math.max(maxId, token.id);
        }

        int size = maxId + 1;
        idToToken = new String[size];
        for (Map.Entry<String, Integer> e : vocab.entrySet()) {
            idToToken[e.getValue()] = e.getKey();
        }
        special = new boolean[size];
        addedIds = new HashMap<>();
        for (AddedToken t : added) {
            idToToken[t.id] = t.content;
            special[t.id] = t.special;
            addedIds.put(t.content, t.id);
        }
        tokenBytes = new byte[size][];
        for (int id = 0; id < size; id++) {
            if (idToToken[id] != null) {
                tokenBytes[id] = byteLevelDecode(idToToken[id]);
            }
        }
        rawAdded = new AddedTokenMatcher(added.stream().filter(t -> !t.normalized).toList());
        normalizedAdded = new AddedTokenMatcher(added.stream().filter(t -> t.normalized).toList());

        charIds = new int[CHAR_TO_BYTE.length];
        for (int c = 0; c < charIds.length; c++) {
            charIds[c] = vocab.getOrDefault(String.valueOf((char) c), -1);
        }
        Object unk = model.get("unk_token");
        if (unk == null) {
            unkId = -1;
        } else {
            Integer id = vocab.get(string(unk, "model.unk_token"));
            if (id == null) {
                throw error("model.unk_token " + quote((String) unk) + " is not in model.vocab");
            }
            unkId = id;
        }
        merges = readMerges(list(model.get("merges"), "model.merges"));

        List<Pattern> splitSteps = new ArrayList<>();
        Map<String, Object> byteLevel = readPreTokenizer(root.get("pre_tokenizer"), splitSteps);
        splits = List.copyOf(splitSteps);
        prefixSpace = Boolean.TRUE.equals(byteLevel.get("add_prefix_space"));
        byteLevelPattern = Boolean.FALSE.equals(byteLevel.get("use_regex"))
                ? null
                : Pattern.compile(GPT2_PATTERN, Pattern.UNICODE_CHARACTER_CLASS);

        Object decoder = root.get("decoder");
        if (decoder == null) {
            throw unsupported("decoder null (a ByteLevel decoder is needed)");
        }
        String decoderType = type(decoder, "decoder");
        if (!"ByteLevel".equals(decoderType)) {
            throw unsupported("decoder " + decoderType);
        }

        List<int[]> prefix = new ArrayList<>();
        List<int[]> suffix = new ArrayList<>();
        readPostProcessor(root.get("post_processor"), "post_processor", prefix, suffix);
        templatePrefix = concat(prefix.reversed());
        templateSuffix = concat(suffix);
    }

    /**
     * Reads a {@code tokenizer.json} file.
     *
     * @param tokenizerJson the file
     * @return the tokenizer
     * @throws UncheckedIOException if the file cannot be read
     * @throws IllegalArgumentException if the file is not valid JSON, or describes a tokenizer this class
     *     does not support (the message names the component)
     */
    public static LlamaTokenizer load(Path tokenizerJson) {
        String text;
        try {
            text = Files.readString(tokenizerJson, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + tokenizerJson + ": " + e, e);
        }
        return parse(text, tokenizerJson.toString());
    }

    /**
     * Reads the text of a {@code tokenizer.json} file.
     *
     * @param json the document
     * @param source what the document is, for error messages (a file name)
     * @return the tokenizer
     * @throws IllegalArgumentException if {@code json} is not valid JSON, or describes a tokenizer this
     *     class does not support (the message names the component)
     */
    public static LlamaTokenizer parse(String json, String source) {
        Object root = Json.parse(json, source);
        if (!(root instanceof Map<?, ?>)) {
            throw new IllegalArgumentException(source + ": the document is not a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> map = (Map<String, Object>) root;
        return new LlamaTokenizer(source, map);
    }

    // ---------------------------------------------------------------------------------------------
    // Public API

    /**
     * Encodes {@code text} with the special tokens the post processor adds (Llama 3:
     * {@code <|begin_of_text|>} first), as {@code tokenizer(text)} does in Hugging Face.
     *
     * @param text the text; special-token text in it becomes the special token
     * @return the token ids
     * @throws IllegalArgumentException if {@code text} holds an unpaired surrogate
     */
    public int[] encode(String text) {
        return encode(text, true);
    }

    /**
     * Encodes {@code text}.
     *
     * @param text the text; added-token text in it (such as {@code <|eot_id|>}) becomes that token
     * @param addSpecialTokens whether to add the tokens of the post processor's template
     * @return the token ids
     * @throws IllegalArgumentException if {@code text} holds an unpaired surrogate
     */
    public int[] encode(String text, boolean addSpecialTokens) {
        checkSurrogates(text);
        IntList out = new IntList(text.length() / 3 + 4);
        if (addSpecialTokens) {
            out.addAll(templatePrefix);
        }
        List<int[]> segments = new ArrayList<>();
        rawAdded.split(text, 0, text.length(), segments);
        List<int[]> pieces = new ArrayList<>();
        for (int[] s : segments) {
            if (s[2] >= 0) {
                pieces.add(s);
            } else {
                normalizedAdded.split(text, s[0], s[1], pieces);
            }
        }
        for (int[] p : pieces) {
            if (p[2] >= 0) {
                out.add(p[2]);
            } else {
                encodeOrdinary(text.substring(p[0], p[1]), out);
            }
        }
        if (addSpecialTokens) {
            out.addAll(templateSuffix);
        }
        return out.toArray();
    }

    /**
     * Decodes ids to text, special tokens included. Bytes that do not form UTF-8 become U+FFFD.
     *
     * @param ids the token ids
     * @return the text
     * @throws IllegalArgumentException if an id names no token
     */
    public String decode(int[] ids) {
        return decode(ids, false);
    }

    /**
     * Decodes ids to text. Bytes that do not form UTF-8 become U+FFFD, one per maximal invalid
     * subsequence (Hugging Face's {@code errors="replace"}).
     *
     * @param ids the token ids
     * @param skipSpecialTokens whether to leave out special tokens
     * @return the text
     * @throws IllegalArgumentException if an id names no token
     */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        ByteList bytes = new ByteList(ids.length * 4 + 8);
        for (int id : ids) {
            byte[] b = bytesOf(id);
            if (!(skipSpecialTokens && special[id])) {
                bytes.addAll(b, 0, b.length);
            }
        }
        StringBuilder out = new StringBuilder(bytes.size);
        decodeUtf8(bytes.data, bytes.size, out, true);
        return out.toString();
    }

    /**
     * The size of the id space: the largest token id plus one.
     *
     * @return the vocabulary size
     */
    public int vocabularySize() {
        return idToToken.length;
    }

    /**
     * The id of a token, written as in {@code tokenizer.json} (byte-level form for model tokens, such as
     * {@code "Ġthe"}; plain text for added tokens).
     *
     * @param token the token
     * @return its id, or empty if there is no such token
     */
    public OptionalInt tokenId(String token) {
        Integer id = addedIds.get(token);
        if (id == null) {
            id = vocab.get(token);
        }
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /**
     * The token with an id, written as in {@code tokenizer.json}.
     *
     * @param id the id
     * @return the token, or empty if no token has that id
     */
    public Optional<String> token(int id) {
        return id >= 0 && id < idToToken.length ? Optional.ofNullable(idToToken[id]) : Optional.empty();
    }

    /**
     * Whether an id is a special added token (such as {@code <|begin_of_text|>}).
     *
     * @param id the id
     * @return true for a special token; false otherwise, also for ids that name no token
     */
    public boolean isSpecial(int id) {
        return id >= 0 && id < special.length && special[id];
    }

    /**
     * A decoder for tokens that arrive one at a time, special tokens included.
     *
     * @return a new stream
     */
    public TextStream newStream() {
        return new TextStream(false);
    }

    /**
     * A decoder for tokens that arrive one at a time.
     *
     * @param skipSpecialTokens whether special tokens add no text
     * @return a new stream
     */
    public TextStream newStream(boolean skipSpecialTokens) {
        return new TextStream(skipSpecialTokens);
    }

    @Override
    public String toString() {
        return "LlamaTokenizer[" + source + ", " + idToToken.length + " ids, " + merges.size + " merges]";
    }

    /**
     * Decodes tokens as they are generated. Each {@link #accept(int)} returns the text that token
     * completes; the bytes of a UTF-8 sequence that a later token may finish are held back, so a character
     * split across tokens comes out whole. The texts of all {@code accept} calls and of {@link #finish()}
     * together equal {@link LlamaTokenizer#decode(int[], boolean)} of all the ids.
     *
     * <p>Not thread-safe: one stream belongs to one generation at a time.
     */
    public final class TextStream {
        private final boolean skipSpecialTokens;
        private byte[] pending = new byte[16];
        private int pendingLength;

        private TextStream(boolean skipSpecialTokens) {
            this.skipSpecialTokens = skipSpecialTokens;
        }

        /**
         * Adds one token.
         *
         * @param id the token id
         * @return the text this token completes, possibly empty
         * @throws IllegalArgumentException if the id names no token
         */
        public String accept(int id) {
            byte[] b = bytesOf(id);
            if (skipSpecialTokens && special[id]) {
                return "";
            }
            if (pendingLength + b.length > pending.length) {
                pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLength + b.length));
            }
            System.arraycopy(b, 0, pending, pendingLength, b.length);
            pendingLength += b.length;
            StringBuilder out = new StringBuilder(pendingLength);
            int used = decodeUtf8(pending, pendingLength, out, false);
            System.arraycopy(pending, used, pending, 0, pendingLength - used);
            pendingLength -= used;
            return out.toString();
        }

        /**
         * Ends the stream: held-back bytes that no token completed come out as U+FFFD. The stream can be
         * used again afterwards, as if new.
         *
         * @return the remaining text, possibly empty
         */
        public String finish() {
            StringBuilder out = new StringBuilder();
            decodeUtf8(pending, pendingLength, out, true);
            pendingLength = 0;
            return out.toString();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Encoding

    private void encodeOrdinary(String segment, IntList out) {
        for (String piece : preTokenize(segment)) {
            encodeWord(piece, out);
        }
    }

    /** The pre-tokens of text that holds no added token: the Split steps, then ByteLevel's own. */
    List<String> preTokenize(String segment) {
        List<String> pieces = new ArrayList<>();
        pieces.add(segment);
        for (Pattern p : splits) {
            List<String> next = new ArrayList<>();
            for (String piece : pieces) {
                splitIsolated(p, piece, next);
            }
            pieces = next;
        }
        if (!prefixSpace && byteLevelPattern == null) {
            return pieces;
        }
        List<String> words = new ArrayList<>();
        for (String piece : pieces) {
            String word = prefixSpace && !piece.startsWith(" ") ? " " + piece : piece;
            if (byteLevelPattern == null) {
                words.add(word);
            } else {
                splitIsolated(byteLevelPattern, word, words);
            }
        }
        return words;
    }

    /** Splits as {@code tokenizers}' Split with behavior Isolated: matches and the gaps between, non-empty. */
    private static void splitIsolated(Pattern pattern, String text, List<String> out) {
        Matcher m = pattern.matcher(text);
        int prev = 0;
        while (m.find()) {
            if (m.start() > prev) {
                out.add(text.substring(prev, m.start()));
            }
            if (m.end() > m.start()) {
                out.add(text.substring(m.start(), m.end()));
            }
            prev = Math.max(prev, m.end());
        }
        if (prev < text.length()) {
            out.add(text.substring(prev));
        }
    }

    private void encodeWord(String piece, IntList out) {
        if (piece.isEmpty()) {
            return;
        }
        byte[] utf8 = piece.getBytes(StandardCharsets.UTF_8);
        char[] chars = new char[utf8.length];
        for (int i = 0; i < utf8.length; i++) {
            chars[i] = BYTE_TO_CHAR[utf8[i] & 0xFF];
        }
        String word = new String(chars);
        int[] ids = cache.get(word);
        if (ids == null) {
            ids = bpe(chars, word);
            if (word.length() <= CACHE_WORD_CHARS && cache.size() < CACHE_ENTRIES) {
                cache.put(word, ids);
            }
        }
        out.addAll(ids);
    }

    /** Byte-pair merging as {@code tokenizers}' Word::merge_all: lowest rank first, then leftmost. */
    private int[] bpe(char[] chars, String word) {
        if (ignoreMerges) {
            Integer id = vocab.get(word);
            if (id != null) {
                return new int[] {id};
            }
        }
        int n = 0;
        int[] sym = new int[chars.length];
        for (char c : chars) {
            int id = charIds[c];
            if (id < 0) {
                if (unkId < 0) {
                    continue; // as tokenizers: a char missing from the vocabulary with no unk_token is dropped
                }
                if (fuseUnk && n > 0 && sym[n - 1] == unkId) {
                    continue;
                }
                id = unkId;
            }
            sym[n++] = id;
        }
        if (n < 2) {
            return Arrays.copyOf(sym, n);
        }
        int[] prev = new int[n];
        int[] next = new int[n];
        boolean[] removed = new boolean[n];
        for (int i = 0; i < n; i++) {
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        LongHeap queue = new LongHeap(n);
        for (int i = 0; i + 1 < n; i++) {
            int rank = merges.rank(sym[i], sym[i + 1]);
            if (rank >= 0) {
                queue.push(((long) rank << 32) | i);
            }
        }
        int alive = n;
        while (!queue.isEmpty()) {
            long top = queue.pop();
            int rank = (int) (top >>> 32);
            int pos = (int) top;
            if (removed[pos] || next[pos] < 0) {
                continue;
            }
            int right = next[pos];
            int current = merges.rank(sym[pos], sym[right]);
            int newId = merges.newIds[rank];
            if (current < 0 || merges.newIds[current] != newId) {
                continue; // stale entry: a neighbour changed since it was queued
            }
            sym[pos] = newId;
            removed[right] = true;
            alive--;
            next[pos] = next[right];
            if (next[pos] >= 0) {
                prev[next[pos]] = pos;
            }
            if (prev[pos] >= 0) {
                int r = merges.rank(sym[prev[pos]], newId);
                if (r >= 0) {
                    queue.push(((long) r << 32) | prev[pos]);
                }
            }
            if (next[pos] >= 0) {
                int r = merges.rank(newId, sym[next[pos]]);
                if (r >= 0) {
                    queue.push(((long) r << 32) | pos);
                }
            }
        }
        int[] ids = new int[alive];
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (!removed[i]) {
                ids[k++] = sym[i];
            }
        }
        return ids;
    }

    private static void checkSurrogates(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(String.format(
                        "text holds an unpaired surrogate U+%04X at index %d; it has no UTF-8 form", (int) c, i));
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Decoding

    private byte[] bytesOf(int id) {
        byte[] b = id >= 0 && id < tokenBytes.length ? tokenBytes[id] : null;
        if (b == null) {
            throw new IllegalArgumentException(
                    "token id " + id + " names no token (ids are 0.." + (tokenBytes.length - 1) + ")");
        }
        return b;
    }

    /** The bytes a token stands for, as the ByteLevel decoder takes them: mapped chars, else raw UTF-8. */
    private static byte[] byteLevelDecode(String token) {
        byte[] bytes = new byte[token.length()];
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            int b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
            if (b < 0) {
                return token.getBytes(StandardCharsets.UTF_8);
            }
            bytes[i] = (byte) b;
        }
        return bytes;
    }

    /**
     * Decodes UTF-8, each maximal invalid subsequence becoming one U+FFFD (Unicode's recommended practice,
     * as Rust's {@code from_utf8_lossy}).
     *
     * @param flush whether the input ends here; if not, an incomplete sequence at the end is left unread
     * @return how many bytes were read
     */
    static int decodeUtf8(byte[] b, int length, StringBuilder out, boolean flush) {
        int i = 0;
        while (i < length) {
            int b0 = b[i] & 0xFF;
            if (b0 < 0x80) {
                out.append((char) b0);
                i++;
                continue;
            }
            int need;
            int lo = 0x80;
            int hi = 0xBF;
            if (b0 >= 0xC2 && b0 <= 0xDF) {
                need = 1;
            } else if (b0 == 0xE0) {
                need = 2;
                lo = 0xA0;
            } else if (b0 == 0xED) {
                need = 2;
                hi = 0x9F;
            } else if (b0 >= 0xE1 && b0 <= 0xEF) {
                need = 2;
            } else if (b0 == 0xF0) {
                need = 3;
                lo = 0x90;
            } else if (b0 >= 0xF1 && b0 <= 0xF3) {
                need = 3;
            } else if (b0 == 0xF4) {
                need = 3;
                hi = 0x8F;
            } else {
                out.append('\uFFFD');
                i++;
                continue;
            }
            int cp = b0 & (0x3F >> need);
            int k = 1;
            for (; k <= need; k++) {
                if (i + k >= length) {
                    if (!flush) {
                        return i;
                    }
                    out.append('\uFFFD');
                    return length;
                }
                int bk = b[i + k] & 0xFF;
                if (bk < (k == 1 ? lo : 0x80) || bk > (k == 1 ? hi : 0xBF)) {
                    break;
                }
                cp = (cp << 6) | (bk & 0x3F);
            }
            if (k <= need) {
                out.append('\uFFFD');
                i += k;
            } else {
                out.appendCodePoint(cp);
                i += need + 1;
            }
        }
        return length;
    }

    // ---------------------------------------------------------------------------------------------
    // Reading tokenizer.json

    private MergeTable readMerges(List<Object> json) {
        MergeTable table = new MergeTable(json.size());
        for (int rank = 0; rank < json.size(); rank++) {
            Object m = json.get(rank);
            String a;
            String b;
            if (m instanceof String s) {
                int space = s.indexOf(' ');
                if (space < 0 || s.indexOf(' ', space + 1) >= 0) {
                    throw error("model.merges[" + rank + "] " + quote(s) + " is not two tokens split by one space");
                }
                a = s.substring(0, space);
                b = s.substring(space + 1);
            } else if (m instanceof List<?> pair && pair.size() == 2
                    && pair.get(0) instanceof String s0 && pair.get(1) instanceof String s1) {
                a = s0;
                b = s1;
            } else {
                throw error("model.merges[" + rank + "] is neither \"a b\" nor [\"a\", \"b\"]");
            }
            Integer ia = vocab.get(a);
            Integer ib = vocab.get(b);
            Integer merged = vocab.get(a + b);
            if (ia == null || ib == null || merged == null) {
                String missing = ia == null ? a : ib == null ? b : a + b;
                throw error("model.merges[" + rank + "] (" + quote(a) + ", " + quote(b) + "): token "
                        + quote(missing) + " is not in model.vocab");
            }
            table.put(ia, ib, rank, merged);
        }
        return table;
    }

    /** Reads the pre_tokenizer: Split steps into {@code splitSteps}; returns the ByteLevel step's settings. */
    private Map<String, Object> readPreTokenizer(Object json, List<Pattern> splitSteps) {
        if (json == null) {
            throw unsupported("pre_tokenizer null (a ByteLevel pre_tokenizer is needed)");
        }
        String type = type(json, "pre_tokenizer");
        Map<String, Object> map = object(json, "pre_tokenizer");
        if ("ByteLevel".equals(type)) {
            return map;
        }
        if (!"Sequence".equals(type)) {
            throw unsupported("pre_tokenizer " + type);
        }
        List<Object> steps = list(map.get("pretokenizers"), "pre_tokenizer.pretokenizers");
        for (int i = 0; i < steps.size(); i++) {
            String where = "pre_tokenizer.pretokenizers[" + i + "]";
            String stepType = type(steps.get(i), where);
            Map<String, Object> step = object(steps.get(i), where);
            if ("ByteLevel".equals(stepType)) {
                if (i != steps.size() - 1) {
                    throw unsupported(where + " ByteLevel before other pre-tokenizers");
                }
                return step;
            }
            if (!"Split".equals(stepType)) {
                throw unsupported(where + " " + stepType);
            }
            Object behavior = step.get("behavior");
            if (!"Isolated".equals(behavior)) {
                throw unsupported(where + " Split behavior " + behavior);
            }
            Map<String, Object> pattern = object(step.get("pattern"), where + ".pattern");
            if (pattern.get("Regex") != null) {
                String regex = string(pattern.get("Regex"), where + ".pattern.Regex");
                try {
                    splitSteps.add(Pattern.compile(translateRegex(regex), Pattern.UNICODE_CHARACTER_CLASS));
                } catch (PatternSyntaxException e) {
                    throw error(where + ".pattern.Regex " + quote(regex) + " is not supported: " + e.getDescription());
                }
            } else if (pattern.get("String") != null) {
                splitSteps.add(Pattern.compile(Pattern.quote(string(pattern.get("String"), where + ".pattern"))));
            } else {
                throw unsupported(where + ".pattern " + pattern.keySet());
            }
        }
        throw unsupported("pre_tokenizer Sequence without a final ByteLevel");
    }

    private void readPostProcessor(Object json, String where, List<int[]> prefix, List<int[]> suffix) {
        if (json == null) {
            return;
        }
        String type = type(json, where);
        Map<String, Object> map = object(json, where);
        switch (type) {
            case "ByteLevel" -> {} // changes offsets only
            case "Sequence" -> {
                List<Object> steps = list(map.get("processors"), where + ".processors");
                for (int i = 0; i < steps.size(); i++) {
                    readPostProcessor(steps.get(i), where + ".processors[" + i + "]", prefix, suffix);
                }
            }
            case "TemplateProcessing" -> {
                Map<String, Object> specials = object(map.get("special_tokens"), where + ".special_tokens");
                List<Object> single = list(map.get("single"), where + ".single");
                IntList before = new IntList(4);
                IntList after = new IntList(4);
                int sequences = 0;
                for (int i = 0; i < single.size(); i++) {
                    String at = where + ".single[" + i + "]";
                    Map<String, Object> item = object(single.get(i), at);
                    if (item.get("Sequence") != null) {
                        Object id = object(item.get("Sequence"), at + ".Sequence").get("id");
                        if (!"A".equals(id)) {
                            throw unsupported(at + " Sequence " + id + " in a single-sequence template");
                        }
                        sequences++;
                    } else if (item.get("SpecialToken") != null) {
                        String name = string(object(item.get("SpecialToken"), at).get("id"), at + ".SpecialToken.id");
                        Object entry = specials.get(name);
                        if (entry == null) {
                            throw error(at + ": special token " + quote(name) + " is not in " + where
                                    + ".special_tokens");
                        }
                        List<Object> ids = list(object(entry, where + ".special_tokens").get("ids"),
                                where + ".special_tokens." + name + ".ids");
                        for (Object id : ids) {
                            int v = id(id, where + ".special_tokens." + name + ".ids");
                            if (v >= idToToken.length || idToToken[v] == null) {
                                throw error(where + ".special_tokens." + name + " has id " + v
                                        + ", which names no token");
                            }
                            (sequences == 0 ? before : after).add(v);
                        }
                    } else {
                        throw unsupported(at + " " + item.keySet());
                    }
                }
                if (sequences != 1) {
                    throw error(where + ".single holds " + sequences + " sequences, expected one");
                }
                prefix.add(before.toArray());
                suffix.add(after.toArray());
            }
            default -> throw unsupported(where + " " + type);
        }
    }

    /**
     * Rewrites an Oniguruma pattern (as {@code tokenizers} compiles it) for {@link Pattern} with
     * {@link Pattern#UNICODE_CHARACTER_CLASS}: {@code \h}/{@code \H} (hex digits in Oniguruma, horizontal
     * space in Java) become classes, {@code \p{^X}} becomes {@code \P{X}}, and property names that are not
     * general categories get Java's {@code Is} prefix ({@code \p{Han}} becomes {@code \p{IsHan}}). The
     * rest, Llama 3's pattern included, means the same in both.
     */
    static String translateRegex(String onig) {
        StringBuilder out = new StringBuilder(onig.length() + 16);
        for (int i = 0; i < onig.length(); i++) {
            char c = onig.charAt(i);
            if (c != '\\' || i + 1 >= onig.length()) {
                out.append(c);
                continue;
            }
            char e = onig.charAt(++i);
            switch (e) {
                case 'h' -> out.append("[0-9a-fA-F]");
                case 'H' -> out.append("[^0-9a-fA-F]");
                case 'p', 'P' -> {
                    int close = onig.indexOf('}', i);
                    if (i + 1 >= onig.length() || onig.charAt(i + 1) != '{' || close < 0) {
                        out.append('\\').append(e);
                        break;
                    }
                    String name = onig.substring(i + 2, close);
                    boolean negate = e == 'P';
                    if (name.startsWith("^")) {
                        negate = !negate;
                        name = name.substring(1);
                    }
                    boolean category = name.matches("[A-Z][a-z]?|L&|LC");
                    boolean prefixed = name.startsWith("Is") || name.startsWith("In") || name.contains("=");
                    out.append('\\').append(negate ? 'P' : 'p').append('{');
                    out.append(category ? name.replace("L&", "LC") : prefixed ? name : "Is" + name).append('}');
                    i = close;
                }
                default -> out.append('\\').append(e);
            }
        }
        return out.toString();
    }

    private static int[] concat(List<int[]> parts) {
        IntList all = new IntList(4);
        for (int[] p : parts) {
            all.addAll(p);
        }
        return all.toArray();
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException(source + ": " + what);
    }

    private IllegalArgumentException unsupported(String component) {
        return error("unsupported tokenizer component: " + component);
    }

    private void requireNull(Object value, String field) {
        if (value != null) {
            Object type = value instanceof Map<?, ?> m && m.get("type") != null ? m.get("type") : value;
            throw unsupported(field + " " + type);
        }
    }

    private String type(Object json, String where) {
        return string(object(json, where).get("type"), where + ".type");
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> object(Object json, String where) {
        if (json instanceof Map<?, ?> map) {
            return (Map<String, Object>) map;
        }
        throw error(where + " is " + (json == null ? "missing" : "not a JSON object"));
    }

    @SuppressWarnings("unchecked")
    private List<Object> list(Object json, String where) {
        if (json instanceof List<?> list) {
            return (List<Object>) list;
        }
        throw error(where + " is " + (json == null ? "missing" : "not a JSON array"));
    }

    private String string(Object json, String where) {
        if (json instanceof String s) {
            return s;
        }
        throw error(where + " is " + (json == null ? "missing" : "not a string"));
    }

    private Object number(Object json, String where) {
        if (json instanceof Number) {
            return json;
        }
        throw error(where + " is not a number");
    }

    private int id(Object json, String where) {
        if (json instanceof Long v && v >= 0 && v < MAX_ID) {
            return (int) (long) v;
        }
        throw error(where + " is " + json + ", expected a token id in 0.." + (MAX_ID - 1));
    }

    private static String quote(String s) {
        return "\"" + s + "\"";
    }

    // ---------------------------------------------------------------------------------------------
    // Small data structures

    private record AddedToken(
            int id, String content, boolean special, boolean singleWord, boolean lstrip, boolean rstrip,
            boolean normalized) {}

    /**
     * Finds added tokens in text as {@code tokenizers} does: leftmost match first, the longest of those
     * starting there, matches not overlapping; lstrip/rstrip take in adjacent whitespace, single_word
     * matches only between non-word chars.
     */
    private static final class AddedTokenMatcher {
        private final Map<Character, AddedToken[]> byFirstChar = new HashMap<>();

        AddedTokenMatcher(List<AddedToken> tokens) {
            Map<Character, List<AddedToken>> groups = new HashMap<>();
            for (AddedToken t : tokens) {
                groups.computeIfAbsent(t.content.charAt(0), k -> new ArrayList<>()).add(t);
            }
            groups.forEach((c, list) -> byFirstChar.put(c, list.stream()
                    .sorted(Comparator.comparingInt((AddedToken t) -> t.content.length()).reversed())
                    .toArray(AddedToken[]::new)));
        }

        /** Appends {start, end, id} segments for text[from, to): id -1 for text between added tokens. */
        void split(String text, int from, int to, List<int[]> out) {
            if (byFirstChar.isEmpty()) {
                if (to > from) {
                    out.add(new int[] {from, to, -1});
                }
                return;
            }
            int gapStart = from;
            int i = from;
            while (i < to) {
                AddedToken match = null;
                AddedToken[] candidates = byFirstChar.get(text.charAt(i));
                if (candidates != null) {
                    for (AddedToken t : candidates) {
                        if (i + t.content.length() <= to && text.startsWith(t.content, i)) {
                            match = t;
                            break;
                        }
                    }
                }
                if (match == null) {
                    i++;
                    continue;
                }
                int start = i;
                int end = i + match.content.length();
                if (match.singleWord && (isWordChar(text, start - 1, from, true) || isWordChar(text, end, to, false))) {
                    i = end;
                    continue;
                }
                if (match.lstrip) {
                    while (start > gapStart && isWhiteSpace(text.charAt(start - 1))) {
                        start--;
                    }
                }
                if (match.rstrip) {
                    while (end < to && isWhiteSpace(text.charAt(end))) {
                        end++;
                    }
                }
                if (start > gapStart) {
                    out.add(new int[] {gapStart, start, -1});
                }
                out.add(new int[] {start, end, match.id});
                gapStart = end;
                i = end;
            }
            if (to > gapStart) {
                out.add(new int[] {gapStart, to, -1});
            }
        }

        private static boolean isWordChar(String text, int index, int bound, boolean before) {
            if (before ? index < bound : index >= bound) {
                return false;
            }
            int cp = before ? text.codePointBefore(index + 1) : text.codePointAt(index);
            return Character.isLetterOrDigit(cp) || cp == '_';
        }

        /** Unicode White_Space, which Rust's char::is_whitespace tests. */
        private static boolean isWhiteSpace(char c) {
            return (c >= 0x09 && c <= 0x0D) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680
                    || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F
                    || c == 0x3000;
        }
    }

    /** Merge ranks by token pair, open addressing on {@code (a << 32) | b}; {@code newIds} by rank. */
    private static final class MergeTable {
        final int[] newIds;
        final int size;
        private final long[] keys;
        private final int[] ranks; // rank + 1; 0 marks an empty slot
        private final int mask;
        private final int shift;

        MergeTable(int capacity) {
            int slots = Integer.highestOneBit(Math.max(4, capacity) * 2) * 2;
            keys = new long[slots];
            ranks = new int[slots];
            mask = slots - 1;
            shift = 64 - Integer.numberOfTrailingZeros(slots);
            newIds = new int[capacity];
            size = capacity;
        }

        void put(int a, int b, int rank, int newId) {
            long key = ((long) a << 32) | b;
            int slot = slot(key);
            while (ranks[slot] != 0 && keys[slot] != key) {
                slot = (slot + 1) & mask;
            }
            keys[slot] = key; // a repeated pair takes the later rank, as tokenizers' HashMap does
            ranks[slot] = rank + 1;
            newIds[rank] = newId;
        }

        int rank(int a, int b) {
            long key = ((long) a << 32) | b;
            int slot = slot(key);
            while (ranks[slot] != 0) {
                if (keys[slot] == key) {
                    return ranks[slot] - 1;
                }
                slot = (slot + 1) & mask;
            }
            return -1;
        }

        /** Fibonacci hashing: the top bits of the product depend on both ids. */
        private int slot(long key) {
            return (int) ((key * 0x9E3779B97F4A7C15L) >>> shift);
        }
    }

    /** A binary min-heap of longs. */
    private static final class LongHeap {
        private long[] heap;
        private int size;

        LongHeap(int capacity) {
            heap = new long[Math.max(4, capacity)];
        }

        boolean isEmpty() {
            return size == 0;
        }

        void push(long v) {
            if (size == heap.length) {
                heap = Arrays.copyOf(heap, size * 2);
            }
            int i = size++;
            while (i > 0) {
                int parent = (i - 1) >>> 1;
                if (heap[parent] <= v) {
                    break;
                }
                heap[i] = heap[parent];
                i = parent;
            }
            heap[i] = v;
        }

        long pop() {
            long top = heap[0];
            long last = heap[--size];
            int i = 0;
            while (true) {
                int child = 2 * i + 1;
                if (child >= size) {
                    break;
                }
                if (child + 1 < size && heap[child + 1] < heap[child]) {
                    child++;
                }
                if (heap[child] >= last) {
                    break;
                }
                heap[i] = heap[child];
                i = child;
            }
            if (size > 0) {
                heap[i] = last;
            }
            return top;
        }
    }

    private static final class IntList {
        int[] data;
        int size;

        IntList(int capacity) {
            data = new int[Math.max(4, capacity)];
        }

        void add(int v) {
            if (size == data.length) {
                data = Arrays.copyOf(data, size * 2);
            }
            data[size++] = v;
        }

        void addAll(int[] values) {
            if (size + values.length > data.length) {
                data = Arrays.copyOf(data, Math.max(data.length * 2, size + values.length));
            }
            System.arraycopy(values, 0, data, size, values.length);
            size += values.length;
        }

        int[] toArray() {
            return Arrays.copyOf(data, size);
        }
    }

    private static final class ByteList {
        byte[] data;
        int size;

        ByteList(int capacity) {
            data = new byte[Math.max(16, capacity)];
        }

        void addAll(byte[] values, int from, int length) {
            if (size + length > data.length) {
                data = Arrays.copyOf(data, Math.max(data.length * 2, size + length));
            }
            System.arraycopy(values, from, data, size, length);
            size += length;
        }
    }
}
