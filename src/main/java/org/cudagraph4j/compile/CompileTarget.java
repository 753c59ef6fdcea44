package org.cudagraph4j.compile;

/** What {@link Program#compile} produces. */
public enum CompileTarget {
    /**
     * PTX for a virtual architecture ({@code compute_XY}): the driver compiles it for the GPU when
     * it is loaded, so it runs on that architecture and newer ones, at the price of a JIT step.
     */
    PTX,
    /** A cubin for one real architecture ({@code sm_XY}): loads with no JIT, runs on that architecture's family. */
    CUBIN
}
