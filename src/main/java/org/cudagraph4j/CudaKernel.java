package org.cudagraph4j;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Graphs;
import org.cudagraph4j.internal.Libraries;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * A kernel ({@code cudaKernel_t}) of a {@link CudaLibrary}. It knows its library and symbol name,
 * which is what a portable graph would record instead of a function pointer.
 *
 * <p>Launch arguments are checked against {@link #parameters()} before anything reaches the GPU:
 * a wrong count or size throws {@link IllegalArgumentException} naming the kernel and parameter.
 *
 * <p>Lifetime: the kernel keeps its library reachable, so the cleaner never unloads a forgotten
 * library while one of its kernels can still be used. It does not keep the library loaded past an
 * explicit {@link CudaLibrary#close()}, as a function keeps its module in cudarc: in Java the owner
 * closes resources when it decides, and a kernel has no close of its own that could end the hold.
 * After the library is closed, launches and queries of its kernels throw
 * {@link IllegalStateException}; graph nodes, executables and captures that already use the kernel
 * keep the library loaded until they let go.
 *
 * <p>Thread safety: immutable and safe to share; launches from several threads are fine.
 */
public final class CudaKernel {
    /** The most blocks a cluster may have on every GPU with clusters, without a non-portable opt-in. */
    public static final int MAX_PORTABLE_CLUSTER_BLOCKS = 8;

    private final CudaLibrary library;
    private final MemorySegment handle;
    private final String symbol;
    private volatile String name;
    private volatile List<KernelParameter> parameters;
    /** What its arguments need to know of this kernel; made on first use. */
    private volatile KernelArguments.Layout argumentLayout;

    CudaKernel(CudaLibrary library, MemorySegment handle, String symbol) {
        this.library = library;
        this.handle = handle;
        this.symbol = symbol;
    }

    /** {@return the library this kernel belongs to; the kernel keeps it reachable} */
    public CudaLibrary library() {
        return library;
    }

    /** {@return the name the kernel was looked up by, as given to {@link CudaLibrary#kernel}} */
    public String symbol() {
        return symbol;
    }

    /**
     * {@return the compiled name, from {@code cudaFuncGetName} (mangled for C++ kernels)} Queried once,
     * then cached.
     *
     * @throws IllegalStateException if the library is closed before the first call
     */
    public String name() {
        String result = name;
        if (result == null) {
            result = Libraries.name(handle());
            name = result;
        }
        return result;
    }

    /**
     * {@return the offsets and sizes of the parameters, in order, from {@code cudaFuncGetParamInfo}}
     * Queried once, then cached.
     *
     * @throws IllegalStateException if the library is closed before the first call
     */
    public List<KernelParameter> parameters() {
        List<KernelParameter> result = parameters;
        if (result == null) {
            result = Libraries.parameters(handle()).stream()
                    .map(p -> new KernelParameter(p.index(), p.offsetBytes(), p.sizeBytes()))
                    .toList();
            parameters = result;
        }
        return result;
    }

    /**
     * The name, parameters and argument block layout that {@link KernelArguments} are prepared with;
     * made once. Callers only read it.
     */
    KernelArguments.Layout argumentLayout() {
        KernelArguments.Layout result = argumentLayout;
        if (result == null) {
            result = KernelArguments.Layout.of(name(), parameters());
            argumentLayout = result;
        }
        return result;
    }

    /**
     * Allows launches of up to {@code bytes} of dynamic shared memory on {@code device}; needed above
     * 48 KiB.
     *
     * @param device the device the launches run on; made current on the calling thread
     * @param bytes the most dynamic shared memory per block, in bytes
     * @throws CudaException if {@code bytes} is more than the device allows
     *     ({@link DeviceProperties#sharedMemPerBlockOptinBytes()}, less the kernel's static shared memory)
     */
    public void setMaxDynamicSharedMemory(CudaDevice device, int bytes) {
        Devices.use(device.ordinal());
        Libraries.setAttribute(handle(), Libraries.maxDynamicSharedMemoryAttribute(), bytes,
                "kernel " + symbol + ", " + bytes + " bytes of dynamic shared memory");
    }

    /**
     * Checks and stores arguments for repeated launches. Close them when done: they hold native
     * memory (a cleaner frees forgotten ones, with a warning).
     *
     * @param arguments one per kernel parameter, in order: a {@link DeviceBuffer} for a pointer, a boxed
     *     {@code Integer}, {@code Float}, {@code Long}, {@code Double}, {@code Short}, {@code Byte} or
     *     {@code Boolean} of the parameter's size, or a {@link StructArgument} of exactly the size of a
     *     parameter passed as a struct by value
     * @return the checked arguments, in native memory
     * @throws IllegalArgumentException if the count, a type or a size does not match the parameters, or an
     *     argument is {@code null}
     */
    public KernelArguments arguments(Object... arguments) {
        return new KernelArguments(this, argumentLayout(), arguments, true);
    }

    /**
     * Launches on {@code stream} with arguments prepared by {@link #arguments}; allocates nothing.
     *
     * @param stream the stream to queue the launch on; its device runs the kernel
     * @param config the grid, block, dynamic shared memory and launch attributes
     * @param arguments arguments prepared for this kernel
     * @throws IllegalArgumentException if {@code arguments} were prepared for another kernel, a buffer
     *     among them is on a device that the stream's device cannot reach (neither its own nor a peer
     *     with {@linkplain CudaDevice#enablePeerAccess access enabled}), or a cluster or cooperative
     *     shape cannot run on the stream's device
     * @throws NullPointerException if {@code stream} or {@code config} is null
     * @throws IllegalStateException if the stream, the arguments, or a buffer among them, have been closed:
     *     a launch never touches freed memory
     */
    public void launch(CudaStream stream, LaunchConfig config, KernelArguments arguments) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(config, "config");
        if (arguments.kernel() != this) {
            throw new IllegalArgumentException("arguments were prepared for kernel " + arguments.kernel().symbol()
                    + ", not " + symbol);
        }
        MemorySegment streamHandle = stream.handle();
        CaptureTracker.Slot slot = stream.captureSlot();
        CaptureTracker.Capture<?> capture = CaptureTracker.of(slot);
        MemorySegment pointers = arguments.pointers(stream.device().ordinal(),
                capture == null ? null : capture.allocations());
        if (capture == null) {
            queue(stream.device(), config, streamHandle, pointers);
            return;
        }
        // Queued and recorded under the slot's monitor, so that a run lists the stream's launches
        // in the order the runtime queued them, whichever threads launch.
        synchronized (slot) {
            queue(stream.device(), config, streamHandle, pointers);
            recordCapturedLaunch(capture, slot, config, arguments, streamHandle);
        }
    }

    private void queue(CudaDevice device, LaunchConfig config, MemorySegment stream, MemorySegment pointers) {
        if (config.hasNodeAttributes()) {
            checkAttributes(device, config);
        }
        config.nativeLaunch().launch(handle(), pointers, stream, symbol);
    }

    /**
     * Checks a cluster or cooperative shape against {@code device}, so that a GPU that cannot run it
     * says so by name rather than with the runtime's generic refusal; a launch, a captured launch and
     * a kernel node ({@code CudaGraph.addKernel}) check alike.
     *
     * @throws IllegalArgumentException if the shape cannot run on {@code device}
     * @throws UnsupportedOperationException if the device has no clusters or no cooperative launch
     */
    void checkAttributes(CudaDevice device, LaunchConfig config) {
        Dim3 block = config.block();
        Dim3 cluster = config.cluster();
        if (cluster != null) {
            int clusters = maxActiveClusters(device, config);
            if (clusters == 0) {
                throw new IllegalArgumentException("kernel " + symbol + " cannot run in clusters of " + cluster
                        + " blocks of " + block + " threads and " + config.sharedMemBytes() + " bytes of shared memory on "
                        + device + ": no such cluster fits (portable clusters have at most "
                        + MAX_PORTABLE_CLUSTER_BLOCKS + " blocks)");
            }
        }
        if (config.cooperative()) {
            Dim3 grid = config.grid();
            long blocks = grid.volume();
            int most = maxCooperativeBlocks(device, block, config.sharedMemBytes());
            if (blocks > most) {
                throw new IllegalArgumentException("a cooperative launch of kernel " + symbol + " needs all " + blocks
                        + " blocks of " + grid + " resident at once, but " + device + " holds at most "
                        + most + " blocks of " + block + " threads and " + config.sharedMemBytes()
                        + " bytes of shared memory");
            }
        }
    }

    /**
     * How many thread-block clusters of {@code config}'s shape can be resident on {@code device} at
     * once ({@code cudaOccupancyMaxActiveClusters}).
     *
     * @param device the device to launch on
     * @param config a launch with a {@linkplain LaunchConfig#withCluster cluster} shape
     * @return the number of clusters; 0 if that shape cannot run at all, or has more than
     *     {@value #MAX_PORTABLE_CLUSTER_BLOCKS} blocks
     * @throws IllegalArgumentException if {@code config} has no cluster shape
     * @throws UnsupportedOperationException if the device has no thread-block clusters (before sm_90)
     */
    public int maxActiveClusters(CudaDevice device, LaunchConfig config) {
        Dim3 cluster = config.cluster();
        if (cluster == null) {
            throw new IllegalArgumentException("the launch configuration has no cluster shape: use withCluster");
        }
        Devices.use(device.ordinal());
        if (!Devices.supportsClusterLaunch(device.ordinal())) {
            throw new UnsupportedOperationException(device + " (compute capability " + device.properties().major()
                    + "." + device.properties().minor() + ") has no thread-block clusters, which need 9.0 or newer");
        }
        if (cluster.volume() > MAX_PORTABLE_CLUSTER_BLOCKS) {
            return 0; // the runtime refuses to size it (cudaErrorInvalidClusterSize) without a non-portable opt-in
        }
        return config.nativeLaunch().maxActiveClusters(handle(), symbol);
    }

    /**
     * The most blocks a {@linkplain LaunchConfig#withCooperativeLaunch cooperative} launch of this
     * kernel may have on {@code device}: the blocks resident per multiprocessor
     * ({@code cudaOccupancyMaxActiveBlocksPerMultiprocessor}) times the multiprocessors.
     *
     * @param device the device to launch on
     * @param block threads per block
     * @param sharedMemBytes dynamic shared memory per block
     * @return the largest cooperative grid, in blocks; 0 if such a block cannot run at all
     * @throws UnsupportedOperationException if the device does not support cooperative launch
     */
    public int maxCooperativeBlocks(CudaDevice device, Dim3 block, int sharedMemBytes) {
        Devices.use(device.ordinal());
        if (!Devices.supportsCooperativeLaunch(device.ordinal())) {
            throw new UnsupportedOperationException(device + " does not support cooperative launch");
        }
        return maxActiveBlocksPerMultiprocessor(device, block, sharedMemBytes) * device.properties().multiprocessorCount();
    }

    /**
     * How many blocks of this kernel one multiprocessor of {@code device} keeps resident at once
     * ({@code cudaOccupancyMaxActiveBlocksPerMultiprocessor}), given its registers, its static shared
     * memory and {@code sharedMemBytes} of dynamic shared memory: what sizes a grid of blocks that
     * walk the work with a stride.
     *
     * @param device the device to launch on
     * @param block threads per block
     * @param sharedMemBytes dynamic shared memory per block
     * @return blocks per multiprocessor; 0 if such a block cannot run at all
     */
    public int maxActiveBlocksPerMultiprocessor(CudaDevice device, Dim3 block, int sharedMemBytes) {
        Devices.use(device.ordinal());
        return Libraries.maxActiveBlocksPerMultiprocessor(handle(), (int) block.volume(), sharedMemBytes, symbol);
    }

    /**
     * A captured launch keeps its library and buffers alive for the graph, and records what the
     * node launches, which the runtime cannot report for library kernels. The node itself is
     * learned from the graph later (see {@link CaptureTracker.Run}); only a launch that starts a
     * run asks the runtime for its node now. The launch was just checked (its library and buffers
     * are open), so its record is taken as the arguments keep it.
     */
    private void recordCapturedLaunch(CaptureTracker.Capture<?> capture, CaptureTracker.Slot slot,
            LaunchConfig config, KernelArguments arguments, MemorySegment stream) {
        long firstNode = CaptureTracker.UNKNOWN_NODE;
        if (capture.needsFirstNode(slot)) {
            long node = Graphs.capturedNode(stream);
            firstNode = node == 0 ? CaptureTracker.UNKNOWN_NODE : node;
        }
        KernelArguments.CapturedLaunch record = arguments.capturedLaunch(config);
        capture.recordKernelLaunch(slot, firstNode, record.uses(), record.launch());
    }

    /**
     * Checks the arguments and launches once on {@code stream}; the arguments' native copy is freed
     * on return.
     *
     * @param stream the stream to queue the launch on; its device runs the kernel
     * @param config the grid, block, dynamic shared memory and launch attributes
     * @param arguments one per kernel parameter, as for {@link #arguments(Object...)}
     * @throws IllegalArgumentException if the arguments do not match the parameters, a buffer among them
     *     is on a device that the stream's device cannot reach, or a cluster or cooperative shape cannot
     *     run on the stream's device
     * @throws IllegalStateException if the stream or a buffer among the arguments has been closed
     */
    public void launch(CudaStream stream, LaunchConfig config, Object... arguments) {
        // A confined arena: closing a shared one costs a handshake with every thread.
        try (KernelArguments prepared = new KernelArguments(this, argumentLayout(), arguments, false)) {
            launch(stream, config, prepared);
        }
    }

    /**
     * {@return the {@code cudaKernel_t}, for interop; valid while the library is open}
     *
     * @throws IllegalStateException if the library is closed
     */
    public MemorySegment handle() {
        library.lifetime().ensureOpen();
        return handle;
    }

    @Override
    public String toString() {
        return "CudaKernel " + symbol + " in " + library.source();
    }
}
