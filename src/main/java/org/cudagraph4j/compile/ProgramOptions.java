package org.cudagraph4j.compile;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import org.cudagraph4j.CudaDevice;

/**
 * How a {@link Program} is compiled: NVRTC's options, as values. Immutable; each {@code with}
 * method returns a copy.
 *
 * @param architecture the real architecture, such as {@code sm_90} (or {@code sm_90a} for the
 *     architecture-specific features); empty for device 0's. A PTX compilation takes the matching
 *     virtual architecture ({@code compute_90})
 * @param standard the C++ dialect, such as {@code c++17}; empty for NVRTC's default (C++17 in CUDA 13)
 * @param defines macros, each {@code -DNAME} or {@code -DNAME=VALUE}, in order
 * @param includePaths folders searched for {@code #include}s that no given header answers
 * @param fastMath {@code --use_fast_math}: faster, less accurate division, square roots and
 *     transcendentals, and denormals flushed to zero
 * @param lineInfo {@code --generate-line-info}: source lines in the output, for profilers and sanitizers
 * @param extraOptions any other NVRTC options, passed as given after the others
 */
public record ProgramOptions(Optional<String> architecture, Optional<String> standard, Map<String, String> defines,
        List<String> includePaths, boolean fastMath, boolean lineInfo, List<String> extraOptions) {
    private static final Pattern ARCHITECTURE = Pattern.compile("sm_[1-9][0-9]{1,2}[af]?");
    private static final Pattern STANDARD = Pattern.compile("c\\+\\+(03|11|14|17|20)");
    private static final Pattern MACRO = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    /** Checks every value, so that a bad option fails here, with its name, rather than inside NVRTC. */
    public ProgramOptions {
        Objects.requireNonNull(architecture, "architecture");
        Objects.requireNonNull(standard, "standard");
        architecture.ifPresent(value -> {
            if (!ARCHITECTURE.matcher(value).matches()) {
                throw new IllegalArgumentException("architecture must be a real one such as sm_90 or sm_90a, not \""
                        + value + "\" (a PTX compilation takes the matching compute_XY itself)");
            }
        });
        standard.ifPresent(value -> {
            if (!STANDARD.matcher(value).matches()) {
                throw new IllegalArgumentException("standard must be one of c++03, c++11, c++14, c++17, c++20, not \""
                        + value + "\"");
            }
        });
        defines = Collections.unmodifiableMap(new LinkedHashMap<>(defines)); // values may be null: -DNAME
        defines.forEach((name, value) -> {
            Objects.requireNonNull(name, "a macro name");
            if (!MACRO.matcher(name).matches()) {
                throw new IllegalArgumentException("a macro name must be an identifier, not \"" + name + "\"");
            }
            if (value != null && (value.indexOf('\n') >= 0 || value.indexOf('\0') >= 0)) {
                throw new IllegalArgumentException("the value of macro " + name + " holds a newline or NUL");
            }
        });
        includePaths = List.copyOf(includePaths);
        includePaths.forEach(path -> requireOption(path, "include path"));
        extraOptions = List.copyOf(extraOptions);
        extraOptions.forEach(option -> requireOption(option, "option"));
    }

    private static void requireOption(String value, String what) {
        if (value.isBlank() || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("an " + what + " must be non-blank text without NUL, not \"" + value
                    + "\"");
        }
    }

    /** {@return no options: device 0's architecture, NVRTC's default dialect, no macros} */
    public static ProgramOptions defaults() {
        return new ProgramOptions(Optional.empty(), Optional.empty(), Map.of(), List.of(), false, false, List.of());
    }

    /**
     * {@return these options for {@code architecture}, such as {@code sm_90}}
     *
     * @param architecture a real architecture, such as {@code sm_90}
     */
    public ProgramOptions withArchitecture(String architecture) {
        return new ProgramOptions(Optional.of(architecture), standard, defines, includePaths, fastMath, lineInfo,
                extraOptions);
    }

    /**
     * {@return these options for {@code device}'s architecture}
     *
     * @param device the device whose compute capability is taken
     */
    public ProgramOptions withArchitecture(CudaDevice device) {
        return withArchitecture("sm_" + device.properties().computeCapability());
    }

    /**
     * {@return these options with the C++ dialect {@code standard}, such as {@code c++17}}
     *
     * @param standard {@code c++03}, {@code c++11}, {@code c++14}, {@code c++17} or {@code c++20}
     */
    public ProgramOptions withStandard(String standard) {
        return new ProgramOptions(architecture, Optional.of(standard), defines, includePaths, fastMath, lineInfo,
                extraOptions);
    }

    /**
     * {@return these options with {@code -DNAME}}
     *
     * @param name the macro
     */
    public ProgramOptions withDefine(String name) {
        return withDefine(name, null);
    }

    /**
     * {@return these options with {@code -DNAME=VALUE} ({@code value} null for {@code -DNAME})}
     *
     * @param name the macro
     * @param value its value, or null for none
     */
    public ProgramOptions withDefine(String name, String value) {
        Map<String, String> more = new LinkedHashMap<>(defines);
        more.put(Objects.requireNonNull(name, "name"), value);
        return new ProgramOptions(architecture, standard, more, includePaths, fastMath, lineInfo, extraOptions);
    }

    /**
     * {@return these options searching {@code path} for includes}
     *
     * @param path a folder
     */
    public ProgramOptions withIncludePath(String path) {
        List<String> more = new ArrayList<>(includePaths);
        more.add(Objects.requireNonNull(path, "path"));
        return new ProgramOptions(architecture, standard, defines, more, fastMath, lineInfo, extraOptions);
    }

    /**
     * {@return these options with fast math on or off}
     *
     * @param on whether to pass {@code --use_fast_math}
     */
    public ProgramOptions withFastMath(boolean on) {
        return new ProgramOptions(architecture, standard, defines, includePaths, on, lineInfo, extraOptions);
    }

    /**
     * {@return these options with line information on or off}
     *
     * @param on whether to pass {@code --generate-line-info}
     */
    public ProgramOptions withLineInfo(boolean on) {
        return new ProgramOptions(architecture, standard, defines, includePaths, fastMath, on, extraOptions);
    }

    /**
     * {@return these options with one more NVRTC option, such as {@code --maxrregcount=64}}
     *
     * @param option the option, as NVRTC takes it
     */
    public ProgramOptions withOption(String option) {
        List<String> more = new ArrayList<>(extraOptions);
        more.add(Objects.requireNonNull(option, "option"));
        return new ProgramOptions(architecture, standard, defines, includePaths, fastMath, lineInfo, more);
    }

    /** NVRTC's option strings for a compilation to {@code target} for the real {@code realArchitecture}. */
    List<String> toNvrtcOptions(CompileTarget target, String realArchitecture) {
        List<String> options = new ArrayList<>();
        options.add("--gpu-architecture=" + (target == CompileTarget.PTX
                ? realArchitecture.replace("sm_", "compute_") : realArchitecture));
        standard.ifPresent(value -> options.add("--std=" + value));
        defines.forEach((name, value) -> options.add("--define-macro=" + name + (value == null ? "" : "=" + value)));
        includePaths.forEach(path -> options.add("--include-path=" + path));
        if (fastMath) {
            options.add("--use_fast_math");
        }
        if (lineInfo) {
            options.add("--generate-line-info");
        }
        options.addAll(extraOptions);
        return options;
    }
}
