package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.cudagraph4j.internal.Lifetime;
import org.cudagraph4j.internal.SharedSecrets;

/** Registers the root package's side of {@link SharedSecrets}. */
final class RootAccessBridge implements SharedSecrets.RootAccess {
    static {
        SharedSecrets.register(new RootAccessBridge());
    }

    private RootAccessBridge() {}

    @Override
    public Lifetime lifetime(Object resource) {
        return switch (resource) {
            case DeviceBuffer buffer -> buffer.allocation().lifetime();
            case CudaLibrary library -> library.lifetime();
            case CudaEvent event -> event.lifetime();
            default -> throw new IllegalArgumentException("no lifetime for " + resource.getClass().getName());
        };
    }

    @Override
    public List<Lifetime> uses(Object kernelArguments) {
        return ((KernelArguments) kernelArguments).uses();
    }

    @Override
    public MemorySegment argumentPointers(Object kernelArguments) {
        return ((KernelArguments) kernelArguments).pointers();
    }

    @Override
    public KernelArguments temporaryArguments(Object kernel, Object[] arguments) {
        return new KernelArguments((CudaKernel) kernel, arguments, false);
    }
}
