package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.cudagraph4j.internal.NativeLaunch;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * What {@code org.cudagraph4j.graph} does with this package's objects beyond their public API: a
 * stream's capture slot, the lifetimes behind buffers and events, kernel arguments in their native
 * form, and views of graph memory. It sits here, naming this package's own types, so that the
 * graph package above reaches it through plain one-way dependencies. It names one internal type
 * besides the lifetime model's, the native form of a launch configuration.
 *
 * <p>It is public only because the graph package is another package. {@link #get()} hands the one
 * instance to the library's own module and refuses any other, which keeps it as closed as the
 * packages the module does not export (on the class path, where every class is in one unnamed
 * module, those are open to all as well).
 *
 * @hidden
 */
@SuppressWarnings("exports") // it names the lifetime model's types, which the module does not export
public final class GraphAccess {
    private static final GraphAccess INSTANCE = new GraphAccess();
    private static final StackWalker CALLERS = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);

    private GraphAccess() {}

    /**
     * The access, for a class of this library.
     *
     * @return the one instance
     * @throws IllegalCallerException if the caller is in another module
     */
    public static GraphAccess get() {
        Class<?> caller = CALLERS.getCallerClass();
        if (caller.getModule() != GraphAccess.class.getModule()) {
            throw new IllegalCallerException(caller + " is not part of cudagraph4j");
        }
        return INSTANCE;
    }

    /**
     * Where a stream keeps the capture it takes part in, which a capture begins in.
     *
     * @param stream the stream
     * @return its slot
     */
    public CaptureTracker.Slot captureSlot(CudaStream stream) {
        return stream.captureSlot();
    }

    /**
     * The lifetime behind a buffer: its allocation's.
     *
     * @param buffer an allocation or a slice
     * @return what keeps its memory allocated
     */
    public Lifetime lifetime(DeviceBuffer buffer) {
        return buffer.allocation().lifetime();
    }

    /**
     * The lifetime of a page-locked host buffer.
     *
     * @param buffer the buffer
     * @return what keeps its memory allocated
     */
    public Lifetime lifetime(PinnedBuffer buffer) {
        return buffer.lifetime();
    }

    /**
     * The lifetime of an event.
     *
     * @param event the event
     * @return what keeps it created
     */
    public Lifetime lifetime(CudaEvent event) {
        return event.lifetime();
    }

    /**
     * Checked arguments of {@code launch} for one use on the calling thread, in the thread's scratch
     * block or a confined arena: closing a shared arena costs a handshake with every thread, tens
     * of microseconds.
     *
     * @param launch the kernel and its arguments, one value per parameter
     * @return the arguments, to close after the use
     */
    public KernelArguments temporaryArguments(KernelLaunch launch) {
        // A launch's arguments are always ArgumentValues, whose array the arguments copy anyway.
        CudaKernel kernel = launch.kernel();
        return new KernelArguments(kernel, kernel.argumentLayout(), ((ArgumentValues) launch.arguments()).array(),
                false);
    }

    /**
     * What a launch with {@code arguments} needs alive.
     *
     * @param arguments the launch's arguments
     * @return its kernel's library and its buffers, all open
     */
    public List<Lifetime> uses(KernelArguments arguments) {
        return arguments.uses();
    }

    /**
     * What {@code launch} needs alive: the same list for every launch that shares its arguments.
     *
     * @param launch the launch
     * @return its kernel's library and its buffers, all open
     */
    public List<Lifetime> uses(KernelLaunch launch) {
        // A launch's arguments are always ArgumentValues (see temporaryArguments).
        return ((ArgumentValues) launch.arguments()).uses(launch.kernel());
    }

    /**
     * The {@code void*[]} of {@code arguments} for a kernel that runs on device {@code launchDevice},
     * after checking that the device can reach every buffer among them, and that graph memory among
     * them is {@code graphMemory}'s.
     *
     * @param arguments the launch's arguments
     * @param launchDevice the ordinal of the device the kernel runs on
     * @param graphMemory the memory of the graph the launch is in, or {@code null} for none
     * @return the pointers, valid while {@code arguments} is open
     */
    public MemorySegment argumentPointers(KernelArguments arguments, int launchDevice, GraphAllocations graphMemory) {
        return arguments.pointers(launchDevice, graphMemory);
    }

    /**
     * A launch configuration in the form the runtime takes it, made once and kept by the configuration.
     *
     * @param config the configuration
     * @return its native form
     */
    public NativeLaunch nativeLaunch(LaunchConfig config) {
        return config.nativeLaunch();
    }

    /**
     * The launch a kernel node records: {@code launch} without programmatic dependent launch, which
     * in a graph is the programmatic edges into the node.
     *
     * @param launch the launch the node was made from
     * @return the launch as the node holds it
     */
    public KernelLaunch nodeLaunch(KernelLaunch launch) {
        LaunchConfig node = launch.config().nodeConfig();
        return node == launch.config() ? launch : launch.withConfig(node);
    }

    /**
     * Whether a configuration has what a kernel node holds as attributes: a cluster shape or cooperative launch.
     *
     * @param config the configuration
     * @return whether it has a cluster shape or is cooperative
     */
    public boolean hasNodeAttributes(LaunchConfig config) {
        return config.hasNodeAttributes();
    }

    /**
     * Checks a cluster or cooperative shape against the device it will run on, as a launch does.
     *
     * @param kernel the kernel
     * @param device the device
     * @param config the configuration
     * @throws IllegalArgumentException if the shape cannot run on the device
     * @throws UnsupportedOperationException if the device has no clusters or no cooperative launch
     */
    public void checkAttributes(CudaKernel kernel, CudaDevice device, LaunchConfig config) {
        kernel.checkAttributes(device, config);
    }

    /**
     * A view of graph memory at {@code address}, which the graph that holds {@code owner} allocates
     * at each launch and owns.
     *
     * @param device the ordinal of the device the memory is on
     * @param address the allocation's device address
     * @param type its element type
     * @param length its length in elements
     * @param owner the graph memory it lies in
     * @param graph the graph, described
     * @return the view, which frees nothing
     */
    public DeviceBuffer graphMemoryBuffer(int device, long address, ElementType type, long length,
            GraphAllocations owner, String graph) {
        return DeviceBuffer.graphMemory(Cuda.device(device), address, type, length, owner, null, graph);
    }

    /**
     * The graph memory a buffer lies in.
     *
     * @param buffer the buffer
     * @return its graph's memory, or {@code null} if it is not graph memory
     */
    public GraphAllocations graphMemoryOf(DeviceBuffer buffer) {
        return buffer.graphOwner();
    }
}
