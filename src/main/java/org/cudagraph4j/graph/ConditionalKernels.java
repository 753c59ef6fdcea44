package org.cudagraph4j.graph;

import java.util.Objects;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;

/**
 * Shipped kernels that set a {@link ConditionalHandle}'s value on the device
 * ({@code cudaGraphSetConditional}) from device memory, as one-thread kernel nodes: upstream of a
 * conditional node, or as the last node of a WHILE body to decide whether it runs again. Each
 * method describes the launch; add it with {@link CudaGraph#addKernel}, or
 * {@linkplain KernelLaunch#launch launch} it into a capture.
 *
 * <pre>{@code
 * try (ConditionalKernels kernels = ConditionalKernels.load(); CudaGraph graph = CudaGraph.create()) {
 *     ConditionalHandle flag = graph.conditionalHandle();                // not reset at launch, so
 *     GraphNode set = graph.addKernel(kernels.set(flag, flagBuffer));    // flag = flagBuffer[0] each time
 *     ConditionalNode branch = graph.ifThen(flag, set);
 *     branch.body().addKernel(work);                                   // runs when flagBuffer[0] != 0
 * }
 * }</pre>
 *
 * <p>A kernel of your own sets a handle the same way: declare a parameter of type
 * {@code cudaGraphConditionalHandle} (an {@code unsigned long long}), pass
 * {@link ConditionalHandle#value()} for it, and call {@code cudaGraphSetConditional(handle, value)}
 * from one thread. The sources are in {@code kernels/src/cg4j_conditional.cu}; they ship as PTX
 * that the driver compiles for the GPU at {@link #load()}.
 *
 * <p>Thread safety: safe to use from any thread; close once, when no graph built from it is being
 * added to (graphs and executables that use its kernels keep the library alive).
 */
public final class ConditionalKernels implements AutoCloseable {
    private static final String RESOURCE = "/org/cudagraph4j/kernels/cg4j_conditional.compute_80.ptx";
    private static final LaunchConfig ONE_THREAD = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

    private final CudaLibrary library;
    private final CudaKernel set;
    private final CudaKernel countDown;
    private final CudaKernel setIfGreater;

    private ConditionalKernels(CudaLibrary library) {
        this.library = library;
        this.set = library.kernel("cg4j_set_conditional");
        this.countDown = library.kernel("cg4j_count_down");
        this.setIfGreater = library.kernel("cg4j_set_conditional_if_greater");
    }

    /**
     * Loads the kernels; the driver compiles their PTX for this GPU when they are first used.
     *
     * @return the kernels, to be closed when no longer needed
     * @throws org.cudagraph4j.error.CudaException if the driver cannot load them (a GPU older than sm_80)
     */
    public static ConditionalKernels load() {
        CudaLibrary library = CudaLibrary.loadResource(ConditionalKernels.class, RESOURCE);
        try {
            return new ConditionalKernels(library);
        } catch (RuntimeException e) {
            library.close();
            throw e;
        }
    }

    /**
     * Sets {@code condition} to the {@code unsigned int} at the start of {@code value}: for IF, a
     * non-zero value runs the (THEN) body; for SWITCH, it is the body's index; for WHILE, non-zero
     * runs the body (again).
     *
     * @param condition the handle to set
     * @param value device memory holding the value in its first 4 bytes
     * @return the one-thread launch
     * @throws IllegalArgumentException if {@code value} is shorter than 4 bytes
     */
    public KernelLaunch set(ConditionalHandle condition, DeviceBuffer value) {
        return KernelLaunch.of(set, ONE_THREAD, handleOf(condition), word(value, "value"));
    }

    /**
     * A counted loop, as the last node of a WHILE body: decrements the {@code unsigned int} at the
     * start of {@code remaining} (never below 0) and sets {@code condition} to whether it is still
     * positive. Entered with a count of {@code n} (set {@code condition} from it upstream of the
     * node with {@link #set}), the body runs {@code n} times, and not at all for 0.
     *
     * @param condition the WHILE node's handle
     * @param remaining device memory holding the count, which this kernel decrements
     * @return the one-thread launch
     * @throws IllegalArgumentException if {@code remaining} is shorter than 4 bytes
     */
    public KernelLaunch countDown(ConditionalHandle condition, DeviceBuffer remaining) {
        return KernelLaunch.of(countDown, ONE_THREAD, handleOf(condition), word(remaining, "remaining"));
    }

    /**
     * Sets {@code condition} to 1 if the {@code float} at the start of {@code value} is greater
     * than {@code threshold}, else to 0 (NaN gives 0): the end of a WHILE body that runs until a
     * device-computed value (a residual, an error estimate) has fallen to the threshold.
     *
     * @param condition the handle to set
     * @param value device memory holding the value in its first 4 bytes
     * @param threshold the value at or below which the condition is 0
     * @return the one-thread launch
     * @throws IllegalArgumentException if {@code value} is shorter than 4 bytes
     */
    public KernelLaunch setIfGreater(ConditionalHandle condition, DeviceBuffer value, float threshold) {
        return KernelLaunch.of(setIfGreater, ONE_THREAD, handleOf(condition), word(value, "value"), threshold);
    }

    /**
     * The loaded library, whose kernels are named {@code cg4j_set_conditional},
     * {@code cg4j_count_down} and {@code cg4j_set_conditional_if_greater}.
     *
     * @return the library
     */
    public CudaLibrary library() {
        return library;
    }

    /** Unloads the kernels once no graph or executable that uses them is left. */
    @Override
    public void close() {
        library.close();
    }

    private static long handleOf(ConditionalHandle condition) {
        return Objects.requireNonNull(condition, "condition").value();
    }

    private static DeviceBuffer word(DeviceBuffer buffer, String name) {
        Objects.requireNonNull(buffer, name);
        if (buffer.byteSize() < Integer.BYTES) {
            throw new IllegalArgumentException(name + " must hold at least 4 bytes, but " + buffer + " has "
                    + buffer.byteSize());
        }
        return buffer;
    }
}
