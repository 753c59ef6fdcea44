package org.cudagraph4j.llm;

/**
 * How a decoder picks each next token, on the device: greedily (the most likely token, the smallest
 * id among equals, as {@code torch.argmax}), or by sampling at a temperature from the {@code topK}
 * most likely tokens, then from the smallest of those whose probability reaches {@code topP}, the
 * order of transformers' warpers. Sampling is seeded: the same seed gives the same tokens.
 *
 * <p>Thread safety: immutable; safe to share between threads.
 *
 * @param temperature the softmax temperature; 0 for greedy, else positive and finite
 * @param topK how many of the most likely tokens to sample from, 1 to {@link #MAX_TOP_K}
 * @param topP the probability mass to keep within those, in (0, 1]
 * @param seed the generator's seed; sequence {@code i} of a batch uses {@code seed + i}
 */
public record Sampling(float temperature, int topK, float topP, long seed) {
    /** The most tokens sampling may draw from. */
    public static final int MAX_TOP_K = 64;

    /**
     * Checks the parameters.
     *
     * @throws IllegalArgumentException naming the parameter out of range
     */
    public Sampling {
        if (!(temperature >= 0 && Float.isFinite(temperature))) {
            throw new IllegalArgumentException("temperature must be 0 (greedy) or positive and finite, got "
                    + temperature);
        }
        if (topK < 1 || topK > MAX_TOP_K) {
            throw new IllegalArgumentException("topK must be 1 to " + MAX_TOP_K + ", got " + topK);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("topP must be in (0, 1], got " + topP);
        }
    }

    /**
     * The most likely token at every step.
     *
     * @return greedy decoding
     */
    public static Sampling greedy() {
        return new Sampling(0, 1, 1, 0);
    }

    /**
     * Sampling at {@code temperature} from the {@code topK} most likely tokens, then the {@code topP}
     * nucleus of those.
     *
     * @param temperature positive and finite
     * @param topK 1 to {@link #MAX_TOP_K}
     * @param topP in (0, 1]
     * @param seed the generator's seed
     * @return the sampling
     * @throws IllegalArgumentException if a parameter is out of range
     */
    public static Sampling of(float temperature, int topK, float topP, long seed) {
        if (!(temperature > 0)) {
            throw new IllegalArgumentException("a sampling temperature must be positive, got " + temperature
                    + "; use Sampling.greedy() for the most likely token");
        }
        return new Sampling(temperature, topK, topP, seed);
    }

    /** {@return whether this picks the most likely token} */
    public boolean isGreedy() {
        return temperature == 0 || topK == 1;
    }
}
