package org.cudagraph4j.llm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259) for the files a checkpoint is published with: {@code config.json},
 * a safetensors header, {@code model.safetensors.index.json} and {@code tokenizer.json}. Objects
 * become {@link LinkedHashMap}s (key order kept), arrays {@link ArrayList}s, numbers {@link Long}
 * when integral and in range, else {@link Double}; {@code null} is Java's null.
 *
 * <p>The library has no runtime dependency, so it reads JSON itself; the files it reads are a few
 * megabytes at most. Malformed input throws {@link IllegalArgumentException} naming the offset.
 */
final class Json {
    private final String text;
    private final String source;
    private int at;

    private Json(String text, String source) {
        this.text = text;
        this.source = source;
    }

    /**
     * Parses one JSON value that fills {@code text}, whitespace aside.
     *
     * @param text the document
     * @param source what the document is, for error messages (a file name)
     * @return the value
     * @throws IllegalArgumentException if {@code text} is not one well-formed JSON value
     */
    static Object parse(String text, String source) {
        Json json = new Json(text, source);
        json.skipWhitespace();
        Object value = json.value(0);
        json.skipWhitespace();
        if (json.at != text.length()) {
            throw json.error("unexpected text after the value");
        }
        return value;
    }

    private static final int MAX_DEPTH = 512;

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        if (at >= text.length()) {
            throw error("unexpected end of input");
        }
        char c = text.charAt(at);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    yield number();
                }
                throw error("unexpected character '" + c + "'");
            }
        };
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        skipWhitespace();
        if (peek() == '}') {
            at++;
            return map;
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("expected a string key");
            }
            String key = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            if (map.containsKey(key)) {
                throw error("duplicate key \"" + key + "\"");
            }
            map.put(key, value(depth + 1));
            skipWhitespace();
            char c = next();
            if (c == '}') {
                return map;
            }
            if (c != ',') {
                throw error("expected ',' or '}' in an object");
            }
        }
    }

    private List<Object> array(int depth) {
        List<Object> list = new ArrayList<>();
        at++;
        skipWhitespace();
        if (peek() == ']') {
            at++;
            return list;
        }
        while (true) {
            skipWhitespace();
            list.add(value(depth + 1));
            skipWhitespace();
            char c = next();
            if (c == ']') {
                return list;
            }
            if (c != ',') {
                throw error("expected ',' or ']' in an array");
            }
        }
    }

    private String string() {
        at++;
        StringBuilder out = null;
        int start = at;
        while (true) {
            if (at >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(at);
            if (c == '"') {
                String s = out == null ? text.substring(start, at) : out.append(text, start, at).toString();
                at++;
                return s;
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                at++;
                continue;
            }
            if (out == null) {
                out = new StringBuilder();
            }
            out.append(text, start, at);
            at++;
            char e = next();
            switch (e) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '/' -> out.append('/');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (at + 4 > text.length()) {
                        throw error("truncated \\u escape");
                    }
                    int code = 0;
                    for (int i = 0; i < 4; i++) {
                        int digit = Character.digit(text.charAt(at + i), 16);
                        if (digit < 0) {
                            throw error("bad \\u escape");
                        }
                        code = code * 16 + digit;
                    }
                    at += 4;
                    out.append((char) code);
                }
                default -> throw error("bad escape '\\" + e + "'");
            }
            start = at;
        }
    }

    private Object number() {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        if (peek() == '0') {
            at++;
        } else if (isDigit(peek())) {
            while (isDigit(peek())) {
                at++;
            }
        } else {
            throw error("bad number");
        }
        boolean integral = true;
        if (peek() == '.') {
            integral = false;
            at++;
            if (!isDigit(peek())) {
                throw error("bad number: no digit after '.'");
            }
            while (isDigit(peek())) {
                at++;
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            at++;
            if (peek() == '+' || peek() == '-') {
                at++;
            }
            if (!isDigit(peek())) {
                throw error("bad number: no digit in the exponent");
            }
            while (isDigit(peek())) {
                at++;
            }
        }
        String digits = text.substring(start, at);
        if (integral && digits.length() < 19) {
            return Long.parseLong(digits);
        }
        return Double.parseDouble(digits);
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, at)) {
            throw error("unexpected literal");
        }
        at += word.length();
        return value;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private char peek() {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private char next() {
        if (at >= text.length()) {
            throw error("unexpected end of input");
        }
        return text.charAt(at++);
    }

    private void expect(char c) {
        if (next() != c) {
            at--;
            throw error("expected '" + c + "'");
        }
    }

    private void skipWhitespace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException(source + " is not valid JSON at offset " + at + ": " + what);
    }
}
