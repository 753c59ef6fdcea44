package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.SymbolLookup;
import java.util.List;
import org.cudagraph4j.GpuTest;
import org.junit.jupiter.api.Test;

/** The cuBLASLt found on the GPU host exports every function of the allow-list, at version 13. */
@GpuTest
class CublasLtBindingsGpuTest {
    @Test
    void everyAllowListedFunctionIsExportedByTheCublasLtFound() throws IOException {
        List<String> functions = GeneratedBindingsTest.allowListedFunctions("cublaslt.args");
        SymbolLookup cublasLt = CublasLtLoader.ensureLoaded();

        List<String> missing = functions.stream().filter(f -> cublasLt.find(f).isEmpty()).toList();

        assertTrue(functions.size() >= 15, "allow-list parsed: " + functions);
        assertTrue(missing.isEmpty(), "not exported by " + CublasLtLoader.loadedFile().orElseThrow() + ": " + missing);
        long version = CublasLt.version();
        assertTrue(version / 10_000 == 13, "cuBLASLt " + version + " from " + CublasLtLoader.loadedFile().orElseThrow());
    }
}
