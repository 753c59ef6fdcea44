package org.cudagraph4j.internal.image;

import java.util.Arrays;

/**
 * A decoder of LZ4's block format, which nvcc writes for fatbin entries with
 * {@code --compress-mode=speed} (flag 0x2000). Every length and offset is checked against the
 * input and against the size the entry declares: a corrupt block ends in {@link Zstd.Corrupt}.
 */
final class Lz4Block {
    private static final int MIN_MATCH = 4;

    private Lz4Block() {}

    /**
     * Decodes the block {@code in[offset, offset + length)}, which must regenerate exactly
     * {@code expected} bytes.
     *
     * @throws Zstd.Corrupt naming what is wrong
     */
    static byte[] decompress(byte[] in, int offset, int length, int expected) throws Zstd.Corrupt {
        byte[] out = new byte[Math.min(expected, Math.max(1 << 16, length * 4))];
        int written = 0;
        int at = offset;
        int end = offset + length;
        while (true) {
            if (at >= end) {
                throw new Zstd.Corrupt("the block ends before its last literals");
            }
            int token = in[at++] & 0xFF;
            long literals = token >>> 4;
            if (literals == 15) {
                int b;
                do {
                    if (at >= end) {
                        throw new Zstd.Corrupt("a literal length runs past the end of the block");
                    }
                    b = in[at++] & 0xFF;
                    literals += b;
                } while (b == 255);
            }
            if (literals > end - at || literals > expected - written) {
                throw new Zstd.Corrupt("a run of " + literals + " literals passes the end of the block or of the "
                        + expected + " bytes declared");
            }
            out = room(out, written + (int) literals, expected);
            System.arraycopy(in, at, out, written, (int) literals);
            at += (int) literals;
            written += (int) literals;
            if (at == end) {
                break; // the last sequence has literals only
            }
            if (end - at < 2) {
                throw new Zstd.Corrupt("a match offset runs past the end of the block");
            }
            int distance = (in[at] & 0xFF) | (in[at + 1] & 0xFF) << 8;
            at += 2;
            if (distance == 0 || distance > written) {
                throw new Zstd.Corrupt("a match reaches " + distance + " bytes back, with " + written + " written");
            }
            long match = (token & 15);
            if (match == 15) {
                int b;
                do {
                    if (at >= end) {
                        throw new Zstd.Corrupt("a match length runs past the end of the block");
                    }
                    b = in[at++] & 0xFF;
                    match += b;
                } while (b == 255);
            }
            match += MIN_MATCH;
            if (match > expected - written) {
                throw new Zstd.Corrupt("a match passes the " + expected + " bytes declared");
            }
            out = room(out, written + (int) match, expected);
            for (int i = 0; i < match; i++) { // byte by byte: a match may overlap what it copies
                out[written] = out[written - distance];
                written++;
            }
        }
        if (written != expected) {
            throw new Zstd.Corrupt("the block regenerates " + written + " bytes, not the " + expected + " declared");
        }
        return out.length == expected ? out : Arrays.copyOf(out, expected);
    }

    private static byte[] room(byte[] out, int needed, int expected) {
        return needed <= out.length ? out : Arrays.copyOf(out, (int) Math.min(expected, Math.max(2L * out.length, needed)));
    }
}
