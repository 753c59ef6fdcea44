package org.cudagraph4j.blas;

/**
 * How a {@link CublasLt} handle chooses the algorithm of each product.
 */
public enum AlgorithmChoice {
    /** cuBLASLt's heuristic's first choice, asked once per product: no GPU time spent choosing. */
    HEURISTIC,
    /**
     * The fastest of the heuristic's first {@value CublasLt#TIMED_CANDIDATES} choices, timed once per
     * product on its first run outside a capture (each candidate run once, then four times between
     * CUDA events, on that run's own buffers, each time after a write of twice the L2 cache so that it
     * reads from device memory as a model's layers do; the calling thread waits for them and a
     * scratch buffer of twice the L2 is allocated meanwhile), then kept for every later run and
     * capture; a capture before that runs the heuristic's first choice. cuBLASLt's heuristic is a model; for skinny products its first choice is not always
     * the fastest. A run with {@code beta} other than 0, which reads C, is never timed: the candidates
     * would overwrite D.
     */
    TIMED
}
