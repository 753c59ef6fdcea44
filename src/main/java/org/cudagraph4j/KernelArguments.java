package org.cudagraph4j;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import org.cudagraph4j.internal.KernelArgumentCodec;

/**
 * Arguments for one kernel, checked against its parameter info and kept in native memory in the
 * form the launch reads, so launching with them allocates nothing.
 *
 * <p>Create with {@link CudaKernel#arguments(Object...)}. The runtime copies argument values at
 * launch (and at graph-node creation), so changing an argument afterwards affects only later
 * launches.
 *
 * <p>Thread safety: launching from several threads at once is safe; {@link #set} must not race
 * with launches or other sets.
 */
public final class KernelArguments implements AutoCloseable {
    private final CudaKernel kernel;
    private final Arena arena;
    private final MemorySegment pointers;
    private final MemorySegment values;
    private final Object[] arguments;

    /** Arguments in {@code arena}, which this object closes; a confined arena serves one-shot launches. */
    KernelArguments(CudaKernel kernel, Object[] arguments, Arena arena) {
        List<KernelParameter> parameters = kernel.parameters();
        KernelArgumentCodec.check(kernel.name(), parameters, arguments);
        this.kernel = kernel;
        this.arguments = arguments.clone();
        this.arena = arena;
        int count = arguments.length;
        this.pointers = arena.allocate(ADDRESS, Math.max(count, 1));
        this.values = arena.allocate(KernelArgumentCodec.SLOT_BYTES * Math.max(count, 1), KernelArgumentCodec.SLOT_BYTES);
        for (int i = 0; i < count; i++) {
            MemorySegment slot = slot(i);
            pointers.setAtIndex(ADDRESS, i, slot);
            KernelArgumentCodec.write(slot, arguments[i]);
        }
    }

    public CudaKernel kernel() {
        return kernel;
    }

    /** The number of arguments. */
    public int count() {
        return arguments.length;
    }

    /** The argument at {@code index}, as given. */
    public Object get(int index) {
        return arguments[index];
    }

    /** The arguments, as given. */
    public List<Object> values() {
        return Arrays.asList(arguments.clone());
    }

    /** Replaces one argument, checked against the kernel's parameter info. */
    public void set(int index, Object value) {
        KernelParameter parameter = kernel.parameters().get(index);
        KernelArgumentCodec.check(kernel.name(), parameter, value);
        KernelArgumentCodec.write(slot(index), value);
        arguments[index] = value;
    }

    /** The {@code void*[]} the runtime reads; valid until {@link #close()}. */
    MemorySegment pointers() {
        if (!arena.scope().isAlive()) {
            throw new IllegalStateException("KernelArguments for " + kernel.name() + " are closed");
        }
        return pointers;
    }

    /** Frees the native argument block. Idempotent. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            try {
                arena.close();
            } catch (IllegalStateException alreadyClosed) {
                // Another thread closed it first.
            }
        }
    }

    private MemorySegment slot(int index) {
        return values.asSlice(index * KernelArgumentCodec.SLOT_BYTES, KernelArgumentCodec.SLOT_BYTES);
    }
}
