package org.cudagraph4j;

import java.util.List;

/**
 * No CUDA 13 runtime ({@code libcudart.so.13}) could be loaded from any of the places searched.
 *
 * <p>The message lists every place tried, with the reason each failed, and how to point the
 * library at a runtime.
 */
public final class CudaRuntimeNotFoundException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient List<String> attempts;

    /**
     * Creates the exception with a message listing {@code attempts}, then {@code howToFix}.
     *
     * @param attempts one line per place tried, with why it failed
     * @param howToFix the remedy, appended after the list
     */
    CudaRuntimeNotFoundException(List<String> attempts, String howToFix) {
        super("could not load the CUDA runtime (libcudart.so.13); tried, in order:\n  "
                + String.join("\n  ", attempts) + "\n" + howToFix);
        this.attempts = List.copyOf(attempts);
    }

    /** {@return the places tried, in order, each with the reason it failed; an unmodifiable list} */
    public List<String> attempts() {
        return attempts;
    }
}
