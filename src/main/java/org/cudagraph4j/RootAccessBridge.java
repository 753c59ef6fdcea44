package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.cudagraph4j.internal.SharedSecrets;
import org.cudagraph4j.internal.Status;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * Registers the root package's side of {@link SharedSecrets}, with the interface's type parameters
 * bound to this package's types. {@link SharedSecrets#root()} initializes this class on first use.
 */
final class RootAccessBridge
        implements SharedSecrets.RootAccess<CudaStream, DeviceBuffer, CudaEvent, CudaKernel, KernelArguments,
                CudaException> {
    static {
        SharedSecrets.register(new RootAccessBridge());
    }

    private RootAccessBridge() {}

    @Override
    public CudaException callFailed(int code, String function, String context) {
        CudaException error = new CudaException(function, code, Status.name(code), Status.explanation(code), context);
        return CudaError.fromCode(code).isCaptureError()
                ? new StreamCaptureException(error, CaptureTracker.describeRunning())
                : error;
    }

    @Override
    public CudaRuntimeNotFoundException libraryNotFound(String library, List<String> attempts, String howToFix) {
        return new CudaRuntimeNotFoundException(library, attempts, howToFix);
    }

    @Override
    public CaptureTracker.Slot captureSlot(CudaStream stream) {
        return stream.captureSlot();
    }

    @Override
    public Lifetime bufferLifetime(DeviceBuffer buffer) {
        return buffer.allocation().lifetime();
    }

    @Override
    public Lifetime eventLifetime(CudaEvent event) {
        return event.lifetime();
    }

    @Override
    public KernelArguments temporaryArguments(CudaKernel kernel, Object[] arguments) {
        return new KernelArguments(kernel, arguments, false);
    }

    @Override
    public List<Lifetime> uses(KernelArguments arguments) {
        return arguments.uses();
    }

    @Override
    public MemorySegment argumentPointers(KernelArguments arguments, int launchDevice,
            GraphAllocations graphMemory) {
        return arguments.pointers(launchDevice, graphMemory);
    }

    @Override
    public DeviceBuffer graphMemoryBuffer(int device, long address, Object elementType, long length,
            GraphAllocations owner, String graph) {
        return DeviceBuffer.graphMemory(Cuda.device(device), address, (ElementType) elementType, length, owner, null,
                graph);
    }

    @Override
    public GraphAllocations graphMemoryOf(DeviceBuffer buffer) {
        return buffer.graphOwner();
    }
}
