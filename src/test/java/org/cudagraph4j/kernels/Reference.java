package org.cudagraph4j.kernels;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/** Double-precision references and the comparison every kernel test uses. */
final class Reference {
    static final double TOLERANCE = 1e-5;
    /**
     * The normwise tolerance of {@link MathMode#TF32} instances, whose operands the tensor core
     * truncates to 10 mantissa bits (up to 2^-10 relative each): a single product at K = 1 was off by
     * 4.5e-3 on the H200.
     */
    static final double TF32_TOLERANCE = 1e-2;

    /** The tolerance of an instance: {@link #TF32_TOLERANCE} for TF32, else {@link #TOLERANCE}. */
    static double tolerance(GemmConfig config) {
        return config.math() == MathMode.TF32 ? TF32_TOLERANCE : TOLERANCE;
    }

    private Reference() {}

    /** Each (m, n, k) twice, with B as stored and transposed: arguments (m, n, k, bTransposed). */
    static Stream<Arguments> withBothLayouts(int[][] shapes) {
        List<Arguments> arguments = new ArrayList<>();
        for (int[] s : shapes) {
            for (boolean transposed : new boolean[] {false, true}) {
                arguments.add(Arguments.of(s[0], s[1], s[2], transposed));
            }
        }
        return arguments.stream();
    }

    /** alpha * A[m,k] * op(B) + beta * C, in double; op(B) is B [k,n] or, transposed, B [n,k]ᵀ. */
    static double[] gemm(int m, int n, int k, double alpha, float[] a, float[] b, boolean bTransposed, double beta,
            float[] c) {
        double[] result = new double[m * n];
        double[] row = new double[n];
        for (int i = 0; i < m; i++) {
            Arrays.fill(row, 0);
            for (int p = 0; p < k; p++) {
                double aip = a[i * k + p];
                if (bTransposed) {
                    for (int j = 0; j < n; j++) {
                        row[j] += aip * b[j * k + p];
                    }
                } else {
                    int base = p * n;
                    for (int j = 0; j < n; j++) {
                        row[j] += aip * b[base + j];
                    }
                }
            }
            for (int j = 0; j < n; j++) {
                result[i * n + j] = alpha * row[j] + (beta == 0 ? 0 : beta * c[i * n + j]);
            }
        }
        return result;
    }

    /** relu(X + bias[column]) in place. */
    static double[] biasRelu(double[] x, int m, int n, float[] bias) {
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                x[i * n + j] = Math.max(x[i * n + j] + bias[j], 0);
            }
        }
        return x;
    }

    /** Every element finite and ‖out − ref‖ / ‖ref‖ under {@link #TOLERANCE}. */
    static void assertClose(double[] expected, float[] actual, String what) {
        assertClose(expected, actual, what, TOLERANCE);
    }

    /** Every element finite and ‖out − ref‖ / ‖ref‖ under {@code tolerance}. */
    static void assertClose(double[] expected, float[] actual, String what, double tolerance) {
        assertWithin(expected, expected, actual, tolerance, what, "relative error");
    }

    /**
     * Every element finite and ‖out − ref‖ / ‖scale‖ under {@code tolerance}, where {@code scale} is
     * the same sums over magnitudes (Σ|a·b| and the magnitudes of the other terms): the scale FP32's
     * rounding error works on. Unlike ‖ref‖ it does not vanish where a sum cancels: a 1 x 1 x 4
     * product of 0.0018 whose terms add up to 1.35 in magnitude is off by 1.5e-5 of itself when every
     * product is rounded correctly.
     */
    static void assertCloseToScale(double[] expected, double[] scale, float[] actual, String what, double tolerance) {
        assertWithin(expected, scale, actual, tolerance, what, "error relative to the sums' magnitude");
    }

    /** Every element finite and ‖out − ref‖ / ‖scale‖ under {@code tolerance}, the ratio named {@code measure}. */
    private static void assertWithin(double[] expected, double[] scale, float[] actual, double tolerance, String what,
            String measure) {
        double error = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            assertFalse(Float.isNaN(actual[i]) || Float.isInfinite(actual[i]),
                    what + ": element " + i + " is " + actual[i] + " (never written?)");
            double difference = actual[i] - expected[i];
            error += difference * difference;
            norm += scale[i] * scale[i];
        }
        double relative = norm == 0 ? Math.sqrt(error) : Math.sqrt(error / norm);
        assertTrue(relative < tolerance, what + ": " + measure + " " + relative);
    }

    /** Each element's magnitude. */
    static float[] abs(float[] values) {
        float[] result = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = Math.abs(values[i]);
        }
        return result;
    }

    /** ‖out − ref‖ / ‖ref‖. */
    static double relativeError(double[] expected, float[] actual) {
        double error = 0;
        double norm = 0;
        for (int i = 0; i < expected.length; i++) {
            double difference = actual[i] - expected[i];
            error += difference * difference;
            norm += expected[i] * expected[i];
        }
        return Math.sqrt(error / norm);
    }
}
