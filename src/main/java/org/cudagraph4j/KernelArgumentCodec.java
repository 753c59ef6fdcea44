package org.cudagraph4j;

import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Checks Java kernel arguments against a kernel's parameter info and writes them in the form
 * {@code cudaLaunchKernel} reads. A device buffer is its 8-byte address; boxed primitives are their
 * C equivalents ({@code int}, {@code float}, {@code long long}, {@code double}, {@code short},
 * {@code char}, {@code bool}); a {@link StructArgument} is its bytes, of exactly the parameter's size.
 */
final class KernelArgumentCodec {
    /** Every argument gets at least this many bytes, this aligned; no scalar parameter is larger. */
    static final long SLOT_BYTES = 8;
    /**
     * The alignment of a value larger than a scalar, a struct by value: the largest any CUDA type
     * asks for ({@code float4}, {@code double2}), so a struct's members sit as the kernel's do.
     */
    static final long VALUE_ALIGNMENT = 16;

    private KernelArgumentCodec() {}

    /**
     * Where each parameter's value starts in an argument block, then the block's size (so one entry
     * more than there are parameters): {@value #SLOT_BYTES} bytes or the parameter's size, whichever
     * is more, and structs larger than a scalar aligned to {@value #VALUE_ALIGNMENT}.
     */
    static long[] offsets(List<KernelParameter> parameters) {
        long[] offsets = new long[parameters.size() + 1];
        long next = 0;
        for (int i = 0; i < parameters.size(); i++) {
            long size = parameters.get(i).sizeBytes();
            long alignment = size > SLOT_BYTES ? VALUE_ALIGNMENT : SLOT_BYTES;
            offsets[i] = align(next, alignment);
            next = offsets[i] + align(Math.max(size, SLOT_BYTES), SLOT_BYTES);
        }
        offsets[parameters.size()] = Math.max(align(next, VALUE_ALIGNMENT), SLOT_BYTES);
        return offsets;
    }

    /**
     * Throws {@link IllegalArgumentException} naming the kernel and the parameter unless
     * {@code arguments} match {@code parameters} in count and in size.
     */
    static void check(String kernel, List<KernelParameter> parameters, Object[] arguments) {
        if (arguments.length != parameters.size()) {
            throw new IllegalArgumentException("kernel " + kernel + " takes " + parameters.size()
                    + " parameter" + (parameters.size() == 1 ? "" : "s") + " but " + arguments.length
                    + " argument" + (arguments.length == 1 ? " was" : "s were") + " given");
        }
        for (int i = 0; i < arguments.length; i++) {
            check(kernel, parameters.get(i), arguments[i]);
        }
    }

    /** Checks one argument against its parameter. */
    static void check(String kernel, KernelParameter parameter, Object argument) {
        int index = parameter.index();
        if (argument == null) {
            throw new IllegalArgumentException("kernel " + kernel + ", parameter " + index + ": argument is null");
        }
        long size = sizeOf(kernel, index, argument);
        if (size == parameter.sizeBytes()) {
            return;
        }
        if (argument instanceof StructArgument) {
            throw new IllegalArgumentException("kernel " + kernel + ", parameter " + index + " is "
                    + parameter.sizeBytes() + " bytes but the StructArgument is " + size + " bytes");
        }
        if (parameter.sizeBytes() > SLOT_BYTES) {
            throw new IllegalArgumentException("kernel " + kernel + ", parameter " + index + " is "
                    + parameter.sizeBytes() + " bytes (a struct by value) but the argument is " + describe(argument)
                    + " (" + size + " bytes): pass a StructArgument of " + parameter.sizeBytes() + " bytes");
        }
        throw new IllegalArgumentException("kernel " + kernel + ", parameter " + index + " is "
                + parameter.sizeBytes() + " bytes but the argument is " + describe(argument) + " (" + size
                + " bytes)");
    }

    /** Writes one argument at the start of {@code slot}. */
    static void write(MemorySegment slot, Object argument) {
        switch (argument) {
            case DeviceBuffer buffer -> slot.set(JAVA_LONG, 0, buffer.address());
            case Integer value -> slot.set(JAVA_INT, 0, value);
            case Float value -> slot.set(JAVA_FLOAT, 0, value);
            case Long value -> slot.set(JAVA_LONG, 0, value);
            case Double value -> slot.set(JAVA_DOUBLE, 0, value);
            case Short value -> slot.set(JAVA_SHORT, 0, value);
            case Byte value -> slot.set(JAVA_BYTE, 0, value);
            case Boolean value -> slot.set(JAVA_BOOLEAN, 0, value);
            case StructArgument value -> value.writeTo(slot);
            default -> throw new IllegalArgumentException("unsupported kernel argument " + describe(argument));
        }
    }

    private static long sizeOf(String kernel, int index, Object argument) {
        return switch (argument) {
            case DeviceBuffer _ -> 8;
            case Integer _ -> 4;
            case Float _ -> 4;
            case Long _ -> 8;
            case Double _ -> 8;
            case Short _ -> 2;
            case Byte _ -> 1;
            case Boolean _ -> 1;
            case StructArgument value -> value.byteSize();
            default -> throw new IllegalArgumentException("kernel " + kernel + ", parameter " + index
                    + ": unsupported argument type " + argument.getClass().getName()
                    + "; pass a DeviceBuffer, Integer, Float, Long, Double, Short, Byte, Boolean or StructArgument");
        };
    }

    private static String describe(Object argument) {
        return argument instanceof DeviceBuffer ? "a DeviceBuffer (pointer)" : "a " + argument.getClass().getSimpleName();
    }

    private static long align(long value, long alignment) {
        return (value + alignment - 1) / alignment * alignment;
    }
}
