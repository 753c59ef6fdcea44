package org.cudagraph4j.kernels;

import java.util.Objects;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;

/**
 * The checks every kernel entry point makes of its matrices before a launch, so that a bad buffer
 * is named in Java rather than read out of bounds on the device.
 */
final class MatrixChecks {
    private MatrixChecks() {}

    /**
     * Requires the dimensions of a product to be at least 1.
     *
     * @throws IllegalArgumentException naming the three, if one is below 1
     */
    static void requireDimensions(int m, int n, int k) {
        if (m < 1 || n < 1 || k < 1) {
            throw new IllegalArgumentException("sgemm needs m, n, k >= 1, got m=" + m + ", n=" + n + ", k=" + k);
        }
    }

    /**
     * Requires {@code buffer} to hold at least {@code elements} floats.
     *
     * @param name the matrix's name in the message
     * @throws NullPointerException naming the matrix, if {@code buffer} is null
     * @throws IllegalArgumentException if it does not hold FLOAT32 or is shorter
     */
    static void requireFloats(String name, DeviceBuffer buffer, long elements) {
        requireElements(name, buffer, ElementType.FLOAT32, elements);
    }

    /**
     * Requires {@code buffer} to hold at least {@code elements} elements of {@code type}.
     *
     * @param name the matrix's name in the message
     * @throws NullPointerException naming the matrix, if {@code buffer} is null
     * @throws IllegalArgumentException if it holds another type or is shorter
     */
    static void requireElements(String name, DeviceBuffer buffer, ElementType type, long elements) {
        Objects.requireNonNull(buffer, name);
        if (buffer.elementType() != type) {
            throw new IllegalArgumentException(name + " must hold " + type + ", not " + buffer.elementType());
        }
        if (buffer.length() < elements) {
            throw new IllegalArgumentException(name + " needs " + elements
                    + (type == ElementType.FLOAT32 ? " floats" : " " + type + " elements") + " but has " + buffer.length());
        }
    }

    /** Whether two buffers share a byte: only views of one allocation can. */
    static boolean overlaps(DeviceBuffer x, DeviceBuffer y) {
        if (x.allocation() != y.allocation()) {
            return false;
        }
        long xStart = x.byteOffset();
        long yStart = y.byteOffset();
        return xStart < yStart + y.byteSize() && yStart < xStart + x.byteSize();
    }
}
