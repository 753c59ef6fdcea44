package org.cudagraph4j;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * Kernel arguments as a {@link KernelLaunch} holds them: an unmodifiable list that keeps nulls (so
 * that the argument check can name a null argument). A launch takes one as it is instead of copying
 * it, so that a captured launch records its node's arguments without a copy of its own.
 */
final class ArgumentValues extends AbstractList<Object> implements RandomAccess {
    private final Object[] values;
    /** What a launch of these values needs alive, made on first use; immutable, so a race is benign. */
    private Uses uses;

    /** A launch's uses as a list, which captures and executables hold by identity, and as an array to check. */
    private record Uses(Lifetime library, List<Lifetime> list, Lifetime[] array) {}

    /** Takes {@code values}, which no one may change afterwards. */
    ArgumentValues(Object[] values) {
        this.values = values;
    }

    /**
     * What a launch of {@code kernel} with these values needs alive: its library and every buffer
     * among the values, each open now. The same list every time for one library, so that an update
     * or a capture that launches the same values again finds nothing new to hold.
     *
     * @throws IllegalStateException if the library or a buffer is closed
     */
    List<Lifetime> uses(CudaKernel kernel) {
        Lifetime library = kernel.library().lifetime();
        Uses current = uses;
        if (current == null || current.library() != library) {
            Lifetime[] all = new Lifetime[1 + values.length];
            int count = 0;
            all[count++] = library;
            for (Object value : values) {
                if (value instanceof DeviceBuffer buffer) {
                    all[count++] = buffer.lifetime();
                }
            }
            Lifetime[] array = Arrays.copyOf(all, count);
            current = new Uses(library, List.of(array), array);
            uses = current;
        }
        for (Lifetime lifetime : current.array()) { // the list's iterator was a sixth of a capture's Java samples
            lifetime.ensureOpen();
        }
        return current.list();
    }

    /** {@return the values themselves, for a reader that copies them or only reads them} */
    Object[] array() {
        return values;
    }

    @Override
    public Object[] toArray() {
        return values.clone();
    }

    @Override
    public Object get(int index) {
        return values[index];
    }

    @Override
    public int size() {
        return values.length;
    }
}
