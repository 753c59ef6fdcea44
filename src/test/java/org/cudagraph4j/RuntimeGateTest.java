package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.cudagraph4j.internal.CudartLoader;
import org.junit.jupiter.api.Test;

/**
 * No public path reaches the generated bindings before {@link CudartLoader} has loaded the runtime:
 * the bindings resolve each symbol once, and one resolved too early fails for the life of the JVM.
 * Needs the runtime installed (as the bindings tests do), not a GPU.
 */
class RuntimeGateTest {
    private static final String MISSING = "-D" + CudartLoader.PATH_PROPERTY + "=/nonexistent/libcudart.so.13";

    @Test
    void everyPublicEntryPointStopsAtTheGateAndLeavesTheBindingsUsable() throws Exception {
        String runtime = runtimeFile();

        ChildJvm.Result result = ChildJvm.run(List.of("--enable-native-access=ALL-UNNAMED", MISSING),
                RuntimeGateProbe.class, List.of(runtime), 120);

        assertEquals(0, result.exitCode(), result.output());
        assertTrue(result.output().contains(" function holders initialize"), result.output());
    }

    @Test
    void theProbeCatchesABindingCalledBeforeTheGate() throws Exception {
        String runtime = runtimeFile();

        ChildJvm.Result result = ChildJvm.run(List.of("--enable-native-access=ALL-UNNAMED", MISSING),
                RuntimeGateProbe.class, List.of(runtime, "--call-a-binding-first"), 120);

        assertEquals(1, result.exitCode(), result.output());
        assertTrue(result.output().contains("FINDING binding broken for the life of the JVM: "
                + "org.cudagraph4j.cudart.cudart_h$cudaGetDeviceCount"), result.output());
    }

    private static String runtimeFile() {
        CudartLoader.ensureLoaded();
        return CudartLoader.loadedFile().orElseThrow().toString();
    }
}
