package org.cudagraph4j.internal;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * Lets the graph package reach what the root package keeps out of the public API: the lifetime
 * behind a resource and the native form of prepared kernel arguments. The root package registers
 * its accessor when {@code org.cudagraph4j.Cuda}'s resource classes initialize.
 */
public final class SharedSecrets {
    /** Implemented once, in the root package. */
    public interface RootAccess {
        /** The lifetime behind a DeviceBuffer (its allocation's), CudaLibrary or CudaEvent. */
        Lifetime lifetime(Object resource);

        /** What a launch with a KernelArguments needs alive: its kernel's library and its buffers, all open. */
        List<Lifetime> uses(Object kernelArguments);

        /** The {@code void*[]} of a KernelArguments. */
        MemorySegment argumentPointers(Object kernelArguments);

        /**
         * Checked arguments for one use on the calling thread, in a confined arena: closing a
         * shared arena costs a handshake with every thread, tens of microseconds.
         */
        AutoCloseable temporaryArguments(Object kernel, Object[] arguments);
    }

    private static volatile RootAccess root;

    private SharedSecrets() {}

    public static void register(RootAccess access) {
        root = Objects.requireNonNull(access);
    }

    public static RootAccess root() {
        RootAccess access = root;
        if (access == null) {
            // Initializing the root package's bridge registers it.
            try {
                Class.forName("org.cudagraph4j.RootAccessBridge", true, SharedSecrets.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new IllegalStateException(e);
            }
            access = root;
        }
        return access;
    }
}
