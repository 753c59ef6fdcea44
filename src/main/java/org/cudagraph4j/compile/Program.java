package org.cudagraph4j.compile;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.internal.Nvrtc;

/**
 * CUDA C++ source compiled at run time by NVRTC ({@code libnvrtc.so.13}), to PTX or to a cubin
 * that {@link CompiledProgram#load()} turns into a {@link org.cudagraph4j.CudaLibrary} like any
 * shipped image: its kernels launch eagerly and capture into graphs like any other.
 *
 * <pre>{@code
 * Program program = Program.of("scale.cu", """
 *         template <typename T, int N>
 *         __global__ void scale(T* x, T factor, int n) {
 *             int i = (blockIdx.x * blockDim.x + threadIdx.x) * N;
 *             for (int k = 0; k < N && i + k < n; k++) x[i + k] *= factor;
 *         }
 *         """).withNameExpression("scale<float, 4>");
 * CompiledProgram compiled = program.compile(ProgramOptions.defaults(), CompileTarget.CUBIN);
 * try (CudaLibrary library = compiled.load()) {
 *     CudaKernel scale = library.kernel(compiled.loweredName("scale<float, 4>"));
 * }
 * }</pre>
 *
 * <p>NVRTC is opened on the first compilation, searched for as the runtime is (the system
 * property {@code org.cudagraph4j.nvrtc.path}, {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64},
 * the dynamic loader, {@code /usr/local/cuda/lib64}); without it, compiling throws a
 * {@link org.cudagraph4j.error.CudaRuntimeNotFoundException} listing each place tried, and the rest of
 * the library works as before. Compiling needs no GPU when the options name an architecture.
 *
 * <p>Immutable and thread-safe: each {@code with} method returns a copy, and compilations of one
 * program may run on several threads at once (each has its own NVRTC program).
 */
public final class Program {
    private final String name;
    private final String source;
    private final List<Nvrtc.Header> headers;
    private final List<String> nameExpressions;

    private Program(String name, String source, List<Nvrtc.Header> headers, List<String> nameExpressions) {
        this.name = name;
        this.source = source;
        this.headers = List.copyOf(headers);
        this.nameExpressions = List.copyOf(nameExpressions);
    }

    /**
     * A program of one source text.
     *
     * @param name its file name, as the log and {@code __FILE__} give it, e.g. {@code "scale.cu"}
     * @param source the CUDA C++ text
     * @return the program, with no headers and no name expressions
     */
    public static Program of(String name, String source) {
        return new Program(requireText(name, "name"), requireSource(source, "source"), List.of(), List.of());
    }

    /**
     * {@return this program with a header that {@code #include "name"} finds, given as text}
     *
     * @param name the name the source includes it by, e.g. {@code "util.cuh"}
     * @param source the header's text
     */
    public Program withHeader(String name, String source) {
        List<Nvrtc.Header> more = new ArrayList<>(headers);
        more.add(new Nvrtc.Header(requireText(name, "header name"), requireSource(source, "header source")));
        return new Program(this.name, this.source, more, nameExpressions);
    }

    /**
     * {@return this program with a name expression: a {@code __global__} function or template
     * instance, such as {@code "scale<float, 4>"}, whose lowered (mangled) name the compilation
     * reports through {@link CompiledProgram#loweredName(String)}; NVRTC instantiates the template}
     *
     * @param expression the expression, as C++ would name it
     */
    public Program withNameExpression(String expression) {
        List<String> more = new ArrayList<>(nameExpressions);
        more.add(requireText(expression, "name expression"));
        return new Program(name, source, headers, more);
    }

    /** {@return the program's name} */
    public String name() {
        return name;
    }

    /** {@return the program's source text} */
    public String source() {
        return source;
    }

    /** {@return the name expressions, in the order given} */
    public List<String> nameExpressions() {
        return nameExpressions;
    }

    /**
     * Compiles the program.
     *
     * @param options how; an empty architecture takes device 0's
     * @param target PTX or a cubin
     * @return the compiled image, its log (warnings) and lowered names
     * @throws CompileException if the source does not compile or NVRTC refuses an option or a
     *     name expression; it carries the whole log
     * @throws IllegalArgumentException if this NVRTC cannot compile for the architecture asked
     * @throws IllegalStateException if no architecture is given and there is no GPU to take it from
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException if NVRTC cannot be found
     */
    public CompiledProgram compile(ProgramOptions options, CompileTarget target) {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(target, "target");
        String architecture = options.architecture().orElseGet(Program::deviceArchitecture);
        requireSupported(architecture);
        List<String> nvrtcOptions = options.toNvrtcOptions(target, architecture);
        Nvrtc.Result result = Nvrtc.compile(source, name, headers, nvrtcOptions, nameExpressions,
                target == CompileTarget.CUBIN);
        if (!result.succeeded()) {
            String status = Nvrtc.statusText(result.status());
            String firstLine = result.log().lines().filter(line -> !line.isBlank()).findFirst().orElse("");
            throw new CompileException(name + ": " + result.failedCall() + " failed with " + status
                    + (firstLine.isEmpty() ? "" : ": " + firstLine) + " (options: " + String.join(" ", nvrtcOptions)
                    + ")" + headerHint(result.log()), status, result.log());
        }
        return new CompiledProgram(name, target, target == CompileTarget.PTX
                ? architecture.replace("sm_", "compute_") : architecture, result.image(), result.log(),
                result.loweredNames());
    }

    /**
     * What to do when a toolkit header includes a CCCL one ({@code cuda/std/...}, {@code cub/...},
     * {@code thrust/...}) that cannot be found: CUDA 13 moved them from {@code include} to
     * {@code include/cccl}, which nvcc searches by itself and NVRTC does not.
     */
    private static String headerHint(String log) {
        boolean missingCccl = log.lines().anyMatch(line -> line.contains("open source file")
                && (line.contains("\"cuda/") || line.contains("\"cub/") || line.contains("\"thrust/")));
        return missingCccl ? "; CUDA 13 keeps the CCCL headers (cuda/std, cub, thrust) in the toolkit's include/cccl,"
                + " which NVRTC does not search unless it is an include path" : "";
    }

    /** {@return NVRTC's version, such as {@code "13.0"}} */
    public static String nvrtcVersion() {
        int[] version = Nvrtc.version();
        return version[0] + "." + version[1];
    }

    /** {@return the architectures this NVRTC compiles for, as compute capabilities such as 90, ascending} */
    public static List<Integer> supportedArchitectures() {
        return Arrays.stream(Nvrtc.supportedArchitectures()).boxed().toList();
    }

    private static void requireSupported(String architecture) {
        int capability = Integer.parseInt(architecture.replaceAll("[^0-9]", ""));
        List<Integer> supported = supportedArchitectures();
        if (!supported.contains(capability)) {
            throw new IllegalArgumentException("NVRTC " + nvrtcVersion() + " cannot compile for " + architecture
                    + "; it supports " + supported.stream().map(value -> "sm_" + value)
                            .collect(Collectors.joining(", ")));
        }
    }

    private static String deviceArchitecture() {
        if (!Cuda.isAvailable()) {
            throw new IllegalStateException("no architecture given and no GPU to take it from ("
                    + Cuda.unavailableReason().orElse("no device") + "): name one with"
                    + " ProgramOptions.withArchitecture(\"sm_90\")");
        }
        return "sm_" + Cuda.device(0).properties().computeCapability();
    }

    private static String requireText(String value, String what) {
        Objects.requireNonNull(value, what);
        if (value.isBlank() || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a " + what + " must be non-blank text without NUL");
        }
        return value;
    }

    private static String requireSource(String value, String what) {
        Objects.requireNonNull(value, what);
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a " + what + " must not hold a NUL character (at index "
                    + value.indexOf('\0') + "): NVRTC reads it as a C string");
        }
        return value;
    }

    @Override
    public String toString() {
        return "Program[" + name + ", " + headers.size() + " headers, name expressions " + nameExpressions + "]";
    }
}
