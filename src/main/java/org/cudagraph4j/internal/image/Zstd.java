package org.cudagraph4j.internal.image;

import java.util.Arrays;

/**
 * A Zstandard decoder (RFC 8878) for the one frame of a compressed fatbin entry, in plain Java so
 * that the library can check what nvcc compressed before the driver sees it. Every length,
 * offset, table and bit count is checked against the input, and the output never grows past the
 * size the caller expects: a corrupt or hostile frame ends in {@link Corrupt}, never in a read
 * outside the input, an unbounded allocation or a loop that does not end. No dictionaries.
 */
final class Zstd {
    /** A frame that cannot be decoded; the message says where and why. */
    static final class Corrupt extends Exception {
        private static final long serialVersionUID = 1L;

        Corrupt(String message) {
            super(message, null, false, false);
        }
    }

    private static final int MAGIC = 0xFD2FB528;
    private static final int MAX_BLOCK = 128 << 10;
    private static final int MAX_HUFFMAN_BITS = 11;
    private static final int LL_MAX_LOG = 9;
    private static final int ML_MAX_LOG = 9;
    private static final int OF_MAX_LOG = 8;

    private static final int[] LL_BASE = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28,
        32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
    private static final int[] LL_BITS = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6,
        7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    private static final int[] ML_BASE = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
        24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027,
        2051, 4099, 8195, 16387, 32771, 65539};
    private static final int[] ML_BITS = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    private static final short[] LL_DEFAULT = {4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2,
        3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1};
    private static final short[] ML_DEFAULT = {1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1};
    private static final short[] OF_DEFAULT = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        -1, -1, -1, -1, -1};
    private static final Fse LL_PREDEFINED = Fse.build(LL_DEFAULT, LL_DEFAULT.length, 6);
    private static final Fse ML_PREDEFINED = Fse.build(ML_DEFAULT, ML_DEFAULT.length, 6);
    private static final Fse OF_PREDEFINED = Fse.build(OF_DEFAULT, OF_DEFAULT.length, 5);

    private final byte[] in;
    private final int end;
    private int at;
    private byte[] out;
    private int written;
    private final int expected;
    private Huffman huffman;
    private Fse llTable;
    private Fse ofTable;
    private Fse mlTable;
    private final int[] repeats = {1, 4, 8};
    private byte[] literals = new byte[0];

    private Zstd(byte[] in, int offset, int length, int expected) {
        this.in = in;
        this.at = offset;
        this.end = offset + length;
        this.expected = expected;
        this.out = new byte[Math.min(expected, Math.max(1 << 16, length * 4))];
    }

    /**
     * Decodes the one frame in {@code in[offset, offset + length)}, which must regenerate exactly
     * {@code expected} bytes and end at the end of the range.
     *
     * @return the {@code expected} bytes
     * @throws Corrupt naming what is wrong
     */
    static byte[] decompress(byte[] in, int offset, int length, int expected) throws Corrupt {
        Zstd frame = new Zstd(in, offset, length, expected);
        frame.frame();
        if (frame.written != expected) {
            throw new Corrupt("the frame regenerates " + frame.written + " bytes, not the " + expected + " declared");
        }
        return frame.out.length == expected ? frame.out : Arrays.copyOf(frame.out, expected);
    }

    private void frame() throws Corrupt {
        if (end - at < 4 || u32(at) != MAGIC) {
            throw new Corrupt("it does not start with a zstd frame's magic number");
        }
        at += 4;
        need(1, "frame header descriptor");
        int descriptor = byteAt(at++);
        int fcsFlag = descriptor >>> 6;
        boolean singleSegment = (descriptor & 0x20) != 0;
        if ((descriptor & 0x08) != 0) {
            throw new Corrupt("its frame header sets the reserved bit");
        }
        boolean checksum = (descriptor & 0x04) != 0;
        int dictionaryBytes = new int[] {0, 1, 2, 4}[descriptor & 3];
        if (!singleSegment) {
            need(1, "window descriptor");
            at++; // the window bounds match offsets, which are checked against what was written instead
        }
        need(dictionaryBytes, "dictionary id");
        long dictionary = littleEndian(at, dictionaryBytes);
        at += dictionaryBytes;
        if (dictionary != 0) {
            throw new Corrupt("it needs dictionary " + dictionary + ", and fatbins carry none");
        }
        int fcsBytes = fcsFlag == 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
        need(fcsBytes, "content size");
        long contentSize = littleEndian(at, fcsBytes) + (fcsBytes == 2 ? 256 : 0);
        at += fcsBytes;
        if (fcsBytes > 0 && contentSize != expected) {
            throw new Corrupt("its header declares " + Long.toUnsignedString(contentSize) + " bytes, not the "
                    + expected + " of the fatbin entry");
        }
        boolean last = false;
        while (!last) {
            need(3, "block header");
            int header = (int) littleEndian(at, 3);
            at += 3;
            last = (header & 1) != 0;
            int type = (header >>> 1) & 3;
            int size = header >>> 3;
            switch (type) {
                case 0 -> {
                    need(size, "raw block");
                    requireBlock(size);
                    emit(in, at, size);
                    at += size;
                }
                case 1 -> {
                    need(1, "RLE block");
                    requireBlock(size);
                    grow(size);
                    Arrays.fill(out, written, written + size, in[at++]);
                    written += size;
                }
                case 2 -> {
                    need(size, "compressed block");
                    if (size > MAX_BLOCK) {
                        throw new Corrupt("a compressed block of " + size + " bytes is over the 128 KiB limit");
                    }
                    int blockStart = written;
                    compressedBlock(at + size); // leaves at at the block's end
                    requireBlock(written - blockStart);
                }
                default -> throw new Corrupt("a block has the reserved type 3");
            }
        }
        if (checksum) {
            need(4, "content checksum");
            at += 4; // the entry's contents are validated after decoding, more strictly than a checksum would
        }
        if (at != end) {
            throw new Corrupt((end - at) + " bytes follow the frame");
        }
    }

    private void requireBlock(int size) throws Corrupt {
        if (size > MAX_BLOCK) {
            throw new Corrupt("a block regenerates " + size + " bytes, over the 128 KiB limit");
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Compressed blocks: literals, then sequences
    // ---------------------------------------------------------------------------------------------

    private void compressedBlock(int blockEnd) throws Corrupt {
        int literalCount = literalsSection(blockEnd);
        sequencesSection(blockEnd, literalCount);
    }

    /** Decodes the literals section into {@link #literals}; returns how many there are. */
    private int literalsSection(int blockEnd) throws Corrupt {
        if (at >= blockEnd) {
            throw new Corrupt("a compressed block has no literals section");
        }
        int b0 = byteAt(at);
        int type = b0 & 3;
        int sizeFormat = (b0 >>> 2) & 3;
        if (type == 0 || type == 1) {
            int headerBytes = (sizeFormat & 1) == 0 ? 1 : sizeFormat == 1 ? 2 : 3;
            requireIn(headerBytes, blockEnd, "literals header");
            int h = (int) littleEndian(at, headerBytes);
            int regenerated = headerBytes == 1 ? h >>> 3 : h >>> 4;
            at += headerBytes;
            ensureLiterals(regenerated);
            if (type == 0) {
                requireIn(regenerated, blockEnd, "raw literals");
                System.arraycopy(in, at, literals, 0, regenerated);
                at += regenerated;
            } else {
                requireIn(1, blockEnd, "RLE literal");
                Arrays.fill(literals, 0, regenerated, in[at++]);
            }
            return regenerated;
        }
        int headerBytes = sizeFormat <= 1 ? 3 : sizeFormat == 2 ? 4 : 5;
        int bits = sizeFormat <= 1 ? 10 : sizeFormat == 2 ? 14 : 18;
        boolean oneStream = sizeFormat == 0;
        requireIn(headerBytes, blockEnd, "literals header");
        long h = littleEndian(at, headerBytes);
        int regenerated = (int) ((h >>> 4) & ((1 << bits) - 1));
        int compressed = (int) ((h >>> (4 + bits)) & ((1 << bits) - 1));
        at += headerBytes;
        requireIn(compressed, blockEnd, "compressed literals");
        if (regenerated > MAX_BLOCK) {
            throw new Corrupt("a block's literals regenerate " + regenerated + " bytes, over the 128 KiB limit");
        }
        int streamsEnd = at + compressed;
        if (type == 2) {
            huffman = Huffman.read(this, streamsEnd);
        } else if (huffman == null) {
            throw new Corrupt("treeless literals come before any Huffman table");
        }
        ensureLiterals(regenerated);
        if (oneStream) {
            huffman.decode(in, at, streamsEnd, literals, 0, regenerated);
        } else {
            requireIn(6, streamsEnd, "the literals' jump table");
            int s1 = u16(at);
            int s2 = u16(at + 2);
            int s3 = u16(at + 4);
            int start = at + 6;
            long s4 = (long) streamsEnd - start - s1 - s2 - s3;
            if (s4 < 1) {
                throw new Corrupt("the literals' jump table's streams (" + s1 + ", " + s2 + ", " + s3
                        + " bytes) overrun the " + (streamsEnd - start) + " bytes they share");
            }
            int quarter = (regenerated + 3) / 4;
            if (3L * quarter > regenerated) {
                throw new Corrupt("four literal streams cannot hold " + regenerated + " literals");
            }
            huffman.decode(in, start, start + s1, literals, 0, quarter);
            huffman.decode(in, start + s1, start + s1 + s2, literals, quarter, quarter);
            huffman.decode(in, start + s1 + s2, start + s1 + s2 + s3, literals, 2 * quarter, quarter);
            huffman.decode(in, start + s1 + s2 + s3, streamsEnd, literals, 3 * quarter, regenerated - 3 * quarter);
        }
        at = streamsEnd;
        return regenerated;
    }

    private void ensureLiterals(int count) {
        if (literals.length < count) {
            literals = new byte[count];
        }
    }

    private void sequencesSection(int blockEnd, int literalCount) throws Corrupt {
        requireIn(1, blockEnd, "the number of sequences");
        int b0 = byteAt(at++);
        int count;
        if (b0 < 128) {
            count = b0;
        } else if (b0 < 255) {
            requireIn(1, blockEnd, "the number of sequences");
            count = ((b0 - 128) << 8) + byteAt(at++);
        } else {
            requireIn(2, blockEnd, "the number of sequences");
            count = u16(at) + 0x7F00;
            at += 2;
        }
        if (count == 0) {
            if (at != blockEnd) {
                throw new Corrupt("a block without sequences has " + (blockEnd - at) + " bytes left over");
            }
            emit(literals, 0, literalCount);
            return;
        }
        requireIn(1, blockEnd, "the sequences' compression modes");
        int modes = byteAt(at++);
        if ((modes & 3) != 0) {
            throw new Corrupt("the sequences' compression modes set reserved bits");
        }
        llTable = table(modes >>> 6, llTable, LL_PREDEFINED, LL_BASE.length, LL_MAX_LOG, blockEnd, "literal lengths");
        ofTable = table((modes >>> 4) & 3, ofTable, OF_PREDEFINED, 32, OF_MAX_LOG, blockEnd, "offsets");
        mlTable = table((modes >>> 2) & 3, mlTable, ML_PREDEFINED, ML_BASE.length, ML_MAX_LOG, blockEnd,
                "match lengths");
        BackwardBits bits = new BackwardBits(in, at, blockEnd);
        int ll = bits.read(llTable.log);
        int of = bits.read(ofTable.log);
        int ml = bits.read(mlTable.log);
        int literal = 0;
        for (int n = 0; n < count; n++) {
            int ofCode = ofTable.symbol[of];
            int llCode = llTable.symbol[ll];
            int mlCode = mlTable.symbol[ml];
            if (ofCode > 31 || llCode >= LL_BASE.length || mlCode >= ML_BASE.length) {
                throw new Corrupt("a sequence has an out-of-range code");
            }
            long offsetValue = (1L << ofCode) + bits.readLong(ofCode);
            int matchLength = ML_BASE[mlCode] + bits.read(ML_BITS[mlCode]);
            int literalLength = LL_BASE[llCode] + bits.read(LL_BITS[llCode]);
            int offset = offset(offsetValue, literalLength);
            if (n + 1 < count) {
                ll = llTable.next(ll, bits);
                ml = mlTable.next(ml, bits);
                of = ofTable.next(of, bits);
            }
            if (literalLength > literalCount - literal) {
                throw new Corrupt("a sequence takes " + literalLength + " literals where " + (literalCount - literal)
                        + " are left");
            }
            emit(literals, literal, literalLength);
            literal += literalLength;
            if (offset > written) {
                throw new Corrupt("a match reaches " + offset + " bytes back, before the start of the frame");
            }
            grow(matchLength);
            for (int i = 0; i < matchLength; i++) { // byte by byte: a match may overlap what it copies
                out[written] = out[written - offset];
                written++;
            }
        }
        if (!bits.exhausted()) {
            throw new Corrupt("the sequences' bit stream does not end where its last sequence does");
        }
        emit(literals, literal, literalCount - literal);
        at = blockEnd;
    }

    /** The match offset of a sequence, updating the three repeat offsets as RFC 8878 3.1.2.5 says. */
    private int offset(long offsetValue, int literalLength) throws Corrupt {
        int offset;
        if (offsetValue > 3) {
            if (offsetValue - 3 > Integer.MAX_VALUE) {
                throw new Corrupt("a match offset of " + (offsetValue - 3) + " bytes");
            }
            offset = (int) (offsetValue - 3);
            repeats[2] = repeats[1];
            repeats[1] = repeats[0];
            repeats[0] = offset;
            return offset;
        }
        int index = (int) offsetValue - 1 + (literalLength == 0 ? 1 : 0);
        if (index == 0) {
            return repeats[0];
        }
        offset = index == 3 ? repeats[0] - 1 : repeats[index];
        if (offset <= 0) {
            throw new Corrupt("a repeated match offset of " + offset);
        }
        if (index != 1) {
            repeats[2] = repeats[1];
        }
        repeats[1] = repeats[0];
        repeats[0] = offset;
        return offset;
    }

    private Fse table(int mode, Fse previous, Fse predefined, int symbols, int maxLog, int blockEnd, String what)
            throws Corrupt {
        return switch (mode) {
            case 0 -> predefined;
            case 1 -> {
                requireIn(1, blockEnd, "the RLE symbol of " + what);
                int symbol = byteAt(at++);
                if (symbol >= symbols) {
                    throw new Corrupt("the RLE symbol " + symbol + " of " + what + " is out of range");
                }
                yield Fse.rle(symbol);
            }
            case 2 -> {
                ForwardBits bits = new ForwardBits(in, at, blockEnd);
                Fse table = Fse.read(bits, symbols, maxLog, what);
                at = bits.byteEnd();
                yield table;
            }
            default -> {
                if (previous == null) {
                    throw new Corrupt("the " + what + " repeat the previous block's table, and there is none");
                }
                yield previous;
            }
        };
    }

    // ---------------------------------------------------------------------------------------------
    // Output and input
    // ---------------------------------------------------------------------------------------------

    private void emit(byte[] from, int offset, int length) throws Corrupt {
        grow(length);
        System.arraycopy(from, offset, out, written, length);
        written += length;
    }

    /** Makes room for {@code more} bytes, never past {@link #expected}: the output grows with what is decoded. */
    private void grow(int more) throws Corrupt {
        if (more > expected - written) {
            throw new Corrupt("the frame regenerates more than the " + expected + " bytes declared");
        }
        if (written + more > out.length) {
            out = Arrays.copyOf(out, (int) Math.min(expected, Math.max(2L * out.length, written + more)));
        }
    }

    private void need(int bytes, String what) throws Corrupt {
        requireIn(bytes, end, what);
    }

    private void requireIn(long bytes, int limit, String what) throws Corrupt {
        if (bytes < 0 || bytes > limit - at) {
            throw new Corrupt("its " + what + " (" + bytes + " bytes at offset " + at + ") runs past the end of its "
                    + (limit == end ? "frame" : "block"));
        }
    }

    private int byteAt(int index) {
        return in[index] & 0xFF;
    }

    private int u16(int index) {
        return byteAt(index) | byteAt(index + 1) << 8;
    }

    private int u32(int index) {
        return (int) littleEndian(index, 4);
    }

    private long littleEndian(int index, int bytes) {
        long value = 0;
        for (int i = bytes - 1; i >= 0; i--) {
            value = value << 8 | byteAt(index + i);
        }
        return value;
    }

    // ---------------------------------------------------------------------------------------------
    // Bit streams
    // ---------------------------------------------------------------------------------------------

    /** A little-endian bit stream read from its first bit on (FSE table descriptions). */
    static final class ForwardBits {
        private final byte[] in;
        private final int limit;
        private long position;

        ForwardBits(byte[] in, int start, int limit) {
            this.in = in;
            this.limit = limit;
            this.position = (long) start * 8;
        }

        /** The next {@code bits} bits; zeros past the stream's end, which {@link #skip} then refuses to pass. */
        int peek(int bits) {
            int value = 0;
            for (int i = 0; i < bits; i++) {
                long bit = position + i;
                if (bit < (long) limit * 8) {
                    value |= ((in[(int) (bit >>> 3)] >>> (bit & 7)) & 1) << i;
                }
            }
            return value;
        }

        void skip(int bits) throws Corrupt {
            position += bits;
            if (position > (long) limit * 8) {
                throw new Corrupt("a table description runs past the end of its block");
            }
        }

        int read(int bits) throws Corrupt {
            int value = peek(bits);
            skip(bits);
            return value;
        }

        int byteEnd() {
            return (int) ((position + 7) >>> 3);
        }
    }

    /**
     * A bit stream read backwards from its last byte, whose highest set bit marks the start (the
     * Huffman and FSE streams). Bits asked for beyond its first are zeros, and {@link #exhausted}
     * then says that the stream was overrun.
     */
    static final class BackwardBits {
        private final byte[] in;
        private final int start;
        /** Bits not yet read, counted from the stream's first bit. */
        private long left;

        BackwardBits(byte[] in, int start, int limit) throws Corrupt {
            if (limit <= start) {
                throw new Corrupt("an empty bit stream");
            }
            int last = in[limit - 1] & 0xFF;
            if (last == 0) {
                throw new Corrupt("a bit stream's last byte lacks its end mark");
            }
            this.in = in;
            this.start = start;
            this.left = (long) (limit - 1 - start) * 8 + (31 - Integer.numberOfLeadingZeros(last));
        }

        int read(int bits) {
            return (int) readLong(bits);
        }

        long readLong(int bits) {
            long value = 0;
            for (int i = bits - 1; i >= 0; i--) {
                long bit = left - bits + i;
                long b = bit < 0 ? 0 : (in[start + (int) (bit >>> 3)] >>> (bit & 7)) & 1;
                value = value << 1 | b;
            }
            left -= bits;
            return value;
        }

        boolean overrun() {
            return left < 0;
        }

        boolean exhausted() {
            return left == 0;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // FSE tables
    // ---------------------------------------------------------------------------------------------

    /** A finite-state-entropy decoding table: per state, its symbol, the bits to read and the next base. */
    static final class Fse {
        final int log;
        final int[] symbol;
        final int[] bits;
        final int[] base;

        private Fse(int log) {
            this.log = log;
            this.symbol = new int[1 << log];
            this.bits = new int[1 << log];
            this.base = new int[1 << log];
        }

        static Fse rle(int symbol) {
            Fse table = new Fse(0);
            table.symbol[0] = symbol;
            return table;
        }

        int next(int state, BackwardBits stream) {
            return base[state] + stream.read(bits[state]);
        }

        /** Reads a table description (RFC 8878 4.1.1) of at most {@code symbols} symbols and log {@code maxLog}. */
        static Fse read(ForwardBits in, int symbols, int maxLog, String what) throws Corrupt {
            int log = in.read(4) + 5;
            if (log > maxLog) {
                throw new Corrupt("the " + what + " table's accuracy log " + log + " is over " + maxLog);
            }
            short[] probabilities = new short[symbols];
            int remaining = (1 << log) + 1;
            int threshold = 1 << log;
            int nbBits = log + 1;
            int symbol = 0;
            while (remaining > 1) {
                if (symbol >= symbols) {
                    throw new Corrupt("the " + what + " table describes more than " + symbols + " symbols");
                }
                int max = (2 * threshold - 1) - remaining;
                int value = in.peek(nbBits);
                int count;
                if ((value & (threshold - 1)) < max) {
                    count = value & (threshold - 1);
                    in.skip(nbBits - 1);
                } else {
                    count = value & (2 * threshold - 1);
                    if (count >= threshold) {
                        count -= max;
                    }
                    in.skip(nbBits);
                }
                count--;
                remaining -= Math.abs(count);
                probabilities[symbol++] = (short) count;
                if (count == 0) {
                    int repeat;
                    do {
                        repeat = in.read(2);
                        symbol += repeat;
                    } while (repeat == 3);
                    if (symbol > symbols) {
                        throw new Corrupt("the " + what + " table's zero run passes its last symbol");
                    }
                }
                while (remaining < threshold && threshold > 1) {
                    nbBits--;
                    threshold >>= 1;
                }
            }
            if (remaining != 1) {
                throw new Corrupt("the " + what + " table's probabilities do not add up to " + (1 << log));
            }
            return build(probabilities, symbol, log);
        }

        /** The decoding table of normalized probabilities (-1: less than one state) over {@code 2^log} states. */
        static Fse build(short[] probabilities, int symbols, int log) {
            Fse table = new Fse(log);
            int size = 1 << log;
            int high = size - 1;
            int[] next = new int[symbols];
            for (int s = 0; s < symbols; s++) {
                if (probabilities[s] == -1) {
                    table.symbol[high--] = s;
                    next[s] = 1;
                } else {
                    next[s] = probabilities[s];
                }
            }
            int step = (size >>> 1) + (size >>> 3) + 3;
            int mask = size - 1;
            int position = 0;
            for (int s = 0; s < symbols; s++) {
                for (int i = 0; i < probabilities[s]; i++) {
                    table.symbol[position] = s;
                    do {
                        position = (position + step) & mask;
                    } while (position > high);
                }
            }
            for (int state = 0; state < size; state++) {
                int s = table.symbol[state];
                int nextState = next[s]++;
                int bits = log - (31 - Integer.numberOfLeadingZeros(nextState));
                table.bits[state] = bits;
                table.base[state] = (nextState << bits) - size;
            }
            return table;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Huffman literals
    // ---------------------------------------------------------------------------------------------

    /** A Huffman decoding table: each {@code log}-bit prefix gives a symbol and its code length. */
    static final class Huffman {
        private final int log;
        private final byte[] symbol;
        private final byte[] length;

        private Huffman(int log) {
            this.log = log;
            this.symbol = new byte[1 << log];
            this.length = new byte[1 << log];
        }

        /** Reads the tree description at the decoder's position (RFC 8878 4.2.1), advancing past it. */
        static Huffman read(Zstd zstd, int limit) throws Corrupt {
            zstd.requireIn(1, limit, "Huffman tree header");
            int header = zstd.byteAt(zstd.at++);
            int[] weights = new int[258]; // room for a corrupt stream's overrun, refused below
            int count;
            if (header >= 128) {
                count = header - 127;
                int bytes = (count + 1) / 2;
                zstd.requireIn(bytes, limit, "Huffman weights");
                for (int i = 0; i < count; i++) {
                    int b = zstd.byteAt(zstd.at + i / 2);
                    weights[i] = (i & 1) == 0 ? b >>> 4 : b & 15;
                }
                zstd.at += bytes;
            } else {
                zstd.requireIn(header, limit, "FSE-compressed Huffman weights");
                int streamEnd = zstd.at + header;
                ForwardBits description = new ForwardBits(zstd.in, zstd.at, streamEnd);
                Fse table = Fse.read(description, 256, 6, "Huffman weights");
                BackwardBits bits = new BackwardBits(zstd.in, description.byteEnd(), streamEnd);
                int first = bits.read(table.log);
                int second = bits.read(table.log);
                count = 0;
                while (true) {
                    if (count >= 255) {
                        throw new Corrupt("the Huffman weights run past 255 symbols");
                    }
                    weights[count++] = table.symbol[first];
                    first = table.next(first, bits);
                    if (bits.overrun()) {
                        weights[count++] = table.symbol[second];
                        break;
                    }
                    weights[count++] = table.symbol[second];
                    second = table.next(second, bits);
                    if (bits.overrun()) {
                        weights[count++] = table.symbol[first];
                        break;
                    }
                }
                zstd.at = streamEnd;
            }
            long sum = 0;
            for (int i = 0; i < count; i++) {
                if (weights[i] > MAX_HUFFMAN_BITS) {
                    throw new Corrupt("a Huffman weight of " + weights[i] + " is over " + MAX_HUFFMAN_BITS);
                }
                sum += weights[i] == 0 ? 0 : 1L << (weights[i] - 1);
            }
            if (sum == 0 || count >= 256) {
                throw new Corrupt("the Huffman weights describe no tree");
            }
            int log = 64 - Long.numberOfLeadingZeros(sum); // the smallest power of two above sum
            if (log > MAX_HUFFMAN_BITS) {
                throw new Corrupt("the Huffman tree is " + log + " bits deep, over " + MAX_HUFFMAN_BITS);
            }
            long rest = (1L << log) - sum;
            if (Long.bitCount(rest) != 1) {
                throw new Corrupt("the Huffman weights leave no power of two for the last symbol");
            }
            weights[count++] = 64 - Long.numberOfLeadingZeros(rest); // log2(rest) + 1
            return build(weights, count, log);
        }

        private static Huffman build(int[] weights, int count, int log) {
            Huffman table = new Huffman(log);
            int[] rankStart = new int[log + 2];
            for (int i = 0; i < count; i++) {
                rankStart[weights[i]]++;
            }
            int next = 0;
            for (int w = 1; w <= log; w++) {
                int current = next;
                next += rankStart[w] << (w - 1);
                rankStart[w] = current;
            }
            for (int s = 0; s < count; s++) {
                int w = weights[s];
                if (w == 0) {
                    continue;
                }
                int span = 1 << (w - 1);
                int from = rankStart[w];
                Arrays.fill(table.symbol, from, from + span, (byte) s);
                Arrays.fill(table.length, from, from + span, (byte) (log + 1 - w));
                rankStart[w] += span;
            }
            return table;
        }

        /** Decodes {@code count} symbols of the stream {@code in[start, limit)} into {@code out[at...]}. */
        void decode(byte[] in, int start, int limit, byte[] out, int at, int count) throws Corrupt {
            BackwardBits bits = new BackwardBits(in, start, limit);
            for (int i = 0; i < count; i++) {
                long left = bits.left;
                int prefix = (int) bits.readLong(log);
                int used = length[prefix];
                bits.left = left - used;
                out[at + i] = symbol[prefix];
                if (bits.left < 0) {
                    throw new Corrupt("a Huffman stream ends before its " + count + " literals");
                }
            }
            if (!bits.exhausted()) {
                throw new Corrupt("a Huffman stream does not end with its " + count + "th literal");
            }
        }
    }
}
