package org.cudagraph4j.llm;

import java.util.Arrays;

/** Comparisons of logit rows that the decoder's tests and the CPU reference's share. */
final class Logits {
    private Logits() {}

    /** {@return ||a - b|| / ||b||, summed in double} */
    static double relativeL2(float[] a, float[] b) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < a.length; i++) {
            double d = a[i] - b[i];
            num += d * d;
            den += (double) b[i] * b[i];
        }
        return Math.sqrt(num / den);
    }

    /** {@return the index of the largest value, the smallest such index among equals, as torch.argmax} */
    static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }

    /** The indices of the {@code k} largest values, largest first. */
    static int[] top(float[] values, int k) {
        Integer[] order = new Integer[values.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Float.compare(values[b], values[a]));
        int[] out = new int[k];
        for (int i = 0; i < k; i++) {
            out[i] = order[i];
        }
        return out;
    }
}
