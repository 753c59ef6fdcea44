package org.cudagraph4j.compile;

import java.io.Serial;

/**
 * A program did not compile, or NVRTC refused it (an unknown option, a name expression that names
 * nothing). The message names the program, the NVRTC status and the first line of the log; {@link #log()}
 * has the whole log, every error and warning with its line.
 */
public final class CompileException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /** NVRTC's status name. */
    private final String status;
    /** The whole compile log. */
    private final String log;

    CompileException(String message, String status, String log) {
        super(message);
        this.status = status;
        this.log = log;
    }

    /** {@return NVRTC's status name, e.g. {@code NVRTC_ERROR_COMPILATION}} */
    public String status() {
        return status;
    }

    /** {@return the program's whole compile log; empty when NVRTC gave none} */
    public String log() {
        return log;
    }
}
