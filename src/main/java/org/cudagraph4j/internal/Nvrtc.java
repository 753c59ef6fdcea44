package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.nvrtc.nvrtc_h;

/**
 * The calls into NVRTC: one compilation from source to PTX or a cubin, start to end, and the
 * version queries. NVRTC needs no GPU and no CUDA context. Every status is checked; a failed call
 * comes back as a {@link Result} naming it, for the caller's typed exception, with the program's
 * log read first whenever there is a program to read it from.
 */
@SuppressWarnings("restricted") // NVRTC returns C strings of unknown length: read up to their NUL
public final class Nvrtc {
    public static final int SUCCESS = 0;

    private Nvrtc() {}

    /** A header given as text, found by {@code #include "name"}. */
    public record Header(String name, String source) {}

    /**
     * What one compilation gave.
     *
     * @param failedCall the NVRTC function that failed, or {@code null} on success
     * @param status its status ({@link #SUCCESS} on success)
     * @param log the program log: errors and warnings, possibly empty
     * @param image the PTX (with its terminating NUL) or cubin; empty unless successful
     * @param loweredNames each name expression's lowered (mangled) name, in the order given
     */
    public record Result(String failedCall, int status, String log, byte[] image, Map<String, String> loweredNames) {
        public boolean succeeded() {
            return failedCall == null;
        }
    }

    /** {@return NVRTC's version as {@code {major, minor}}} */
    public static int[] version() {
        NvrtcLoader.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(JAVA_INT);
            MemorySegment minor = arena.allocate(JAVA_INT);
            check(nvrtc_h.nvrtcVersion(major, minor), "nvrtcVersion");
            return new int[] {major.get(JAVA_INT, 0), minor.get(JAVA_INT, 0)};
        }
    }

    /** {@return the architectures this NVRTC compiles for, as compute capabilities such as 90, ascending} */
    public static int[] supportedArchitectures() {
        NvrtcLoader.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            check(nvrtc_h.nvrtcGetNumSupportedArchs(count), "nvrtcGetNumSupportedArchs");
            MemorySegment archs = arena.allocate(JAVA_INT, Math.max(1, count.get(JAVA_INT, 0)));
            check(nvrtc_h.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs");
            return archs.asSlice(0, (long) count.get(JAVA_INT, 0) * Integer.BYTES).toArray(JAVA_INT);
        }
    }

    /** The text NVRTC gives for {@code status}. */
    public static String statusText(int status) {
        NvrtcLoader.ensureLoaded();
        MemorySegment text = nvrtc_h.nvrtcGetErrorString(status);
        return text.equals(MemorySegment.NULL) ? "NVRTC status " + status
                : text.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /**
     * Compiles one program: create, register the name expressions, compile, read the log, the
     * output and the lowered names, destroy.
     *
     * @param cubin a cubin if true (options must name a real architecture, {@code sm_XY}); PTX otherwise
     */
    public static Result compile(String source, String name, List<Header> headers, List<String> options,
            List<String> nameExpressions, boolean cubin) {
        NvrtcLoader.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment programOut = arena.allocate(ADDRESS);
            MemorySegment headerSources = arena.allocate(ADDRESS, Math.max(1, headers.size()));
            MemorySegment headerNames = arena.allocate(ADDRESS, Math.max(1, headers.size()));
            for (int i = 0; i < headers.size(); i++) {
                headerSources.setAtIndex(ADDRESS, i, arena.allocateFrom(headers.get(i).source()));
                headerNames.setAtIndex(ADDRESS, i, arena.allocateFrom(headers.get(i).name()));
            }
            int status = nvrtc_h.nvrtcCreateProgram(programOut, arena.allocateFrom(source), arena.allocateFrom(name),
                    headers.size(), headerSources, headerNames);
            if (status != SUCCESS) {
                return failure("nvrtcCreateProgram", status, "");
            }
            MemorySegment program = programOut.get(ADDRESS, 0);
            Result result;
            try {
                result = compile(arena, program, options, nameExpressions, cubin);
            } catch (RuntimeException | Error e) {
                nvrtc_h.nvrtcDestroyProgram(programOut); // its status must not hide the failure
                throw e;
            }
            check(nvrtc_h.nvrtcDestroyProgram(programOut), "nvrtcDestroyProgram");
            return result;
        }
    }

    private static Result compile(Arena arena, MemorySegment program, List<String> options,
            List<String> nameExpressions, boolean cubin) {
        for (String expression : nameExpressions) {
            int status = nvrtc_h.nvrtcAddNameExpression(program, arena.allocateFrom(expression));
            if (status != SUCCESS) {
                return failure("nvrtcAddNameExpression(\"" + expression + "\")", status, "");
            }
        }
        MemorySegment optionArray = arena.allocate(ADDRESS, Math.max(1, options.size()));
        for (int i = 0; i < options.size(); i++) {
            optionArray.setAtIndex(ADDRESS, i, arena.allocateFrom(options.get(i)));
        }
        int compiled = nvrtc_h.nvrtcCompileProgram(program, options.size(), optionArray);
        String log = log(arena, program);
        if (compiled != SUCCESS) {
            return failure("nvrtcCompileProgram", compiled, log);
        }
        MemorySegment size = arena.allocate(JAVA_LONG);
        int sized = cubin ? nvrtc_h.nvrtcGetCUBINSize(program, size) : nvrtc_h.nvrtcGetPTXSize(program, size);
        if (sized != SUCCESS) {
            return failure(cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", sized, log);
        }
        MemorySegment output = arena.allocate(Math.max(1, size.get(JAVA_LONG, 0)));
        int got = cubin ? nvrtc_h.nvrtcGetCUBIN(program, output) : nvrtc_h.nvrtcGetPTX(program, output);
        if (got != SUCCESS) {
            return failure(cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", got, log);
        }
        Map<String, String> lowered = new LinkedHashMap<>();
        MemorySegment loweredOut = arena.allocate(ADDRESS);
        for (String expression : nameExpressions) {
            int status = nvrtc_h.nvrtcGetLoweredName(program, arena.allocateFrom(expression), loweredOut);
            if (status != SUCCESS) {
                return failure("nvrtcGetLoweredName(\"" + expression + "\")", status, log);
            }
            // Owned by the program, which is destroyed on return: copied now.
            lowered.put(expression, loweredOut.get(ADDRESS, 0).reinterpret(Long.MAX_VALUE).getString(0));
        }
        byte[] image = output.asSlice(0, size.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
        return new Result(null, SUCCESS, log, image, Collections.unmodifiableMap(lowered));
    }

    private static String log(Arena arena, MemorySegment program) {
        MemorySegment size = arena.allocate(JAVA_LONG);
        if (nvrtc_h.nvrtcGetProgramLogSize(program, size) != SUCCESS || size.get(JAVA_LONG, 0) <= 1) {
            return "";
        }
        MemorySegment text = arena.allocate(size.get(JAVA_LONG, 0));
        if (nvrtc_h.nvrtcGetProgramLog(program, text) != SUCCESS) {
            return "";
        }
        return text.getString(0).strip();
    }

    private static Result failure(String call, int status, String log) {
        return new Result(call, status, log, new byte[0], Map.of());
    }

    private static void check(int status, String call) {
        if (status != SUCCESS) {
            throw new IllegalStateException(call + " failed: " + statusText(status) + " (" + status + ")");
        }
    }
}
