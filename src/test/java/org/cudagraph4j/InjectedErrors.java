package org.cudagraph4j;

import org.cudagraph4j.error.CudaException;

/**
 * {@link CudaException}s for tests that inject a failure without a GPU. Only the library makes
 * them (the constructor is package-private); tests of other packages get them here.
 */
public final class InjectedErrors {
    private InjectedErrors() {}

    /** What the library raises when {@code function} returns {@code code}, with the given runtime texts. */
    public static CudaException cudaException(String function, int code, String cudaName, String explanation,
            String context) {
        return new CudaException(function, code, cudaName, explanation, context);
    }
}
