package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.cudagraph4j.ElementType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine.ParameterException;

/** The server's command line: help, refusals of bad options, and what each option sets. */
class ServerCommandTest {
    /** The exit status and what went to stdout and stderr. */
    private record Run(int status, String out, String err) {}

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = ServerCommand.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void helpGoesToStdoutAndExitsZero() {
        Run help = run("--help");
        assertEquals(0, help.status());
        assertTrue(help.out().startsWith("Usage: InferenceServer"), help.out());
        assertTrue(help.out().contains("--max-body-bytes"), help.out());
        assertEquals("", help.err());
    }

    @Test
    void anUnknownOrInvalidOptionIsOneLineNamingItAndExitTwo() {
        String[][] cases = {
            {"--model", "m", "--backend", "cpux"},
            {"--model", "m", "--port", "abc"},
            {"--model", "m", "--no-such-option"},
            {"--model", "m", "--port", "70000"},
            {"--model", "m", "--request-timeout", "soon"},
            {"--model", "m", "--max-rows", "0"},
            {},
            {"--model", "m", "--generate", "g"},
        };
        String[] named = {"--backend", "--port", "--no-such-option", "--port", "soon", "maxRows", "--model",
            "--generate"};
        for (int i = 0; i < cases.length; i++) {
            Run bad = run(cases[i]);
            assertEquals(2, bad.status(), List.of(cases[i]).toString());
            assertEquals("", bad.out());
            assertEquals(1, bad.err().lines().count(), bad.err());
            assertTrue(bad.err().startsWith("InferenceServer: ") && bad.err().contains(named[i]), bad.err());
        }
    }

    @Test
    void aMissingOrMalformedModelFileIsOneLineAndExitOne(@TempDir Path dir) throws Exception {
        Run missing = run("--model", dir.resolve("none.safetensors").toString(), "--backend", "cpu");
        assertEquals(1, missing.status());
        assertEquals(1, missing.err().lines().count(), missing.err());
        assertEquals("InferenceServer: cannot serve " + dir.resolve("none.safetensors") + ": no such file",
                missing.err().strip());
        Path junk = Files.write(dir.resolve("junk.safetensors"), new byte[] {1, 2, 3});
        Run malformed = run("--model", junk.toString(), "--backend", "cpu");
        assertEquals(1, malformed.status());
        assertEquals(1, malformed.err().lines().count(), malformed.err());
    }

    @Test
    void generateWritesAModelTheServerCanLoad(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("mlp.safetensors");
        Run generate = run("--generate", file.toString(), "--width", "8", "--layers", "2", "--seed", "3");
        assertEquals(0, generate.status(), generate.err());
        assertEquals(MlpWeights.random(8, 2, 3).widths(), MlpWeights.load(file).widths());
        assertEquals(ElementType.FLOAT32, MlpWeights.load(file).elementType(), "FP32 by default");
    }

    @Test
    void generateWritesAHalfPrecisionModelOfDtype(@TempDir Path dir) throws Exception {
        for (String dtype : List.of("FP16", "BF16")) {
            Path file = dir.resolve(dtype + ".safetensors");
            Run generate = run("--generate", file.toString(), "--width", "8", "--layers", "2", "--seed", "3", "--dtype",
                    dtype);
            assertEquals(0, generate.status(), generate.err());
            ElementType type = dtype.equals("FP16") ? ElementType.FLOAT16 : ElementType.BFLOAT16;
            MlpWeights expected = MlpWeights.random(8, 2, 3).withElementType(type);
            MlpWeights loaded = MlpWeights.load(file);
            assertEquals(type, loaded.elementType());
            assertArrayEquals(expected.weights().get(1), loaded.weights().get(1));
        }
        Run bad = run("--generate", dir.resolve("x.safetensors").toString(), "--dtype", "FP8");
        assertEquals(2, bad.status());
        assertTrue(bad.err().startsWith("InferenceServer: ") && bad.err().contains("--dtype")
                && bad.err().contains("FP32, FP16, BF16"), bad.err());
        assertTrue(run("--help").out().contains("--dtype=FP32|FP16|BF16"));
    }

    @Test
    void optionsSetTheLimits() {
        ServerCommand command = ServerCommand.parse("--model", "m", "--backend", "cpu", "--max-body-bytes", "1024",
                "--max-buffered-bytes", "4096", "--max-rows", "7", "--max-elements", "70", "--max-in-flight", "3",
                "--max-connections", "9", "--request-timeout", "250ms", "--read-timeout", "2s",
                "--shutdown-timeout", "PT1M");
        assertEquals(new ServerLimits(1024, 4096, 7, 70, 3, 9, Duration.ofMillis(250), Duration.ofSeconds(2),
                Duration.ofMinutes(1)), command.limits());
        assertEquals(ServerCommand.Backend.cpu, command.backend);
        assertThrows(ParameterException.class, () -> ServerCommand.parse("--model", "m", "--max-buffered-bytes", "1"));
        ServerCommand timeouts = ServerCommand.parse("--model", "m", "--backend", "cpu", "--header-timeout", "3s",
                "--write-timeout", "500ms", "--compute-threads", "2");
        assertEquals(Duration.ofSeconds(3), timeouts.limits().headerTimeout());
        assertEquals(Duration.ofMillis(500), timeouts.limits().writeTimeout());
        assertEquals(2, timeouts.limits().computeThreads());
        assertThrows(ParameterException.class, () -> ServerCommand.parse("--model", "m", "--compute-threads", "0"));
        assertThrows(ParameterException.class, () -> ServerCommand.parse("--model", "m", "--header-timeout", "0s"));
    }

    @Test
    void llamaServesOnTheGpuUnderItsDirectorysNameAndRefusesBadOptions(@TempDir Path dir) {
        Path checkpoint = dir.resolve("Llama-3.2-1B");
        ServerCommand command = ServerCommand.parse("--llama", checkpoint.toString());
        assertEquals("Llama-3.2-1B", command.llamaName(), "named after the checkpoint's directory");
        assertEquals(8, command.llamaBatch);
        assertEquals(2048, command.llamaMaxSequence);
        assertEquals("chat", ServerCommand.parse("--llama", checkpoint.toString(), "--llama-name", "chat").llamaName());
        ServerCommand.parse("--model", "m", "--llama", checkpoint.toString()); // both, under two names
        String llama = checkpoint.toString();
        String[][] cases = {
            {"--llama", llama, "--backend", "cpu"},
            {"--llama", llama, "--llama-batch", "0"},
            {"--llama", llama, "--llama-batch", "1000"},
            {"--llama", llama, "--llama-max-sequence", "1"},
            {"--llama", llama, "--llama-queue", "-1"},
            {"--generate", "g", "--llama", llama},
            {"--model", "m", "--llama", llama, "--llama-name", "mlp"},
        };
        String[] named = {"--llama needs the GPU backend", "--llama-batch", "--llama-batch", "--llama-max-sequence",
            "--llama-queue", "--generate", "--llama-name mlp"};
        for (int i = 0; i < cases.length; i++) {
            Run bad = run(cases[i]);
            assertEquals(2, bad.status(), List.of(cases[i]).toString());
            assertEquals(1, bad.err().lines().count(), bad.err());
            assertTrue(bad.err().startsWith("InferenceServer: ") && bad.err().contains(named[i]), bad.err());
        }
    }

    @Test
    void devicesIsAllOrOrdinalsAndABadValueSaysWhatIsWrong() {
        assertEquals(List.of(0, 1, 2), ServerCommand.deviceOrdinals("all", 3));
        assertEquals(List.of(0), ServerCommand.deviceOrdinals("0", 3));
        assertEquals(List.of(1), ServerCommand.deviceOrdinals("1", 3), "one number is an ordinal, not a count");
        assertEquals(List.of(2, 0), ServerCommand.deviceOrdinals("2, 0", 3));
        for (String bad : List.of("", "one", "0,,1", "-1", "0-1", "ALL", "1.0")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ServerCommand.deviceOrdinals(bad, 3), bad);
            assertEquals("--devices takes all, or GPU ordinals separated by commas such as 0 or 0,1; got \"" + bad
                    + "\"", e.getMessage());
        }
        assertEquals("--devices names GPU 2, but this host has 2 GPU(s), ordinals 0 to 1", assertThrows(
                IllegalArgumentException.class, () -> ServerCommand.deviceOrdinals("0,2", 2)).getMessage());
        assertEquals("--devices names GPU 1 twice", assertThrows(IllegalArgumentException.class,
                () -> ServerCommand.deviceOrdinals("1,0,1", 2)).getMessage());
        assertEquals("--devices all: this host has no GPU (serve on the CPU with --backend cpu)",
                assertThrows(IllegalArgumentException.class, () -> ServerCommand.deviceOrdinals("all", 0)).getMessage());
    }
}
