package org.cudagraph4j.internal.image;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Checks a cubin, fatbin or PTX image before {@code cudaLibraryLoadData} sees it. That call takes
 * no length: the driver trusts the offsets and sizes inside the image, so truncated or corrupted
 * bytes make it read outside the buffer and crash the process. Every offset, size and index that
 * the driver follows is checked here against the bytes actually given, with unsigned, overflow-free
 * arithmetic, so bad bytes become an {@link IllegalArgumentException} that says what is wrong.
 *
 * <p>Formats: ELF64 (the cubin container, with NVIDIA's {@code .nv.info} attribute records), the
 * fatbin container of {@code fatbinary.h} ({@code fatBinaryHeader}, magic {@code 0xBA55ED50}),
 * whose entry headers are known from reverse-engineered readers (n-eiling's
 * cuda-fatbin-decompression, jiegec/fatbinary), and PTX text. Parsing reads the array in place.
 * A compressed fatbin entry (nvcc compresses by default: zstd, or LZ4's block format with
 * {@code --compress-mode=speed}) is decompressed here, within the size its header declares, and
 * its contents checked like any other; the driver then gets an uncompressed fatbin rebuilt from
 * the checked entries ({@link #prepare}), so that it never decompresses bytes nobody checked.
 */
public final class ImageValidator {
    /** What an image holds. */
    public enum Kind {
        CUBIN("cubin"),
        FATBIN("fatbin"),
        PTX("PTX image");

        private final String description;

        Kind(String description) {
            this.description = description;
        }
    }

    private static final ValueLayout.OfShort U16 = JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    // ELF64 (System V gABI), as nvcc writes it for cubins.
    private static final int ELF_HEADER_SIZE = 64;
    private static final int SECTION_HEADER_SIZE = 64;
    private static final int PROGRAM_HEADER_SIZE = 56;
    private static final int SYMBOL_SIZE = 24;
    private static final int REL_SIZE = 16;
    private static final int RELA_SIZE = 24;
    private static final int ELFCLASS64 = 2;
    private static final int ELFDATA2LSB = 1;
    private static final int EV_CURRENT = 1;
    private static final int EM_CUDA = 190;
    private static final int SHN_LORESERVE = 0xff00;
    private static final int SHT_PROGBITS = 1;
    private static final int SHT_SYMTAB = 2;
    private static final int SHT_STRTAB = 3;
    private static final int SHT_RELA = 4;
    private static final int SHT_NOTE = 7;
    private static final int SHT_NOBITS = 8;
    private static final int SHT_REL = 9;
    /** {@code .nv.info} and {@code .nv.info.<kernel>}: EIATTR records. */
    private static final int SHT_CUDA_INFO = 0x7000_0000;
    /** sm_100+ cubins carry a second ("merc") symbol table and relocations against it. */
    private static final int SHT_CUDA_MERC_RELA = 0x7000_0082;
    private static final int SHT_CUDA_MERC_SYMTAB = 0x7000_0085;
    private static final long SHF_EXECINSTR = 0x4;

    // EIATTR record formats: every record starts with u8 format, u8 attribute and a u16 that is the
    // value (HVAL, BVAL in its low byte, unused for NVAL) or, for SVAL, the size of the bytes after it.
    private static final int EIATTR_HEADER_SIZE = 4;
    private static final int EIFMT_NVAL = 1;
    private static final int EIFMT_BVAL = 2;
    private static final int EIFMT_HVAL = 3;
    private static final int EIFMT_SVAL = 4;

    // fatbinary.h: fatBinaryHeader, then entries of a header (at least 64 bytes) and a payload.
    private static final int FATBIN_MAGIC = 0xBA55ED50;
    private static final int FATBIN_HEADER_SIZE = 16;
    private static final int FATBIN_ENTRY_HEADER_SIZE = 64;
    private static final int FATBIN_KIND_PTX = 1;
    private static final int FATBIN_KIND_ELF = 2;
    private static final int FATBIN_KIND_NVVM_IR = 8;
    /**
     * FATBIN_FLAG_COMPRESS, the LZ4-like _COMPRESS2 and zstd (CUDA 12.8+). Not every 0x8000 payload
     * starts with a zstd frame (nvcc 13's LTO IR entries do not), so the stream itself is opaque.
     */
    private static final long FATBIN_FLAGS_COMPRESSED = 0x1000 | 0x2000 | 0x8000;
    private static final long FATBIN_FLAG_COMPRESS_LEGACY = 0x1000;
    private static final long FATBIN_FLAG_COMPRESS_LZ4 = 0x2000;
    /** Decompressed entries larger than this are refused rather than allocated: 1 GiB. */
    private static final long MAX_DECOMPRESSED_BYTES = 1L << 30;

    /** PTX is ASCII text; this many leading bytes decide whether an unknown image is PTX. */
    private static final int PTX_SNIFF_LENGTH = 64;
    private static final byte[] PTX_VERSION = {'.', 'v', 'e', 'r', 's', 'i', 'o', 'n'};
    private static final byte[] PTX_TARGET = {'.', 't', 'a', 'r', 'g', 'e', 't'};
    private static final byte[] NV_INFO = {'.', 'n', 'v', '.', 'i', 'n', 'f', 'o'};
    private static final byte[] NV_MERC = {'.', 'n', 'v', '.', 'm', 'e', 'r', 'c'};

    private ImageValidator() {}

    /**
     * Checks that {@code image} is a well-formed cubin, fatbin or PTX image, deeply enough that the
     * driver never reads outside it.
     *
     * @param name names the image in the exception's message
     * @return what the image holds
     * @throws IllegalArgumentException naming the image and exactly what is wrong with it
     */
    public static Kind validate(String name, byte[] image) {
        return check(name, image).kind();
    }

    /**
     * Checks {@code image} as {@link #validate} does and returns the bytes to give the driver:
     * {@code image} itself, or, for a fatbin with compressed entries, an uncompressed fatbin
     * rebuilt from its entries once each is decompressed and checked.
     *
     * @param name names the image in the exception's message
     * @param image the image
     * @return the image to load
     * @throws IllegalArgumentException naming the image and exactly what is wrong with it
     */
    public static byte[] prepare(String name, byte[] image) {
        return check(name, image).image();
    }

    private record Checked(Kind kind, byte[] image) {}

    private static Checked check(String name, byte[] image) {
        Objects.requireNonNull(image, "image");
        if (image.length == 0) {
            throw new IllegalArgumentException("library image " + name + " is empty");
        }
        MemorySegment bytes = MemorySegment.ofArray(image);
        Kind kind = detect(bytes);
        if (kind == null) {
            throw new IllegalArgumentException("library image " + name
                    + " is not a cubin, fatbin or PTX image (it starts with " + leadingBytes(image) + ")");
        }
        byte[] loadable = image;
        try {
            switch (kind) {
                case CUBIN -> checkElf(bytes, "image");
                case FATBIN -> {
                    byte[] rebuilt = checkFatbin(bytes);
                    if (rebuilt != null) {
                        checkFatbin(MemorySegment.ofArray(rebuilt)); // what the driver gets passes on its own
                        loadable = rebuilt;
                    }
                }
                case PTX -> checkPtx(bytes, false);
            }
        } catch (Invalid e) {
            throw new IllegalArgumentException("library image " + name + " is not a valid " + kind.description + ": "
                    + e.getMessage());
        }
        return new Checked(kind, loadable);
    }

    private static Kind detect(MemorySegment image) {
        if (image.byteSize() >= 4 && u8(image, 0) == 0x7f && u8(image, 1) == 'E' && u8(image, 2) == 'L'
                && u8(image, 3) == 'F') {
            return Kind.CUBIN;
        }
        if (image.byteSize() >= 4 && image.get(U32, 0) == FATBIN_MAGIC) {
            return Kind.FATBIN;
        }
        // NULs count as text here so that a NUL inside PTX gets the PTX check's precise message.
        long sniff = Math.min(image.byteSize(), PTX_SNIFF_LENGTH);
        if (!isText(u8(image, 0))) {
            return null;
        }
        for (long i = 1; i < sniff; i++) {
            int b = u8(image, i);
            if (b != 0 && !isText(b)) {
                return null;
            }
        }
        return Kind.PTX;
    }

    private static boolean isText(int b) {
        return (b >= 0x20 && b < 0x7f) || (b >= '\t' && b <= '\r');
    }

    // ---------------------------------------------------------------------------------------------
    // ELF (cubin)
    // ---------------------------------------------------------------------------------------------

    /** Checks an ELF64 cubin; {@code whole} names it in messages ("image", or a fatbin's "payload"). */
    private static void checkElf(MemorySegment elf, String whole) {
        long size = elf.byteSize();
        if (size < ELF_HEADER_SIZE) {
            throw invalid("the %d-byte %s is shorter than the 64-byte ELF64 header", size, whole);
        }
        requireField("EI_CLASS", u8(elf, 4), ELFCLASS64, "ELFCLASS64");
        requireField("EI_DATA", u8(elf, 5), ELFDATA2LSB, "ELFDATA2LSB (little-endian)");
        requireField("EI_VERSION", u8(elf, 6), EV_CURRENT, "EV_CURRENT");
        requireField("e_machine", u16(elf, 0x12), EM_CUDA, "EM_CUDA");
        requireField("e_version", u32(elf, 0x14), EV_CURRENT, "EV_CURRENT");
        requireField("e_ehsize", u16(elf, 0x34), ELF_HEADER_SIZE, "the ELF64 header size");

        long phoff = elf.get(U64, 0x20);
        int phnum = u16(elf, 0x38);
        if (phnum > 0) {
            requireField("e_phentsize", u16(elf, 0x36), PROGRAM_HEADER_SIZE, "the ELF64 program header size");
            requireTable("program header table", phoff, (long) phnum * PROGRAM_HEADER_SIZE, size, whole);
        }
        long shoff = elf.get(U64, 0x28);
        int shnum = u16(elf, 0x3c);
        if (shnum == 0) {
            throw invalid("it has no section headers (e_shnum is 0), so no kernels");
        }
        requireField("e_shentsize", u16(elf, 0x3a), SECTION_HEADER_SIZE, "the ELF64 section header size");
        requireTable("section header table", shoff, (long) shnum * SECTION_HEADER_SIZE, size, whole);

        int shstrndx = u16(elf, 0x3e);
        if (shstrndx == 0 || shstrndx >= shnum) {
            throw invalid("e_shstrndx %d names no section (there are %d)", shstrndx, shnum);
        }
        ElfSections s = new ElfSections(elf, shoff, shnum, elf.get(U64, sectionHeader(shoff, shstrndx) + 24));
        if (s.type(shstrndx) != SHT_STRTAB) {
            throw invalid("section %d, named by e_shstrndx, is of type %#x, not SHT_STRTAB", shstrndx,
                    s.type(shstrndx));
        }
        long namesSize = s.size(shstrndx);
        if (!inside(s.namesOffset(), namesSize, size)) {
            throw invalid("the section name table (section %d) %s extends past the end of the %d-byte %s", shstrndx,
                    range(s.namesOffset(), namesSize), size, whole);
        }
        if (namesSize == 0 || u8(elf, s.namesOffset() + namesSize - 1) != 0) {
            throw invalid("the section name table (section %d) does not end with NUL", shstrndx);
        }

        // First every header on its own, so that later messages can name sections safely.
        for (int i = 0; i < shnum; i++) {
            if (s.nameIndex(i) >= namesSize) {
                throw invalid("section %d: sh_name %d is past the end of the %d-byte section name table", i,
                        s.nameIndex(i), namesSize);
            }
            if (s.type(i) != SHT_NOBITS && !inside(s.offset(i), s.size(i), size)) {
                throw invalid("%s %s extends past the end of the %d-byte %s", s.describe(i),
                        range(s.offset(i), s.size(i)), size, whole);
            }
            if (s.link(i) >= shnum) {
                throw invalid("%s: sh_link %d names no section (there are %d)", s.describe(i), s.link(i), shnum);
            }
            // sh_info names a section everywhere but in symbol tables (the first global symbol) and in
            // kernel code (a symbol and, before sm_90, the register count). The driver follows it
            // unchecked: a huge sh_info on .nv.info crashed it in the H200 fuzz run.
            if (infoNamesASection(s, i) && s.info(i) >= shnum) {
                throw invalid("%s: sh_info %d names no section (there are %d)", s.describe(i), s.info(i), shnum);
            }
        }
        for (int i = 0; i < shnum; i++) {
            checkSectionContents(s, i);
        }

        for (int i = 0; i < phnum; i++) {
            long header = phoff + (long) i * PROGRAM_HEADER_SIZE;
            long offset = elf.get(U64, header + 8);
            long fileSize = elf.get(U64, header + 32);
            if (!inside(offset, fileSize, size)) {
                throw invalid("program header %d: segment %s extends past the end of the %d-byte %s", i,
                        range(offset, fileSize), size, whole);
            }
        }
    }

    /**
     * Reads the section headers of a table known to lie inside the image; {@link #describe} only
     * once the section's name is known to lie inside the NUL-terminated name table.
     */
    private record ElfSections(MemorySegment elf, long shoff, int count, long namesOffset) {
        long header(int index) {
            return sectionHeader(shoff, index);
        }

        int type(int index) {
            return (int) u32(elf, header(index) + 4);
        }

        long flags(int index) {
            return elf.get(U64, header(index) + 8);
        }

        long offset(int index) {
            return elf.get(U64, header(index) + 24);
        }

        long size(int index) {
            return elf.get(U64, header(index) + 32);
        }

        long link(int index) {
            return u32(elf, header(index) + 40);
        }

        /** The section that sh_link names, once known to be in range. */
        int linked(int index) {
            return (int) link(index);
        }

        long info(int index) {
            return u32(elf, header(index) + 44);
        }

        long entrySize(int index) {
            return elf.get(U64, header(index) + 56);
        }

        long nameIndex(int index) {
            return u32(elf, header(index));
        }

        /** "section 9 (.nv.info.saxpy)", for messages. */
        String describe(int index) {
            return "section " + index + " (" + sectionName(elf, namesOffset, nameIndex(index)) + ")";
        }
    }

    private static void checkSectionContents(ElfSections s, int i) {
        MemorySegment elf = s.elf();
        int type = s.type(i);
        if (type == SHT_NOBITS) {
            return; // no bytes in the image
        }
        long offset = s.offset(i);
        long size = s.size(i);
        if (type == SHT_STRTAB && size > 0 && u8(elf, offset + size - 1) != 0) {
            throw invalid("%s: the string table does not end with NUL", s.describe(i));
        }
        if (type == SHT_SYMTAB || type == SHT_CUDA_MERC_SYMTAB) {
            checkSymbolTable(s, i);
        } else if (type == SHT_REL || type == SHT_RELA || type == SHT_CUDA_MERC_RELA) {
            checkRelocations(s, i, type == SHT_REL ? REL_SIZE : RELA_SIZE);
        } else if (type == SHT_NOTE) {
            checkNotes(s, i);
        } else if (type == SHT_CUDA_INFO || isNvInfo(s, i)) {
            checkNvInfo(s, i);
        } else if (type == SHT_PROGBITS && (s.flags(i) & SHF_EXECINSTR) != 0 && s.linked(i) != 0
                && s.type(s.linked(i)) == SHT_SYMTAB) {
            // A kernel's .text names its function symbol in sh_info's low 24 bits; before sm_90 the
            // top byte holds the register count.
            long symbol = s.info(i) & 0xff_ffff;
            long symbols = s.size(s.linked(i)) / SYMBOL_SIZE;
            if (symbol >= symbols) {
                throw invalid("%s: sh_info names symbol %d, but %s holds %d", s.describe(i), symbol,
                        s.describe(s.linked(i)), symbols);
            }
        }
    }

    private static boolean infoNamesASection(ElfSections s, int i) {
        long type = s.type(i);
        boolean symbolTable = type == SHT_SYMTAB || type == SHT_CUDA_MERC_SYMTAB;
        boolean code = type == SHT_PROGBITS && (s.flags(i) & SHF_EXECINSTR) != 0;
        return !symbolTable && !code;
    }

    private static void checkSymbolTable(ElfSections s, int i) {
        MemorySegment elf = s.elf();
        requireEntries(s, i, SYMBOL_SIZE);
        int strings = s.linked(i);
        if (s.type(strings) != SHT_STRTAB) {
            throw invalid("%s: sh_link names %s of type %#x, not a string table", s.describe(i), s.describe(strings),
                    s.type(strings));
        }
        long stringsSize = s.size(strings);
        long count = s.size(i) / SYMBOL_SIZE;
        if (s.info(i) > count) {
            throw invalid("%s: sh_info %d (the first global symbol) is past its %d symbols", s.describe(i), s.info(i),
                    count);
        }
        for (long k = 0; k < count; k++) {
            long symbol = s.offset(i) + k * SYMBOL_SIZE;
            long name = u32(elf, symbol);
            if (name >= stringsSize) {
                throw invalid("%s: symbol %d's st_name %d is past the end of the %d-byte %s", s.describe(i), k, name,
                        stringsSize, s.describe(strings));
            }
            int section = u16(elf, symbol + 6);
            if (section >= s.count() && section < SHN_LORESERVE) {
                throw invalid("%s: symbol %d's st_shndx %d names no section (there are %d)", s.describe(i), k, section,
                        s.count());
            }
        }
    }

    private static void checkRelocations(ElfSections s, int i, int entrySize) {
        MemorySegment elf = s.elf();
        requireEntries(s, i, entrySize);
        int symbolTable = s.linked(i);
        int symbolTableType = s.type(symbolTable);
        if (symbolTableType != SHT_SYMTAB && symbolTableType != SHT_CUDA_MERC_SYMTAB) {
            throw invalid("%s: sh_link names %s of type %#x, not a symbol table", s.describe(i),
                    s.describe(symbolTable), symbolTableType);
        }
        long symbols = s.size(symbolTable) / SYMBOL_SIZE;
        int target = (int) s.info(i);
        long targetSize = s.size(target);
        // Merc relocations' offsets are not relative to the target section's bytes; only their
        // symbols are checked.
        boolean checkOffsets = s.type(i) != SHT_CUDA_MERC_RELA;
        long count = s.size(i) / entrySize;
        for (long k = 0; k < count; k++) {
            long relocation = s.offset(i) + k * entrySize;
            long offset = elf.get(U64, relocation);
            long symbol = u32(elf, relocation + 12);
            if (symbol >= symbols) {
                throw invalid("%s: relocation %d names symbol %d, but %s holds %d", s.describe(i), k, symbol,
                        s.describe(symbolTable), symbols);
            }
            if (checkOffsets && Long.compareUnsigned(offset, targetSize) >= 0) {
                throw invalid("%s: relocation %d's r_offset %s is past the end of the %d-byte %s", s.describe(i), k,
                        Long.toUnsignedString(offset), targetSize, s.describe(target));
            }
        }
    }

    /** Symbol and relocation tables: the fixed entry size, and a whole number of entries. */
    private static void requireEntries(ElfSections s, int i, int entrySize) {
        if (s.entrySize(i) != entrySize) {
            throw invalid("%s: sh_entsize is %s, not %d", s.describe(i), Long.toUnsignedString(s.entrySize(i)),
                    entrySize);
        }
        if (s.size(i) % entrySize != 0) {
            throw invalid("%s: its %d bytes are not a whole number of %d-byte entries", s.describe(i), s.size(i),
                    entrySize);
        }
    }

    /** Note records: u32 namesz, descsz, type, then the name and descriptor, each padded to 4 bytes. */
    private static void checkNotes(ElfSections s, int i) {
        MemorySegment elf = s.elf();
        long start = s.offset(i);
        long size = s.size(i);
        for (long at = 0; at < size; ) {
            if (size - at < 12) {
                throw invalid("%s: the note at offset %d has a 12-byte header but only %d bytes remain", s.describe(i),
                        at, size - at);
            }
            long nameSize = u32(elf, start + at);
            long descriptorSize = u32(elf, start + at + 4);
            long length = 12 + align4(nameSize) + align4(descriptorSize);
            if (length > size - at) {
                throw invalid("%s: the note at offset %d needs %d bytes but only %d remain", s.describe(i), at, length,
                        size - at);
            }
            at += length;
        }
    }

    /** EIATTR records: a 4-byte header, followed by {@code size} value bytes for EIFMT_SVAL. */
    private static void checkNvInfo(ElfSections s, int i) {
        MemorySegment elf = s.elf();
        long start = s.offset(i);
        long size = s.size(i);
        for (long at = 0; at < size; ) {
            if (size - at < EIATTR_HEADER_SIZE) {
                throw invalid("%s: the EIATTR record at offset %d has a 4-byte header but only %d bytes remain",
                        s.describe(i), at, size - at);
            }
            int format = u8(elf, start + at);
            int attribute = u8(elf, start + at + 1);
            long length = switch (format) {
                case EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL -> EIATTR_HEADER_SIZE;
                case EIFMT_SVAL -> EIATTR_HEADER_SIZE + u16(elf, start + at + 2);
                default -> throw invalid("%s: the EIATTR record at offset %d (attribute %#04x) has unknown "
                        + "format %#04x", s.describe(i), at, attribute, format);
            };
            if (length > size - at) {
                throw invalid("%s: the EIATTR record at offset %d (format %#04x, attribute %#04x) needs %d bytes "
                        + "but only %d remain", s.describe(i), at, format, attribute, length, size - at);
            }
            at += length;
        }
    }

    /** {@code .nv.info}, {@code .nv.info.<kernel>} and their sm_100 {@code .nv.merc} copies. */
    private static boolean isNvInfo(ElfSections s, int i) {
        long name = s.namesOffset() + s.nameIndex(i);
        if (startsWith(s.elf(), name, NV_MERC)) {
            name += NV_MERC.length;
        }
        if (!startsWith(s.elf(), name, NV_INFO)) {
            return false;
        }
        int next = u8(s.elf(), name + NV_INFO.length);
        return next == 0 || next == '.';
    }

    /** Whether the NUL-terminated string at {@code at} starts with {@code prefix}. */
    private static boolean startsWith(MemorySegment image, long at, byte[] prefix) {
        for (int k = 0; k < prefix.length; k++) {
            int b = u8(image, at + k);
            if (b != prefix[k]) {
                return false; // also at the string's NUL, before any read past it
            }
        }
        return true;
    }

    private static long sectionHeader(long shoff, int index) {
        return shoff + (long) index * SECTION_HEADER_SIZE;
    }

    /** The NUL-terminated name, read only once the name table is known to end with NUL. */
    private static String sectionName(MemorySegment elf, long namesOffset, long nameIndex) {
        StringBuilder name = new StringBuilder();
        for (long at = namesOffset + nameIndex; u8(elf, at) != 0 && name.length() < 80; at++) {
            name.append((char) u8(elf, at));
        }
        return name.toString();
    }

    private static void requireField(String field, long actual, long expected, String meaning) {
        if (actual != expected) {
            throw invalid("%s is %d, not %s (%d)", field, actual, meaning, expected);
        }
    }

    private static void requireTable(String table, long offset, long length, long size, String whole) {
        if (!inside(offset, length, size)) {
            throw invalid("%s %s extends past the end of the %d-byte %s", table, range(offset, length), size, whole);
        }
        if (offset < ELF_HEADER_SIZE) {
            throw invalid("%s %s overlaps the 64-byte ELF header", table, range(offset, length));
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Fatbin
    // ---------------------------------------------------------------------------------------------

    /** An entry as the driver will get it: its header and its payload, decompressed where it was compressed. */
    private record Entry(MemorySegment header, MemorySegment payload) {}

    /**
     * Checks a fatbin; returns null when no entry is compressed, else the uncompressed fatbin
     * rebuilt from the entries (the bytes after the last entry kept as they are).
     */
    private static byte[] checkFatbin(MemorySegment fatbin) {
        long size = fatbin.byteSize();
        List<Entry> entries = new ArrayList<>();
        boolean anyCompressed = false;
        if (size < FATBIN_HEADER_SIZE) {
            throw invalid("the %d-byte image is shorter than the 16-byte fatbin header", size);
        }
        requireField("the version", u16(fatbin, 4), 1, "FATBIN_VERSION");
        requireField("the header size", u16(fatbin, 6), FATBIN_HEADER_SIZE, "the fatbin header size");
        long fatSize = fatbin.get(U64, 8);
        if (!inside(FATBIN_HEADER_SIZE, fatSize, size)) {
            throw invalid("its entries %s (fatSize %s) extend past the end of the %d-byte image",
                    range(FATBIN_HEADER_SIZE, fatSize), Long.toUnsignedString(fatSize), size);
        }
        if (fatSize == 0) {
            throw invalid("it holds no entries (fatSize is 0)");
        }
        long end = FATBIN_HEADER_SIZE + fatSize;
        int index = 0;
        for (long entry = FATBIN_HEADER_SIZE; entry < end; index++) {
            if (end - entry < FATBIN_ENTRY_HEADER_SIZE) {
                throw invalid("%s: its 64-byte header extends past the end of the entries at %d",
                        entryName(index, entry), end);
            }
            int kind = u16(fatbin, entry);
            long headerSize = u32(fatbin, entry + 4);
            long payloadSize = fatbin.get(U64, entry + 8);
            if (kind != FATBIN_KIND_PTX && kind != FATBIN_KIND_ELF && kind != FATBIN_KIND_NVVM_IR) {
                throw invalid("%s has unknown kind %d (1 is PTX, 2 is ELF, 8 is NVVM IR)", entryName(index, entry),
                        kind);
            }
            if (headerSize < FATBIN_ENTRY_HEADER_SIZE || headerSize > end - entry) {
                throw invalid("%s: its header %s is shorter than 64 bytes or extends past the end of the entries at %d",
                        entryName(index, entry), range(entry, headerSize), end);
            }
            long payload = entry + headerSize;
            if (!inside(payload, payloadSize, end)) {
                throw invalid("%s: its payload %s extends past the end of the entries at %d", entryName(index, entry),
                        range(payload, payloadSize), end);
            }
            checkEntryHeaderStrings(fatbin, entry, headerSize, index);
            long flags = fatbin.get(U64, entry + 40);
            MemorySegment contents = fatbin.asSlice(payload, payloadSize);
            if ((flags & FATBIN_FLAGS_COMPRESSED) != 0) {
                // The driver would decompress it unchecked, and corrupt compressed bytes crashed it in
                // fuzzing on an H200: decompress it here, check what comes out, and hand over that.
                byte[] unpacked = decompress(fatbin, entry, kind, flags, payload, payloadSize, index);
                byte[] padded = Arrays.copyOf(unpacked, (int) ((unpacked.length + (kind == FATBIN_KIND_PTX ? 1 : 0)
                        + 7L) & ~7L)); // PTX keeps a NUL after its text; every payload ends 8-aligned
                contents = MemorySegment.ofArray(padded);
                MemorySegment fields = MemorySegment.ofArray(fatbin.asSlice(entry, headerSize).toArray(JAVA_BYTE));
                fields.set(U64, 8, padded.length);
                fields.set(U32, 16, 0); // no compressed size
                fields.set(U64, 40, flags & ~FATBIN_FLAGS_COMPRESSED);
                fields.set(U64, 56, 0); // no uncompressed size
                entries.add(new Entry(fields, contents));
                anyCompressed = true;
            } else {
                entries.add(new Entry(fatbin.asSlice(entry, headerSize), contents));
            }
            if (kind != FATBIN_KIND_NVVM_IR) {
                try {
                    if (kind == FATBIN_KIND_ELF) {
                        checkElf(contents, "payload");
                    } else {
                        checkPtx(contents, true);
                    }
                } catch (Invalid e) {
                    throw invalid("%s (%s): %s", entryName(index, entry), describeEntry(fatbin, entry, kind),
                            e.getMessage());
                }
            }
            entry = payload + payloadSize; // the header is at least 64 bytes, so this always advances
        }
        return anyCompressed ? rebuild(fatbin, entries, end) : null;
    }

    /** A compressed entry's payload, decompressed within the size its header declares. */
    private static byte[] decompress(MemorySegment fatbin, long entry, int kind, long flags, long payload,
            long payloadSize, int index) {
        String entryName = entryName(index, entry) + " (" + describeEntry(fatbin, entry, kind) + ")";
        if ((flags & FATBIN_FLAG_COMPRESS_LEGACY) != 0) {
            throw invalid("%s is compressed in the legacy format of flag 0x1000, which this library cannot check;"
                    + " rebuild it with a current nvcc (zstd, the default) or with --no-compress", entryName);
        }
        if (kind == FATBIN_KIND_NVVM_IR) {
            throw invalid("%s is compressed NVVM IR, whose stream this library cannot check; rebuild it without"
                    + " -dlto or with --no-compress", entryName);
        }
        long compressed = u32(fatbin, entry + 16);
        long expected = fatbin.get(U64, entry + 56);
        if (compressed == 0 || compressed > payloadSize) {
            throw invalid("%s: its compressed size %d is 0 or more than its %d-byte payload", entryName, compressed,
                    payloadSize);
        }
        if (expected == 0 || Long.compareUnsigned(expected, MAX_DECOMPRESSED_BYTES) > 0) {
            throw invalid("%s: its decompressed size %s is 0 or over the %d bytes this library unpacks", entryName,
                    Long.toUnsignedString(expected), MAX_DECOMPRESSED_BYTES);
        }
        byte[] packed = fatbin.asSlice(payload, compressed).toArray(JAVA_BYTE);
        try {
            return (flags & FATBIN_FLAG_COMPRESS_LZ4) != 0
                    ? Lz4Block.decompress(packed, 0, packed.length, (int) expected)
                    : Zstd.decompress(packed, 0, packed.length, (int) expected);
        } catch (Zstd.Corrupt e) {
            throw invalid("%s: its %s payload cannot be decompressed: %s", entryName,
                    (flags & FATBIN_FLAG_COMPRESS_LZ4) != 0 ? "LZ4" : "zstd", e.getMessage());
        }
    }

    /** The fatbin's header, then each entry's header and payload, then whatever followed the entries. */
    private static byte[] rebuild(MemorySegment fatbin, List<Entry> entries, long entriesEnd) {
        long fatSize = 0;
        for (Entry e : entries) {
            fatSize += e.header().byteSize() + e.payload().byteSize();
        }
        long trailing = fatbin.byteSize() - entriesEnd;
        long total = FATBIN_HEADER_SIZE + fatSize + trailing;
        if (total > Integer.MAX_VALUE - 8) {
            throw invalid("decompressed, its entries come to %d bytes, more than one Java array holds", total);
        }
        byte[] rebuilt = new byte[(int) total];
        MemorySegment out = MemorySegment.ofArray(rebuilt);
        MemorySegment.copy(fatbin, 0, out, 0, FATBIN_HEADER_SIZE);
        out.set(U64, 8, fatSize);
        long at = FATBIN_HEADER_SIZE;
        for (Entry e : entries) {
            MemorySegment.copy(e.header(), 0, out, at, e.header().byteSize());
            at += e.header().byteSize();
            MemorySegment.copy(e.payload(), 0, out, at, e.payload().byteSize());
            at += e.payload().byteSize();
        }
        MemorySegment.copy(fatbin, entriesEnd, out, at, trailing);
        return rebuilt;
    }

    private static String entryName(int index, long entry) {
        return "entry " + index + " at offset " + entry;
    }

    private static String describeEntry(MemorySegment fatbin, long entry, int kind) {
        long arch = u32(fatbin, entry + 28);
        return switch (kind) {
            case FATBIN_KIND_ELF -> "ELF for sm_" + arch;
            case FATBIN_KIND_NVVM_IR -> "NVVM IR for compute_" + arch;
            default -> "PTX for compute_" + arch;
        };
    }

    /** The object name and the ptxas options live in the entry's header, after its 64 fixed bytes. */
    private static void checkEntryHeaderStrings(MemorySegment fatbin, long entry, long headerSize, int index) {
        long nameOffset = u32(fatbin, entry + 32);
        long nameLength = u32(fatbin, entry + 36);
        if (nameOffset != 0 && !inside(nameOffset, nameLength, headerSize)) {
            throw invalid("%s: its object name %s lies outside its %d-byte header", entryName(index, entry),
                    range(nameOffset, nameLength), headerSize);
        }
        long optionsAt = u32(fatbin, entry + 20);
        if (optionsAt == 0) {
            return;
        }
        if (!inside(optionsAt, 8, headerSize)) {
            throw invalid("%s: its options descriptor %s lies outside its %d-byte header", entryName(index, entry),
                    range(optionsAt, 8), headerSize);
        }
        long optionsOffset = u32(fatbin, entry + optionsAt);
        long optionsLength = u32(fatbin, entry + optionsAt + 4);
        if (optionsOffset != 0 && !inside(optionsOffset, optionsLength, headerSize)) {
            throw invalid("%s: its ptxas options %s lie outside its %d-byte header", entryName(index, entry),
                    range(optionsOffset, optionsLength), headerSize);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // PTX
    // ---------------------------------------------------------------------------------------------

    /**
     * The driver reads PTX up to its first NUL. {@code terminated}: the text must end with a NUL
     * inside the bytes given (a fatbin payload); the library appends one after a whole image.
     */
    private static void checkPtx(MemorySegment ptx, boolean terminated) {
        long size = ptx.byteSize();
        long textEnd = 0;
        while (textEnd < size && u8(ptx, textEnd) != 0) {
            textEnd++;
        }
        if (terminated && textEnd == size) {
            throw invalid("its PTX text has no NUL terminator inside the %d-byte payload", size);
        }
        long version = indexOf(ptx, textEnd, PTX_VERSION, 0);
        long target = version < 0 ? -1 : indexOf(ptx, textEnd, PTX_TARGET, version + PTX_VERSION.length);
        if (version < 0 || target < 0) {
            String missing = version < 0 ? ".version" : ".target";
            if (textEnd < size) {
                throw invalid("a NUL byte at offset %d ends the text before its %s directive", textEnd, missing);
            }
            throw invalid("it has no %s directive%s", missing, version < 0 ? "" : " after .version");
        }
        for (long at = textEnd; at < size; at++) {
            if (u8(ptx, at) != 0) {
                throw invalid("a NUL byte at offset %d ends the text the driver reads, but more text follows at "
                        + "offset %d", textEnd, at);
            }
        }
        checkPtxLexically(ptx, textEnd);
    }

    /**
     * PTX is ASCII, and a string literal ends on its own line. Both are checked because the driver's
     * PTX parser does not: on an H200 (driver 580) a stray {@code "} in the code, one flipped bit
     * away from a space, corrupts its heap and aborts the process ("malloc(): invalid size").
     * Comments may hold anything printable, quotes included.
     */
    private static void checkPtxLexically(MemorySegment ptx, long textEnd) {
        long line = 1;
        long stringStart = -1;
        boolean lineComment = false;
        boolean blockComment = false;
        for (long at = 0; at < textEnd; at++) {
            int c = u8(ptx, at);
            if (c == '\n') {
                if (stringStart >= 0) {
                    throw invalid("line %d has an unterminated string literal (the \" at offset %d)", line,
                            stringStart);
                }
                line++;
                lineComment = false;
                continue;
            }
            if (c != '\t' && c != '\r' && (c < 0x20 || c > 0x7E)) {
                throw invalid("byte 0x%02x at offset %d (line %d) is not PTX text, which is printable ASCII", c, at,
                        line);
            }
            if (lineComment) {
                continue;
            }
            int next = at + 1 < textEnd ? u8(ptx, at + 1) : 0;
            if (blockComment) {
                if (c == '*' && next == '/') {
                    blockComment = false;
                    at++;
                }
            } else if (stringStart >= 0) {
                if (c == '\\' && next != '\n') {
                    at++; // an escaped character, a quote included
                } else if (c == '"') {
                    stringStart = -1;
                }
            } else if (c == '"') {
                stringStart = at;
            } else if (c == '/' && next == '/') {
                lineComment = true;
            } else if (c == '/' && next == '*') {
                blockComment = true;
                at++;
            }
        }
        if (stringStart >= 0) {
            throw invalid("line %d has an unterminated string literal (the \" at offset %d)", line, stringStart);
        }
    }

    /** The first index of {@code pattern} in {@code [from, end)}, or -1. */
    private static long indexOf(MemorySegment text, long end, byte[] pattern, long from) {
        outer:
        for (long at = from; at <= end - pattern.length; at++) {
            for (int k = 0; k < pattern.length; k++) {
                if (u8(text, at + k) != pattern[k]) {
                    continue outer;
                }
            }
            return at;
        }
        return -1;
    }

    // ---------------------------------------------------------------------------------------------
    // Reading and arithmetic
    // ---------------------------------------------------------------------------------------------

    private static int u8(MemorySegment image, long offset) {
        return Byte.toUnsignedInt(image.get(JAVA_BYTE, offset));
    }

    private static int u16(MemorySegment image, long offset) {
        return Short.toUnsignedInt(image.get(U16, offset));
    }

    private static long u32(MemorySegment image, long offset) {
        return Integer.toUnsignedLong(image.get(U32, offset));
    }

    /** Whether {@code [offset, offset + length)}, both unsigned 64-bit, lies within {@code [0, limit)}. */
    private static boolean inside(long offset, long length, long limit) {
        return Long.compareUnsigned(offset, limit) <= 0 && Long.compareUnsigned(length, limit - offset) <= 0;
    }

    private static long align4(long value) {
        return (value + 3) & ~3L;
    }

    /** {@code [offset, end)} with both ends unsigned, the end exact even past 2^64. */
    private static String range(long offset, long length) {
        BigInteger start = new BigInteger(Long.toUnsignedString(offset));
        return "[" + start + ", " + start.add(new BigInteger(Long.toUnsignedString(length))) + ")";
    }

    private static String leadingBytes(byte[] image) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < Math.min(4, image.length); i++) {
            text.append(i == 0 ? "" : " ").append(String.format("0x%02x", image[i] & 0xff));
        }
        return text.toString();
    }

    private static Invalid invalid(String format, Object... arguments) {
        return new Invalid(String.format(format, arguments));
    }

    /** What is wrong, without the image's name; {@link #validate} turns it into the public exception. */
    private static final class Invalid extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Invalid(String problem) {
            super(problem, null, false, false);
        }
    }
}
