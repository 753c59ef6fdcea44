package org.cudagraph4j.blas;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;

/**
 * A matrix of random values in [-1, 1) laid out as a {@link MatrixLayout} says, rounded to its
 * element type, with NaN in the gaps a leading dimension leaves (which cuBLASLt must never read),
 * and the float64 products the tests compare against.
 */
final class MatrixData {
    final MatrixLayout layout;
    /** The values as the device holds them, widened to float; NaN in the gaps. */
    final float[] values;

    private MatrixData(MatrixLayout layout, float[] values) {
        this.layout = layout;
        this.values = values;
    }

    static MatrixData random(MatrixLayout layout, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        float[] values = new float[Math.toIntExact(layout.span())];
        Arrays.fill(values, Float.NaN);
        for (long r = 0; r < layout.rows(); r++) {
            for (long c = 0; c < layout.columns(); c++) {
                values[index(layout, r, c)] = (float) (random.nextDouble() * 2 - 1);
            }
        }
        if (layout.type() != ElementType.FLOAT32) {
            values = HalfFloats.toFloats(HalfFloats.fromFloats(values, layout.type()), layout.type());
        }
        return new MatrixData(layout, values);
    }

    static int index(MatrixLayout layout, long row, long column) {
        return Math.toIntExact(layout.order() == MatrixLayout.Order.ROW_MAJOR ? row * layout.leadingDimension() + column
                : column * layout.leadingDimension() + row);
    }

    double at(long row, long column) {
        return values[index(layout, row, column)];
    }

    /** op(this)[row][column]. */
    double at(Matmul.Op op, long row, long column) {
        return op == Matmul.Op.NONE ? at(row, column) : at(column, row);
    }

    DeviceBuffer upload(CudaDevice device) {
        DeviceBuffer buffer = device.allocate(layout.type(), values.length);
        try {
            write(buffer, values);
            return buffer;
        } catch (RuntimeException e) {
            buffer.close();
            throw e;
        }
    }

    /** Writes {@code values}, rounded to the buffer's type (exact for values of that type). */
    static void write(DeviceBuffer buffer, float[] values) {
        if (buffer.elementType() == ElementType.FLOAT32) {
            buffer.copyFrom(values);
        } else {
            buffer.copyFromRounded(values);
        }
    }

    /** A vector of random values of {@code type}. */
    static float[] randomVector(int length, ElementType type, long seed) {
        float[] values = org.cudagraph4j.TestData.randomFloats(length, seed);
        return type == ElementType.FLOAT32 ? values : HalfFloats.toFloats(HalfFloats.fromFloats(values, type), type);
    }

    /**
     * The float64 reference of {@code matmul} before its epilogue, {@code alpha op(A) op(B) + beta C},
     * and for each element the sum of the magnitudes of its products, which bounds the error of an
     * FP32 accumulation of any order.
     */
    static double[][] product(Matmul matmul, MatrixData a, MatrixData b, double alpha, double beta, MatrixData c) {
        int m = Math.toIntExact(matmul.m());
        int n = Math.toIntExact(matmul.n());
        int k = Math.toIntExact(matmul.k());
        double[] value = new double[m * n];
        double[] magnitude = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                double abs = 0;
                for (int p = 0; p < k; p++) {
                    double term = a.at(matmul.opA(), i, p) * b.at(matmul.opB(), p, j);
                    sum += term;
                    abs += Math.abs(term);
                }
                value[i * n + j] = alpha * sum + (beta == 0 ? 0 : beta * c.at(i, j));
                magnitude[i * n + j] = Math.abs(alpha) * abs + (beta == 0 ? 0 : Math.abs(beta * c.at(i, j)));
            }
        }
        return new double[][] {value, magnitude};
    }
}
