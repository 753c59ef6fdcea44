package org.cudagraph4j.compile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.cudagraph4j.internal.GeneratedBindingsTest;
import org.cudagraph4j.internal.NvrtcLoader;
import org.cudagraph4j.internal.image.ImageValidator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * NVRTC from Java, with no GPU: sources compile to PTX and cubins that pass the library's image
 * check, templates are reached through name expressions, and every kind of failure is a typed
 * exception that names it. Skipped, saying so, where {@code libnvrtc.so.13} cannot be found
 * ({@code .ci/run} provides one).
 */
@ExtendWith(NvrtcPresence.class)
class ProgramTest {
    static final String SCALE = """
            template <typename T, int N>
            __global__ void scale(T* x, T factor, int n) {
                int i = (blockIdx.x * blockDim.x + threadIdx.x) * N;
                for (int k = 0; k < N && i + k < n; k++) {
                    x[i + k] *= factor;
                }
            }
            extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                    y[i] = a * x[i] + y[i];
                }
            }
            """;
    private static final ProgramOptions SM_90 = ProgramOptions.defaults().withArchitecture("sm_90");

    @Test
    void everyAllowListedFunctionIsExportedByNvrtc() throws Exception {
        List<String> functions = GeneratedBindingsTest.allowListedFunctions("nvrtc.args");
        SymbolLookup nvrtc = NvrtcLoader.ensureLoaded();
        assertTrue(functions.size() >= 15, "allow-list parsed: " + functions);
        assertEquals(List.of(), functions.stream().filter(f -> nvrtc.find(f).isEmpty()).toList(),
                "not exported by " + NvrtcLoader.loadedFile().orElseThrow());
    }

    @Test
    void aSourceCompilesToACubinThatPassesTheImageCheck() {
        CompiledProgram cubin = Program.of("scale.cu", SCALE).compile(SM_90, CompileTarget.CUBIN);
        byte[] image = cubin.image();
        assertEquals("sm_90", cubin.architecture());
        assertEquals(CompileTarget.CUBIN, cubin.target());
        assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, java.util.Arrays.copyOf(image, 4));
        assertEquals(ImageValidator.Kind.CUBIN, ImageValidator.validate("scale.cu", image));
    }

    @Test
    void ptxIsForTheVirtualArchitectureAndEndsInANul() {
        CompiledProgram ptx = Program.of("scale.cu", SCALE).compile(SM_90, CompileTarget.PTX);
        byte[] image = ptx.image();
        String text = new String(image, 0, image.length - 1, StandardCharsets.US_ASCII);
        assertEquals("compute_90", ptx.architecture());
        assertEquals(0, image[image.length - 1]);
        assertTrue(text.contains(".target sm_90"), text.lines().limit(20).toList().toString());
        assertTrue(text.contains(".entry axpy("), "the extern \"C\" kernel keeps its name");
        assertEquals(ImageValidator.Kind.PTX, ImageValidator.validate("scale.cu", image));
    }

    @Test
    void aNameExpressionInstantiatesATemplateAndGivesItsLoweredName() {
        CompiledProgram cubin = Program.of("scale.cu", SCALE)
                .withNameExpression("scale<float, 4>")
                .withNameExpression("scale<double, 2>")
                .compile(SM_90, CompileTarget.CUBIN);
        String single = cubin.loweredName("scale<float, 4>");
        String dbl = cubin.loweredName("scale<double, 2>");
        assertEquals("_Z5scaleIfLi4EEvPT_S0_i", single);
        assertEquals("_Z5scaleIdLi2EEvPT_S0_i", dbl);
        assertEquals(List.of("scale<float, 4>", "scale<double, 2>"), List.copyOf(cubin.loweredNames().keySet()));
        String image = new String(cubin.image(), StandardCharsets.ISO_8859_1);
        assertTrue(image.contains(single) && image.contains(dbl), "both instances are in the cubin");
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> cubin.loweredName("scale<int, 4>"));
        assertTrue(unknown.getMessage().contains("was not a name expression of scale.cu"), unknown.getMessage());
    }

    @Test
    void aCompileErrorCarriesTheWholeLogAndItsFirstLineIsInTheMessage() {
        String broken = """
                __global__ void k(float* x) {
                    x[0] = undefined_one;
                    x[1] = undefined_two;
                }
                """;
        CompileException e = assertThrows(CompileException.class,
                () -> Program.of("broken.cu", broken).compile(SM_90, CompileTarget.CUBIN));
        assertEquals("NVRTC_ERROR_COMPILATION", e.status());
        assertTrue(e.getMessage().startsWith("broken.cu: nvrtcCompileProgram failed with NVRTC_ERROR_COMPILATION: "
                + "broken.cu(2): error: identifier \"undefined_one\" is undefined"), e.getMessage());
        assertTrue(e.log().contains("broken.cu(3): error: identifier \"undefined_two\" is undefined"), e.log());
        assertTrue(e.getMessage().contains("--gpu-architecture=sm_90"), "the message gives the options");
    }

    @Test
    void anUnknownOptionIsRefusedByName() {
        CompileException e = assertThrows(CompileException.class, () -> Program.of("scale.cu", SCALE)
                .compile(SM_90.withOption("--no-such-option"), CompileTarget.CUBIN));
        assertEquals("NVRTC_ERROR_INVALID_OPTION", e.status());
        assertTrue(e.getMessage().contains("--no-such-option"), e.getMessage());
    }

    @Test
    void aNameExpressionThatNamesNothingIsRefused() {
        CompileException e = assertThrows(CompileException.class, () -> Program.of("scale.cu", SCALE)
                .withNameExpression("no_such_kernel<float>").compile(SM_90, CompileTarget.CUBIN));
        assertTrue(e.getMessage().startsWith("scale.cu: nvrtcCompileProgram failed"), e.getMessage());
        assertTrue(e.log().contains("no_such_kernel"), e.log());
    }

    @Test
    void headersGivenAsTextAreIncludedAndAMissingOneIsAnError() {
        String source = """
                #include "twice.cuh"
                extern "C" __global__ void k(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }
                """;
        Program program = Program.of("k.cu", source);
        CompileException missing = assertThrows(CompileException.class,
                () -> program.compile(SM_90, CompileTarget.PTX));
        assertTrue(missing.log().contains("twice.cuh"), missing.log());
        CompiledProgram ptx = program.withHeader("twice.cuh", "__device__ inline float twice(float v) { return 2 * v; }")
                .compile(SM_90, CompileTarget.PTX);
        assertTrue(new String(ptx.image(), StandardCharsets.US_ASCII).contains(".entry k("));
    }

    @Test
    void aMissingCcclHeaderIsExplainedAndAPlainMissingHeaderIsNot() {
        CompileException cccl = assertThrows(CompileException.class, () -> Program.of("k.cu",
                "#include <cuda/std/no_such_header>\n__global__ void k() {}\n").compile(SM_90, CompileTarget.PTX));
        assertTrue(cccl.getMessage().endsWith("; CUDA 13 keeps the CCCL headers (cuda/std, cub, thrust) in the "
                + "toolkit's include/cccl, which NVRTC does not search unless it is an include path"), cccl.getMessage());
        CompileException plain = assertThrows(CompileException.class, () -> Program.of("k.cu",
                "#include <no_such_header.h>\n__global__ void k() {}\n").compile(SM_90, CompileTarget.PTX));
        assertTrue(plain.getMessage().endsWith(")"), plain.getMessage());
    }

    @Test
    void definesAndTheDialectReachTheCompiler() {
        String source = """
                #if !defined(WIDTH) || WIDTH != 8
                #error WIDTH must be 8
                #endif
                #if __cplusplus < 202002L
                #error needs C++20
                #endif
                extern "C" __global__ void k(float* x) { x[threadIdx.x % WIDTH] = 1; }
                """;
        Program program = Program.of("defines.cu", source);
        CompileException noDefine = assertThrows(CompileException.class,
                () -> program.compile(SM_90.withStandard("c++20"), CompileTarget.PTX));
        assertTrue(noDefine.getMessage().contains("WIDTH must be 8"), noDefine.getMessage());
        CompileException oldDialect = assertThrows(CompileException.class,
                () -> program.compile(SM_90.withDefine("WIDTH", "8").withStandard("c++17"), CompileTarget.PTX));
        assertTrue(oldDialect.getMessage().contains("needs C++20"), oldDialect.getMessage());
        program.compile(SM_90.withDefine("WIDTH", "8").withStandard("c++20").withLineInfo(true).withFastMath(true),
                CompileTarget.PTX);
    }

    @Test
    void warningsAreInTheLogOfASuccessfulCompilation() {
        String source = "extern \"C\" __global__ void k(float* x) { int unused = 3; x[0] = 1; }\n";
        CompiledProgram ptx = Program.of("warn.cu", source).compile(SM_90, CompileTarget.PTX);
        assertTrue(ptx.log().contains("unused"), "log: " + ptx.log());
    }

    @Test
    void anArchitectureThisNvrtcCannotTargetIsRefusedWithTheSupportedOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Program.of("scale.cu", SCALE)
                .compile(ProgramOptions.defaults().withArchitecture("sm_30"), CompileTarget.CUBIN));
        assertTrue(e.getMessage().matches("NVRTC 13\\.\\d+ cannot compile for sm_30; it supports sm_75, .*sm_90, .*"),
                e.getMessage());
        assertTrue(Program.supportedArchitectures().contains(90));
    }

    @Test
    void compilationsOnManyThreadsAtOnceGiveIdenticalImages() throws Exception {
        Program program = Program.of("scale.cu", SCALE).withNameExpression("scale<float, 4>");
        byte[] expected = program.compile(SM_90, CompileTarget.CUBIN).image();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<byte[]>> images = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                images.add(pool.submit(() -> program.compile(SM_90, CompileTarget.CUBIN).image()));
            }
            for (Future<byte[]> image : images) {
                assertArrayEquals(expected, image.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
