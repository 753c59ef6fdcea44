package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** With native access denied, the library names that cause and its fix, not a missing CUDA install. */
class NativeAccessTest {
    @Test
    void deniedNativeAccessIsReportedAsSuchWithTheFlagToAdd() throws Exception {
        // JDK 24 added --illegal-native-access; before it, naming any other module denies this one.
        String deny = Runtime.version().feature() >= 24 ? "--illegal-native-access=deny"
                : "--enable-native-access=java.base";
        ChildJvm.Result result = ChildJvm.run(List.of(deny), NativeAccessProbe.class, List.of(), 60);
        String output = result.output();
        assertTrue(output.contains("java.lang.IllegalCallerException: cudagraph4j calls the CUDA runtime through the"
                + " Foreign Function & Memory API, and this JVM denies native access to the class path: run java with"
                + " --enable-native-access=ALL-UNNAMED"), output);
        assertFalse(output.contains("Install the CUDA"), output);
    }
}
