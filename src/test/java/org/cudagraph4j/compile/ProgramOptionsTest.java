package org.cudagraph4j.compile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The options as NVRTC gets them, and each bad value refused by name before NVRTC is opened. */
class ProgramOptionsTest {
    @Test
    void optionsBecomeNvrtcFlagsInOrder() {
        ProgramOptions options = ProgramOptions.defaults().withArchitecture("sm_90a").withStandard("c++20")
                .withDefine("WIDTH", "8").withDefine("FAST").withIncludePath("/opt/include").withFastMath(true)
                .withLineInfo(true).withOption("--maxrregcount=64");
        assertEquals(List.of("--gpu-architecture=sm_90a", "--std=c++20", "--define-macro=WIDTH=8",
                "--define-macro=FAST", "--include-path=/opt/include", "--use_fast_math", "--generate-line-info",
                "--maxrregcount=64"), options.toNvrtcOptions(CompileTarget.CUBIN, "sm_90a"));
        assertEquals(List.of("--gpu-architecture=compute_90a", "--std=c++20", "--define-macro=WIDTH=8",
                "--define-macro=FAST", "--include-path=/opt/include", "--use_fast_math", "--generate-line-info",
                "--maxrregcount=64"), options.toNvrtcOptions(CompileTarget.PTX, "sm_90a"));
        assertEquals(List.of("--gpu-architecture=sm_100"),
                ProgramOptions.defaults().toNvrtcOptions(CompileTarget.CUBIN, "sm_100"));
    }

    @Test
    void badValuesAreRefusedByName() {
        ProgramOptions defaults = ProgramOptions.defaults();
        assertMessage("architecture must be a real one such as sm_90", () -> defaults.withArchitecture("90"));
        assertMessage("architecture must be a real one such as sm_90", () -> defaults.withArchitecture("compute_90"));
        assertMessage("standard must be one of c++03", () -> defaults.withStandard("c++99"));
        assertMessage("a macro name must be an identifier, not \"1X\"", () -> defaults.withDefine("1X"));
        assertMessage("the value of macro X holds a newline", () -> defaults.withDefine("X", "1\n#error"));
        assertMessage("an option must be non-blank", () -> defaults.withOption(" "));
        assertMessage("an include path must be non-blank", () -> defaults.withIncludePath(""));
        assertMessage("must not hold a NUL character (at index 3)", () -> Program.of("k.cu", "abc\0def"));
        assertMessage("a name must be non-blank", () -> Program.of(" ", "x"));
        assertMessage("a name expression must be non-blank", () -> Program.of("k.cu", "x").withNameExpression(""));
    }

    private static void assertMessage(String expected, Runnable action) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, action::run);
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
