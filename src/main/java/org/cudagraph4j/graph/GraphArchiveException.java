package org.cudagraph4j.graph;

import java.util.Objects;

/**
 * A graph could not be saved to, or loaded from, a {@link GraphArchive}: {@link #reason()} says
 * which check failed and the message names what differs. Thrown before anything is built: a
 * refused load leaves no graph behind.
 */
public final class GraphArchiveException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Which check failed. */
    public enum Reason {
        /** Not an archive, truncated, or its bytes do not match its digest. */
        CORRUPT,
        /** Written in a format version this library does not read. */
        FORMAT_VERSION,
        /** Captured on a GPU of another compute capability than the one loading it. */
        ARCHITECTURE,
        /** No library given to {@code load} has the content hash a kernel node was captured with. */
        LIBRARY_MISSING,
        /** A kernel is missing from its library, or its parameters are laid out differently. */
        PARAMETER_LAYOUT,
        /** A buffer or event slot the archive uses is not bound. */
        SLOT_MISSING,
        /** A bound buffer is smaller than the slot was when the graph was saved, or cannot hold an offset. */
        SLOT_TOO_SMALL,
        /** At save: a pointer argument lies in no bound buffer. */
        UNBOUND_POINTER,
        /** At save: a node of a kind, or an argument of a type, that the archive cannot represent. */
        UNSUPPORTED
    }

    /** Why the archive was refused. */
    private final Reason reason;

    GraphArchiveException(Reason reason, String message) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** Bytes that are not a whole, intact archive, or an archive whose records contradict each other. */
    static GraphArchiveException corrupt(String why) {
        return new GraphArchiveException(Reason.CORRUPT, "not a valid graph archive: " + why);
    }

    /**
     * Which check failed.
     *
     * @return the reason
     */
    public Reason reason() {
        return reason;
    }
}
