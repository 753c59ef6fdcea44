package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** What needs the runtime library but no GPU: versions, and which runtime was loaded. */
class CudaTest {
    @Test
    void reportsWhichRuntimeWasLoadedAndFromWhere() {
        RuntimeLibrary runtime = Cuda.runtimeLibrary();

        assertTrue(runtime.file().isAbsolute(), runtime.toString());
        assertTrue(runtime.file().getFileName().toString().startsWith("libcudart.so.13"), runtime.toString());
        assertTrue(List.of("-Dorg.cudagraph4j.cudart.path", "$CUDA_HOME", "$CUDA_PATH", "dynamic loader",
                "default install").contains(runtime.foundBy()), runtime.toString());
        assertEquals(Cuda.runtimeVersion(), runtime.version());
        assertTrue(runtime.version() >= 13000, runtime.toString());
    }

    @Test
    void knowsItsOwnVersion() {
        assertTrue(Cuda.libraryVersion().matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), Cuda.libraryVersion());
    }
}
