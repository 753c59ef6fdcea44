package org.cudagraph4j.error;

import java.util.List;

/**
 * A CUDA 13 library could not be loaded from any of the places searched: the runtime
 * ({@code libcudart.so.13}), which everything needs, or NVRTC ({@code libnvrtc.so.13}), which only
 * {@link org.cudagraph4j.compile.Program} needs.
 *
 * <p>The message lists every place tried, with the reason each failed, and how to point the
 * library at a runtime.
 */
public final class CudaRuntimeNotFoundException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient List<String> attempts;

    /**
     * Creates the exception with a message naming {@code library}, listing {@code attempts}, then
     * {@code howToFix}.
     *
     * @param library what was looked for, e.g. "the CUDA runtime (libcudart.so.13)"
     * @param attempts one line per place tried, with why it failed
     * @param howToFix the remedy, appended after the list
     */
    public CudaRuntimeNotFoundException(String library, List<String> attempts, String howToFix) {
        super("could not load " + library + "; tried, in order:\n  "
                + String.join("\n  ", attempts) + "\n" + howToFix);
        this.attempts = List.copyOf(attempts);
    }

    /** {@return the places tried, in order, each with the reason it failed; an unmodifiable list} */
    public List<String> attempts() {
        return attempts;
    }
}
