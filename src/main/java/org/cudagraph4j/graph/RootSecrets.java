package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaException;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.KernelArguments;
import org.cudagraph4j.internal.SharedSecrets;

/**
 * The root package's shared secrets, bound once to its types: the same binding its
 * {@code RootAccessBridge} implements, so every use in this package is checked by the compiler.
 */
final class RootSecrets {
    static final SharedSecrets.RootAccess<CudaStream, DeviceBuffer, CudaEvent, CudaKernel, KernelArguments,
            CudaException> ROOT = SharedSecrets.root();

    private RootSecrets() {}
}
