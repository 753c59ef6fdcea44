package org.cudagraph4j.compile;

import java.util.Arrays;
import java.util.Map;
import org.cudagraph4j.CudaLibrary;

/**
 * What a {@link Program} compiled to: the image, its log and the lowered names of its name
 * expressions. Immutable and thread-safe; it holds no native resource, so it may be kept, loaded
 * several times or written to a file.
 */
public final class CompiledProgram {
    private final String name;
    private final CompileTarget target;
    private final String architecture;
    private final byte[] image;
    private final String log;
    private final Map<String, String> loweredNames;

    CompiledProgram(String name, CompileTarget target, String architecture, byte[] image, String log,
            Map<String, String> loweredNames) {
        this.name = name;
        this.target = target;
        this.architecture = architecture;
        this.image = image;
        this.log = log;
        this.loweredNames = loweredNames;
    }

    /** {@return the program's name} */
    public String name() {
        return name;
    }

    /** {@return PTX or a cubin} */
    public CompileTarget target() {
        return target;
    }

    /** {@return the architecture compiled for: {@code sm_90} for a cubin, {@code compute_90} for PTX} */
    public String architecture() {
        return architecture;
    }

    /** {@return a copy of the image: the PTX text (with its terminating NUL) or the cubin} */
    public byte[] image() {
        return image.clone();
    }

    /** {@return the compile log, NVRTC's warnings; empty when there were none} */
    public String log() {
        return log;
    }

    /**
     * The lowered (mangled) name of a name expression given to {@link Program#withNameExpression},
     * which {@link CudaLibrary#kernel(String)} takes.
     *
     * @param expression the name expression, exactly as given
     * @return its lowered name
     * @throws IllegalArgumentException if the expression was not one of the program's
     */
    public String loweredName(String expression) {
        String lowered = loweredNames.get(expression);
        if (lowered == null) {
            throw new IllegalArgumentException("\"" + expression + "\" was not a name expression of " + name
                    + "; its name expressions were " + loweredNames.keySet()
                    + " (add it with Program.withNameExpression before compiling)");
        }
        return lowered;
    }

    /** {@return every name expression with its lowered name, in the order given} */
    public Map<String, String> loweredNames() {
        return loweredNames;
    }

    /**
     * Loads the image, checked as {@link CudaLibrary#load(String, byte[])} checks every image.
     *
     * @return the library, to be closed when done
     */
    public CudaLibrary load() {
        return CudaLibrary.load(name + " (" + architecture + ")", image);
    }

    @Override
    public String toString() {
        return "CompiledProgram[" + name + ", " + target + " for " + architecture + ", " + image.length + " bytes]";
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CompiledProgram that && target == that.target && name.equals(that.name)
                && architecture.equals(that.architecture) && Arrays.equals(image, that.image);
    }

    @Override
    public int hashCode() {
        return 31 * name.hashCode() + Arrays.hashCode(image);
    }
}
