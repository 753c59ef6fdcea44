package org.cudagraph4j.llm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.stream.IntStream;
import org.cudagraph4j.HalfFloats;

/**
 * The Llama forward pass on the CPU, written to be read and trusted, not to be fast: the reference
 * the GPU decoder is tested against. It reads the BF16 weights straight from the checkpoint's
 * mapping, widens each to float exactly, and keeps every activation in float; dot products
 * accumulate in double and round once, so the reference is a little more accurate than any FP32
 * kernel, never less.
 *
 * <p>The math, for each position {@code t} of the sequence:
 * <pre>
 * x = embed[token]
 * per layer:
 *   h = rmsnorm(x) * w_in;  q, k, v = Wq h, Wk h, Wv h;  RoPE(q, t), RoPE(k, t)
 *   per query head j, on key-value head j / (NQ / NKV):
 *     p = softmax over s &lt;= t of (q_j . k_s) / sqrt(D);  attn_j = sum of p_s v_s
 *   x += Wo attn
 *   h = rmsnorm(x) * w_post;  x += Wdown (silu(Wgate h) * (Wup h))
 * logits = Wlm (rmsnorm(x) * w_norm)          (Wlm is the embedding when tied)
 * </pre>
 * RoPE is Transformers' {@code rotate_half} form: pair {@code (i, i + D/2)} of each head turns by
 * the angle {@code t * inv_freq[i]}, the angle and its sine and cosine computed in double.
 *
 * <p>Each position's result depends only on the tokens up to it, computed in the same order
 * whatever follows, so the logits of a prefix are bit-identical to the first rows of a longer
 * sequence's.
 *
 * <p>Thread safety: immutable; {@link #logits} may run on several threads at once while the
 * checkpoint stays open.
 */
final class LlamaCpuReference {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final LlamaCheckpoint checkpoint;
    private final LlamaConfig config;
    private final double[] inverseFrequencies;

    LlamaCpuReference(LlamaCheckpoint checkpoint) {
        this.checkpoint = Objects.requireNonNull(checkpoint, "checkpoint");
        this.config = checkpoint.config();
        this.inverseFrequencies = config.ropeInverseFrequencies();
    }

    /** A BF16 matrix of {@code rows x cols}, row-major, in the mapping. */
    private record Matrix(MemorySegment data, int rows, int cols) {
        /** {@return {@code this * x}: one float per row} */
        float[] times(float[] x) {
            if (x.length != cols) {
                throw new IllegalArgumentException("a vector of " + x.length + " for a matrix of " + cols + " columns");
            }
            float[] out = new float[rows];
            IntStream.range(0, rows).parallel().forEach(r -> {
                long base = (long) r * cols * 2;
                double sum = 0;
                for (int c = 0; c < cols; c++) {
                    sum += (double) HalfFloats.bfloat16ToFloat(data.get(BF16, base + 2L * c)) * x[c];
                }
                out[r] = (float) sum;
            });
            return out;
        }

        /** {@return row {@code r}, widened} */
        float[] row(int r) {
            float[] out = new float[cols];
            long base = (long) r * cols * 2;
            for (int c = 0; c < cols; c++) {
                out[c] = HalfFloats.bfloat16ToFloat(data.get(BF16, base + 2L * c));
            }
            return out;
        }
    }

    private Matrix matrix(String name, int rows, int cols) {
        return new Matrix(checkpoint.weight(name, rows, cols).data(), rows, cols);
    }

    private float[] vector(String name, int length) {
        return new Matrix(checkpoint.weight(name, length).data(), 1, length).row(0);
    }

    /**
     * Runs the model over a whole sequence, causally, from position 0.
     *
     * @param tokens the token ids, at least one, each below the vocabulary size
     * @return {@code logits[t][v]}: the score of token {@code v} following {@code tokens[0..t]}
     */
    float[][] logits(int[] tokens) {
        int n = tokens.length;
        if (n == 0) {
            throw new IllegalArgumentException("no tokens");
        }
        int hidden = config.hiddenSize();
        int heads = config.heads();
        int kvHeads = config.keyValueHeads();
        int d = config.headDim();
        int inter = config.intermediateSize();
        int group = heads / kvHeads;
        float scale = (float) (1 / Math.sqrt(d));

        Matrix embed = matrix("model.embed_tokens.weight", config.vocabSize(), hidden);
        float[][] x = new float[n][];
        for (int t = 0; t < n; t++) {
            if (tokens[t] < 0 || tokens[t] >= config.vocabSize()) {
                throw new IllegalArgumentException("token " + tokens[t] + " at position " + t
                        + " is outside the vocabulary of " + config.vocabSize());
            }
            x[t] = embed.row(tokens[t]);
        }

        for (int layer = 0; layer < config.layers(); layer++) {
            String p = "model.layers." + layer + ".";
            float[] inputNorm = vector(p + "input_layernorm.weight", hidden);
            Matrix wq = matrix(p + "self_attn.q_proj.weight", heads * d, hidden);
            Matrix wk = matrix(p + "self_attn.k_proj.weight", kvHeads * d, hidden);
            Matrix wv = matrix(p + "self_attn.v_proj.weight", kvHeads * d, hidden);
            Matrix wo = matrix(p + "self_attn.o_proj.weight", hidden, heads * d);
            float[] postNorm = vector(p + "post_attention_layernorm.weight", hidden);
            Matrix gate = matrix(p + "mlp.gate_proj.weight", inter, hidden);
            Matrix up = matrix(p + "mlp.up_proj.weight", inter, hidden);
            Matrix down = matrix(p + "mlp.down_proj.weight", hidden, inter);

            float[][] q = new float[n][];
            float[][] k = new float[n][];
            float[][] v = new float[n][];
            for (int t = 0; t < n; t++) {
                float[] h = rmsNorm(x[t], inputNorm, config.rmsNormEps());
                q[t] = rope(wq.times(h), heads, d, t, inverseFrequencies);
                k[t] = rope(wk.times(h), kvHeads, d, t, inverseFrequencies);
                v[t] = wv.times(h);
            }
            for (int t = 0; t < n; t++) {
                float[] attention = new float[heads * d];
                for (int head = 0; head < heads; head++) {
                    int kv = head / group;
                    float[] scores = new float[t + 1];
                    for (int s = 0; s <= t; s++) {
                        double dot = 0;
                        for (int i = 0; i < d; i++) {
                            dot += (double) q[t][head * d + i] * k[s][kv * d + i];
                        }
                        scores[s] = (float) dot * scale;
                    }
                    float[] probabilities = softmax(scores);
                    for (int i = 0; i < d; i++) {
                        double sum = 0;
                        for (int s = 0; s <= t; s++) {
                            sum += (double) probabilities[s] * v[s][kv * d + i];
                        }
                        attention[head * d + i] = (float) sum;
                    }
                }
                addInPlace(x[t], wo.times(attention));

                float[] h = rmsNorm(x[t], postNorm, config.rmsNormEps());
                float[] g = gate.times(h);
                float[] u = up.times(h);
                float[] a = new float[inter];
                for (int i = 0; i < inter; i++) {
                    a[i] = silu(g[i]) * u[i];
                }
                addInPlace(x[t], down.times(a));
            }
        }

        float[] finalNorm = vector("model.norm.weight", hidden);
        Matrix head = config.tieWordEmbeddings() ? embed : matrix("lm_head.weight", config.vocabSize(), hidden);
        float[][] logits = new float[n][];
        for (int t = 0; t < n; t++) {
            logits[t] = head.times(rmsNorm(x[t], finalNorm, config.rmsNormEps()));
        }
        return logits;
    }

    /** {@return {@code x / sqrt(mean(x^2) + eps) * weight}} */
    static float[] rmsNorm(float[] x, float[] weight, double eps) {
        double sumOfSquares = 0;
        for (float value : x) {
            sumOfSquares += (double) value * value;
        }
        float inverse = (float) (1 / Math.sqrt(sumOfSquares / x.length + eps));
        float[] out = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] * inverse * weight[i];
        }
        return out;
    }

    /**
     * Rotates every head of {@code x} (heads of {@code d} values, back to back) to {@code position}:
     * for {@code i < d/2} and {@code a = position * inverseFrequencies[i]},
     * {@code out[i] = x[i] cos a - x[i + d/2] sin a} and {@code out[i + d/2] = x[i + d/2] cos a + x[i] sin a}.
     *
     * @return {@code x}, rotated in place
     */
    static float[] rope(float[] x, int heads, int d, int position, double[] inverseFrequencies) {
        int half = d / 2;
        for (int i = 0; i < half; i++) {
            double angle = position * inverseFrequencies[i];
            float cos = (float) Math.cos(angle);
            float sin = (float) Math.sin(angle);
            for (int head = 0; head < heads; head++) {
                int lo = head * d + i;
                int hi = lo + half;
                float a = x[lo];
                float b = x[hi];
                x[lo] = a * cos - b * sin;
                x[hi] = b * cos + a * sin;
            }
        }
        return x;
    }

    /** {@return the softmax, the maximum subtracted first so no exponential overflows} */
    static float[] softmax(float[] scores) {
        float max = Float.NEGATIVE_INFINITY;
        for (float s : scores) {
            max = Math.max(max, s);
        }
        double sum = 0;
        float[] out = new float[scores.length];
        for (int i = 0; i < scores.length; i++) {
            out[i] = (float) Math.exp(scores[i] - max);
            sum += out[i];
        }
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) (out[i] / sum);
        }
        return out;
    }

    /** {@return {@code x * sigmoid(x)}} */
    static float silu(float x) {
        return (float) (x / (1 + Math.exp(-x)));
    }

    private static void addInPlace(float[] x, float[] delta) {
        for (int i = 0; i < x.length; i++) {
            x[i] += delta[i];
        }
    }
}
