package org.cudagraph4j;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * Arguments for one kernel, checked against its parameter info and kept in native memory in the
 * form the launch reads, so launching with them allocates nothing.
 *
 * <p>Create with {@link CudaKernel#arguments(Object...)}. The runtime copies argument values at
 * launch (and at graph-node creation), so changing an argument afterwards affects only later
 * launches.
 *
 * <p>Prepared arguments do not keep their buffers alive: every launch checks that each buffer
 * among them is still open and throws {@link IllegalStateException} otherwise, so a closed
 * buffer's address (which a later allocation may reuse) never reaches the GPU.
 *
 * <p>Thread safety: launching from several threads at once is safe; {@link #set} must not race
 * with launches or other sets, and {@link #close()} must not race with anything.
 */
public final class KernelArguments implements AutoCloseable {
    private final CudaKernel kernel;
    /** The native block's lifetime, counted; {@code null} for one-use arguments in their thread's scratch block. */
    private final Lifetime lifetime;
    /**
     * Gives the thread's scratch block back. One-use arguments there live on one thread for one
     * call and allocate nothing, so they skip a lifetime's shared counters and atomics, which every
     * one-shot launch and node update would pay.
     */
    private final Scratch scratch;
    private boolean scratchReleased;
    private final MemorySegment pointers;
    private final MemorySegment values;
    private final Layout layout;
    /** Where each argument's value starts in {@link #values}, then the values' size: the layout's. */
    private final long[] offsets;
    private final Object[] arguments;
    /** {@link #arguments} as launches record them, made on first use after each {@link #set}. */
    private ArgumentValues recorded;
    /** What a capture records of the last captured launch, which the next with the same configuration shares. */
    private CapturedLaunch captured;
    /**
     * What arguments of one kernel need to know of it, made once per kernel
     * ({@link CudaKernel#argumentLayout()}) and handed down, so that preparing arguments reads it
     * rather than asking the kernel.
     *
     * @param kernelName the compiled name, which an argument error names
     * @param parameters the parameters, from {@code cudaFuncGetParamInfo}
     * @param offsets where each argument's value starts in the block, then the block's size
     */
    record Layout(String kernelName, List<KernelParameter> parameters, long[] offsets) {
        static Layout of(String kernelName, List<KernelParameter> parameters) {
            return new Layout(kernelName, parameters, KernelArgumentCodec.offsets(parameters));
        }
    }

    /**
     * A captured launch as its capture records it: the configuration it was made for, the launch
     * its node records (without programmatic dependent launch, which the graph keeps as an edge)
     * and what it keeps alive.
     */
    record CapturedLaunch(LaunchConfig config, KernelLaunch launch, List<Lifetime> uses) {}

    /**
     * Native memory for one-use arguments, one block per thread, reused: allocating and freeing
     * per launch or graph-node update cost a fifth of a single-node update on the H200.
     */
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /** A thread's block for one set of one-use arguments at a time. */
    private static final class Scratch {
        private MemorySegment pointers = MemorySegment.NULL;
        private MemorySegment values = MemorySegment.NULL;
        private boolean inUse;

        /**
         * Claims the block, grown to {@code slots} pointers and {@code valueBytes} of values; false if
         * this thread's arguments already hold it.
         */
        boolean claim(int slots, long valueBytes) {
            if (inUse) {
                return false;
            }
            if (pointers.byteSize() < ADDRESS.byteSize() * slots || values.byteSize() < valueBytes) {
                Arena arena = Arena.ofAuto(); // freed with the thread's block, by the collector
                pointers = arena.allocate(ADDRESS, Math.max(slots, pointers.byteSize() / ADDRESS.byteSize()));
                values = arena.allocate(Math.max(valueBytes, values.byteSize()), KernelArgumentCodec.VALUE_ALIGNMENT);
            }
            inUse = true;
            return true;
        }
    }

    /**
     * Checked arguments. {@code prepared} ones live in a shared arena and are watched for a
     * forgotten close; the others serve one launch on this thread, in the thread's {@link Scratch}
     * block (or, while that is taken, a confined arena; closing a shared arena costs a handshake
     * with every thread, tens of microseconds).
     */
    KernelArguments(CudaKernel kernel, Layout layout, Object[] arguments, boolean prepared) {
        KernelArgumentCodec.check(layout.kernelName(), layout.parameters(), arguments);
        this.kernel = kernel;
        this.layout = layout;
        this.arguments = arguments.clone();
        this.offsets = layout.offsets();
        int count = arguments.length;
        int slots = Math.max(count, 1);
        long valueBytes = offsets[count];
        Scratch threadScratch = prepared ? null : SCRATCH.get();
        Runnable free;
        if (threadScratch != null && threadScratch.claim(slots, valueBytes)) {
            this.scratch = threadScratch;
            this.pointers = threadScratch.pointers;
            this.values = threadScratch.values;
            free = () -> threadScratch.inUse = false;
        } else {
            this.scratch = null;
            Arena nativeMemory = prepared ? Arena.ofShared() : Arena.ofConfined();
            try {
                this.pointers = nativeMemory.allocate(ADDRESS, slots);
                this.values = nativeMemory.allocate(valueBytes, KernelArgumentCodec.VALUE_ALIGNMENT);
            } catch (RuntimeException e) {
                nativeMemory.close();
                throw e;
            }
            free = nativeMemory::close;
        }
        try {
            for (int i = 0; i < count; i++) {
                MemorySegment slot = slot(i);
                pointers.setAtIndex(ADDRESS, i, slot);
                KernelArgumentCodec.write(slot, arguments[i]);
            }
        } catch (RuntimeException e) {
            free.run();
            throw e;
        }
        if (scratch != null) {
            this.lifetime = null;
        } else {
            this.lifetime = new Lifetime(LiveCounters.Kind.KERNEL_ARGUMENTS, valueBytes + ADDRESS.byteSize() * slots,
                    "KernelArguments for " + kernel.symbol(), free);
            if (prepared) {
                lifetime.watch(this); // one-use arguments are closed by their thread, never by a cleaner
            }
        }
    }

    /** Whether the calling thread's scratch block is taken; false between calls, unless one leaked it. */
    static boolean threadScratchTaken() {
        return SCRATCH.get().inUse;
    }

    /** {@return the kernel these arguments were checked against; they launch only that kernel} */
    public CudaKernel kernel() {
        return kernel;
    }

    /** {@return the number of arguments, one per kernel parameter} */
    public int count() {
        return arguments.length;
    }

    /**
     * Gets the argument at {@code index}, as given or last {@linkplain #set set}.
     *
     * @param index the parameter's position, from 0
     * @return the argument: a {@link DeviceBuffer}, a {@link StructArgument} or a boxed primitive
     * @throws IndexOutOfBoundsException if {@code index} is not below {@link #count()}
     */
    public Object get(int index) {
        return arguments[index];
    }

    /** {@return a copy of the arguments, as given or last {@linkplain #set set}, in parameter order} */
    public List<Object> values() {
        return Arrays.asList(arguments.clone());
    }

    /**
     * The arguments as a {@link KernelLaunch} holds them, unmodifiable and shared by every launch
     * recorded until the next {@link #set}. Launches that race on it may each make one; any is right.
     */
    ArgumentValues recorded() {
        ArgumentValues current = recorded;
        if (current == null) {
            current = new ArgumentValues(arguments.clone());
            recorded = current;
        }
        return current;
    }

    /**
     * What a capture records of a launch of these arguments with {@code config}: the same record
     * while the configuration and the arguments stay the same, so that a capture that repeats a
     * launch neither makes a record per node nor walks the launch's uses again. Races make one
     * each; any is right.
     */
    CapturedLaunch capturedLaunch(LaunchConfig config) {
        CapturedLaunch last = captured;
        if (last == null || last.config() != config) {
            last = new CapturedLaunch(config, new KernelLaunch(kernel, config.nodeConfig(), recorded()), uses());
            captured = last;
        }
        return last;
    }

    /**
     * Replaces one argument, checked against the kernel's parameter info. Later launches use it;
     * graph nodes already made from these arguments do not change.
     *
     * @param index the parameter's position, from 0
     * @param value the new argument, of the parameter's size, as for {@link CudaKernel#arguments}
     * @throws IndexOutOfBoundsException if {@code index} is not below {@link #count()}
     * @throws IllegalArgumentException if {@code value} is {@code null}, or its type or size does not fit
     * @throws IllegalStateException if these arguments are closed
     */
    public void set(int index, Object value) {
        ensureOpen();
        KernelParameter parameter = layout.parameters().get(index);
        KernelArgumentCodec.check(layout.kernelName(), parameter, value);
        KernelArgumentCodec.write(slot(index), value);
        arguments[index] = value;
        recorded = null;
        captured = null;
    }

    /** {@return whether these arguments are open: false once {@link #close()} has been called} */
    public boolean isOpen() {
        return lifetime != null ? lifetime.isOpen() : !scratchReleased;
    }

    /**
     * The {@code void*[]} the runtime reads for a launch on device {@code launchDevice}, after
     * checking that the arguments and every buffer among them are open, and that the device can
     * reach each buffer: its own, or a peer's once {@link CudaDevice#enablePeerAccess} allowed it,
     * and that graph memory among them is {@code graphMemory}'s, the graph the launch goes into.
     * Anything else would fault the kernel with an illegal address, an error that ruins the
     * device's context for the whole process.
     *
     * @param graphMemory the graph memory the launch may use: the capture's or the graph's; null for none
     */
    MemorySegment pointers(int launchDevice, GraphAllocations graphMemory) {
        ensureOpen();
        for (int i = 0; i < arguments.length; i++) {
            if (arguments[i] instanceof DeviceBuffer buffer) {
                if (!buffer.isOpen()) {
                    throw new IllegalStateException("kernel " + kernel.symbol() + ", argument " + i + ": " + buffer
                            + " is closed; a launch must not touch freed memory");
                }
                int home = buffer.device().ordinal();
                if (!Devices.reaches(launchDevice, home)) {
                    throw new IllegalArgumentException("kernel " + kernel.symbol() + ", argument " + i + ": "
                            + buffer + " is on device " + home + ", but the launch runs on device " + launchDevice
                            + ", which has no peer access to it: copy the buffer to device " + launchDevice
                            + ", or enable peer access first (CudaDevice.enablePeerAccess)");
                }
                GraphAllocations owner = buffer.graphOwner();
                if (owner != null && owner != graphMemory) {
                    throw new IllegalStateException("kernel " + kernel.symbol() + ", argument " + i + ": " + buffer
                            + " exists only inside its own graph: launch the kernel in the capture that allocated it,"
                            + " or add it to that graph");
                }
            }
        }
        return pointers;
    }

    /**
     * What a launch with these arguments needs alive: the kernel's library and every buffer among
     * them, each open now. The same list until the next {@link #set}, so that a capture that holds
     * it for launch after launch knows it by identity ({@code HeldResources}).
     */
    List<Lifetime> uses() {
        return recorded().uses(kernel);
    }

    /** Frees the native argument block; one-use arguments give their thread's reused block back. Idempotent. */
    @Override
    public void close() {
        if (lifetime != null) {
            lifetime.close();
        } else if (!scratchReleased) {
            scratchReleased = true;
            scratch.inUse = false;
        }
    }

    private void ensureOpen() {
        if (!isOpen()) {
            throw new IllegalStateException("KernelArguments for " + kernel.symbol() + " are closed");
        }
    }

    private MemorySegment slot(int index) {
        return values.asSlice(offsets[index], offsets[index + 1] - offsets[index]);
    }
}
