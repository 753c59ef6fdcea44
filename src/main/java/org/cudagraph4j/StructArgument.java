package org.cudagraph4j;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A kernel argument passed as a struct by value: the struct's bytes, exactly as the kernel's C++
 * type lays them out (members at their offsets, with the compiler's padding). A launch checks its
 * size against the parameter's size from {@code cudaFuncGetParamInfo}, and refuses a mismatch by
 * naming the kernel, the parameter index and both sizes. The runtime copies the bytes at the launch
 * (or when a graph node is made), as it does every argument.
 *
 * <p>Make one from a segment that a layout wrote, {@link #of(MemorySegment)}, or field by field with
 * {@link #builder(long)}:
 * {@snippet :
 * // struct Affine { float scale; float shift; int n; double bias; };   // 24 bytes
 * StructArgument affine = StructArgument.builder(24)
 *         .putFloat(0, 2f).putFloat(4, 0.5f).putInt(8, n).putDouble(16, 0.25).build();
 * kernel.launch(stream, config, affine, in, out);
 * }
 * A pointer member is the buffer's {@link DeviceBuffer#address()} as a {@code long}: the struct does
 * not keep the buffer alive, nor does a launch check it, as it does a {@link DeviceBuffer} argument.
 *
 * <p>Thread safety: immutable and safe to share; it holds its own copy of the bytes.
 */
public final class StructArgument {
    /** The bytes, in longs so that a view of them is aligned for any scalar; zero past {@link #byteSize}. */
    private final long[] words;
    private final int byteSize;

    private StructArgument(MemorySegment value) {
        long size = value.byteSize();
        if (size == 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a struct argument has 1 to " + Integer.MAX_VALUE + " bytes, not " + size);
        }
        this.byteSize = (int) size;
        this.words = new long[(byteSize + 7) / 8];
        MemorySegment.copy(value, 0, MemorySegment.ofArray(words), 0, size);
    }

    /**
     * A struct argument holding a copy of {@code value}'s bytes, all of them.
     *
     * @param value the struct's bytes, e.g. written through a {@link java.lang.foreign.StructLayout}
     * @return the argument; later changes to {@code value} do not reach it
     * @throws IllegalArgumentException if {@code value} is empty
     */
    public static StructArgument of(MemorySegment value) {
        return new StructArgument(value);
    }

    /**
     * A builder for a struct of {@code byteSize} bytes, all zero until set.
     *
     * @param byteSize the struct's size, as {@code sizeof} gives it (padding included)
     * @return the builder
     * @throws IllegalArgumentException if {@code byteSize} is not positive or above {@link Integer#MAX_VALUE}
     */
    public static Builder builder(long byteSize) {
        if (byteSize <= 0 || byteSize > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a struct argument's byteSize must be positive, got " + byteSize);
        }
        return new Builder((int) byteSize);
    }

    /** {@return the struct's size in bytes} */
    public long byteSize() {
        return byteSize;
    }

    /** {@return a read-only view of the struct's bytes, aligned for any scalar member} */
    public MemorySegment bytes() {
        return MemorySegment.ofArray(words).asSlice(0, byteSize).asReadOnly();
    }

    /** Copies the bytes to the start of {@code destination}. */
    void writeTo(MemorySegment destination) {
        MemorySegment.copy(MemorySegment.ofArray(words), 0, destination, 0, byteSize);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof StructArgument struct && byteSize == struct.byteSize && Arrays.equals(words, struct.words);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(words) * 31 + byteSize;
    }

    @Override
    public String toString() {
        byte[] shown = bytes().asSlice(0, Math.min(byteSize, 32)).toArray(JAVA_BYTE);
        return "StructArgument[" + byteSize + " bytes: " + HexFormat.of().formatHex(shown) + (byteSize > 32 ? "…" : "")
                + "]";
    }

    /**
     * Writes a struct's members at their byte offsets, in the platform's byte order (little-endian,
     * as on every GPU host this library supports). Not thread safe; {@link #build()} copies.
     */
    public static final class Builder {
        private final MemorySegment bytes;

        private Builder(int byteSize) {
            this.bytes = MemorySegment.ofArray(new byte[byteSize]);
        }

        /**
         * Sets the {@code int} member at {@code offset}.
         *
         * @param offset the member's offset in bytes, as {@code offsetof} gives it
         * @param value the value
         * @return this builder
         * @throws IndexOutOfBoundsException if the member does not fit inside the struct
         */
        public Builder putInt(long offset, int value) {
            bytes.set(JAVA_INT_UNALIGNED, offset, value);
            return this;
        }

        /**
         * Sets the {@code float} member at {@code offset}.
         *
         * @param offset the member's offset in bytes
         * @param value the value
         * @return this builder
         * @throws IndexOutOfBoundsException if the member does not fit inside the struct
         */
        public Builder putFloat(long offset, float value) {
            bytes.set(JAVA_FLOAT_UNALIGNED, offset, value);
            return this;
        }

        /**
         * Sets the {@code long long} (or pointer) member at {@code offset}.
         *
         * @param offset the member's offset in bytes
         * @param value the value
         * @return this builder
         * @throws IndexOutOfBoundsException if the member does not fit inside the struct
         */
        public Builder putLong(long offset, long value) {
            bytes.set(JAVA_LONG_UNALIGNED, offset, value);
            return this;
        }

        /**
         * Sets the {@code double} member at {@code offset}.
         *
         * @param offset the member's offset in bytes
         * @param value the value
         * @return this builder
         * @throws IndexOutOfBoundsException if the member does not fit inside the struct
         */
        public Builder putDouble(long offset, double value) {
            bytes.set(JAVA_DOUBLE_UNALIGNED, offset, value);
            return this;
        }

        /**
         * Sets the {@code short} (or {@code __half} bits) member at {@code offset}.
         *
         * @param offset the member's offset in bytes
         * @param value the value
         * @return this builder
         * @throws IndexOutOfBoundsException if the member does not fit inside the struct
         */
        public Builder putShort(long offset, short value) {
            bytes.set(JAVA_SHORT_UNALIGNED, offset, value);
            return this;
        }

        /**
         * Sets the {@code char} (or {@code bool}) member at {@code offset}.
         *
         * @param offset the member's offset in bytes
         * @param value the value
         * @return this builder
         * @throws IndexOutOfBoundsException if the member does not fit inside the struct
         */
        public Builder putByte(long offset, byte value) {
            bytes.set(JAVA_BYTE, offset, value);
            return this;
        }

        /** {@return the struct argument, a copy of the bytes set so far} */
        public StructArgument build() {
            return new StructArgument(bytes);
        }
    }
}
