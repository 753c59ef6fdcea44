package org.cudagraph4j.llm;

/**
 * Receives tokens as a decoder makes them, on the thread that called {@code generate}, in order for
 * each sequence.
 */
@FunctionalInterface
public interface TokenListener {
    /**
     * One new token.
     *
     * @param sequence the index of the sequence in the batch given to {@code generate}
     * @param token the token id
     */
    void onToken(int sequence, int token);
}
