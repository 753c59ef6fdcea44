package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;

/** What the tests of the loaders built on {@link NativeLibrarySearch} check alike. */
final class LibrarySearchChecks {
    private LibrarySearchChecks() {}

    /**
     * A search over a missing file and a library without {@code symbol} fails with one error that
     * names the library ({@code description}, {@code soname}), every place tried and why it failed,
     * and the system property that points at the library.
     */
    static void assertAbsenceIsNamed(NativeLibrarySearch search, String description, String soname, String symbol,
            String property) {
        List<NativeLibrarySearch.Candidate> candidates = List.of(
                new NativeLibrarySearch.Candidate("$CUDA_HOME", "/nonexistent/lib64/" + soname),
                new NativeLibrarySearch.Candidate("dynamic loader", "libm.so.6"));

        CudaRuntimeNotFoundException e = assertThrows(CudaRuntimeNotFoundException.class,
                () -> search.load(candidates));

        assertTrue(e.getMessage().startsWith("could not load " + description + " (" + soname + "); tried, in order:"),
                e.getMessage());
        assertEquals(List.of("$CUDA_HOME: /nonexistent/lib64/" + soname + " (no such file)",
                "dynamic loader: libm.so.6 (opened, but it exports no " + symbol + ")"), e.attempts());
        assertTrue(e.getMessage().contains("-D" + property + "=/path/to/" + soname), e.getMessage());
    }
}
