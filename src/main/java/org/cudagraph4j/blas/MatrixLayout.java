package org.cudagraph4j.blas;

import java.util.Objects;
import org.cudagraph4j.ElementType;

/**
 * How a matrix lies in a {@link org.cudagraph4j.DeviceBuffer}: its element type, its rows and
 * columns, its order and the distance between the starts of two neighbouring rows (row-major) or
 * columns (column-major), in elements. PyTorch and C arrays are row-major; BLAS is column-major.
 *
 * <p>Thread safety: an immutable value.
 *
 * @param type {@link ElementType#FLOAT32}, {@link ElementType#FLOAT16} or {@link ElementType#BFLOAT16}
 * @param rows at least 1
 * @param columns at least 1
 * @param order row- or column-major
 * @param leadingDimension elements from one row's (row-major) or column's (column-major) start to the
 *     next's: at least {@code columns} (row-major) or {@code rows} (column-major)
 */
public record MatrixLayout(ElementType type, long rows, long columns, Order order, long leadingDimension) {
    /** Which index is contiguous in memory. */
    public enum Order {
        /** A row's elements are neighbours, as in C and PyTorch. */
        ROW_MAJOR,
        /** A column's elements are neighbours, as in Fortran and BLAS. */
        COLUMN_MAJOR
    }

    /**
     * Checks the layout.
     *
     * @throws IllegalArgumentException if the type is not one cuBLASLt multiplies here, a dimension is
     *     below 1, or the leading dimension is shorter than a row (row-major) or a column (column-major)
     * @throws NullPointerException if {@code type} or {@code order} is null
     */
    public MatrixLayout {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(order, "order");
        if (type != ElementType.FLOAT32 && type != ElementType.FLOAT16 && type != ElementType.BFLOAT16) {
            throw new IllegalArgumentException("a matrix for cuBLASLt holds FLOAT32, FLOAT16 or BFLOAT16, not " + type);
        }
        if (rows < 1 || columns < 1) {
            throw new IllegalArgumentException("a matrix needs rows, columns >= 1, got " + rows + " x " + columns);
        }
        long contiguous = order == Order.ROW_MAJOR ? columns : rows;
        if (leadingDimension < contiguous) {
            throw new IllegalArgumentException("a " + rows + " x " + columns + " " + order + " matrix needs a leading"
                    + " dimension of at least " + contiguous + ", got " + leadingDimension);
        }
    }

    /**
     * A dense row-major matrix: rows one after the other.
     *
     * @param type the element type
     * @param rows at least 1
     * @param columns at least 1
     * @return the layout, with leading dimension {@code columns}
     */
    public static MatrixLayout rowMajor(ElementType type, long rows, long columns) {
        return new MatrixLayout(type, rows, columns, Order.ROW_MAJOR, columns);
    }

    /**
     * A dense column-major matrix: columns one after the other.
     *
     * @param type the element type
     * @param rows at least 1
     * @param columns at least 1
     * @return the layout, with leading dimension {@code rows}
     */
    public static MatrixLayout columnMajor(ElementType type, long rows, long columns) {
        return new MatrixLayout(type, rows, columns, Order.COLUMN_MAJOR, rows);
    }

    /** {@return the elements a buffer must hold for this matrix: up to its last element} */
    public long span() {
        long contiguous = order == Order.ROW_MAJOR ? columns : rows;
        long strided = order == Order.ROW_MAJOR ? rows : columns;
        return (strided - 1) * leadingDimension + contiguous;
    }

    /** {@return e.g. {@code BFLOAT16[4096 x 512, ROW_MAJOR, ld 512]}} */
    @Override
    public String toString() {
        return type + "[" + rows + " x " + columns + ", " + order + ", ld " + leadingDimension + "]";
    }
}
