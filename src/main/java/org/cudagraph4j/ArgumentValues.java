package org.cudagraph4j;

import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * Kernel arguments as a {@link KernelLaunch} holds them: an unmodifiable list that keeps nulls (so
 * that the argument check can name a null argument). A launch takes one as it is instead of copying
 * it, so that a captured launch records its node's arguments without a copy of its own.
 */
final class ArgumentValues extends AbstractList<Object> implements RandomAccess {
    private final Object[] values;

    /** Takes {@code values}, which no one may change afterwards. */
    ArgumentValues(Object[] values) {
        this.values = values;
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
