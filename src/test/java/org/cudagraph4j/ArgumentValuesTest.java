package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a {@link KernelLaunch} holds as its arguments: an unmodifiable list that keeps nulls. */
class ArgumentValuesTest {
    @Test
    void argumentsKeepTheirOrderAndNullsAndCompareAsAList() {
        List<Object> values = new ArgumentValues(new Object[] {7, null, 2.5f});
        assertEquals(3, values.size());
        assertNull(values.get(1), "a null argument stays, so that the launch's check can name it");
        assertEquals(Arrays.asList(7, null, 2.5f), values);
        assertEquals(Arrays.asList(7, null, 2.5f).hashCode(), values.hashCode());
        assertThrows(IndexOutOfBoundsException.class, () -> values.get(3));
    }

    @Test
    void noOneCanChangeThem() {
        List<Object> values = new ArgumentValues(new Object[] {1, 2});
        assertThrows(UnsupportedOperationException.class, () -> values.set(0, 3));
        assertThrows(UnsupportedOperationException.class, () -> values.add(3));
        assertThrows(UnsupportedOperationException.class, () -> values.remove(0));
        assertThrows(UnsupportedOperationException.class, values::clear);
        assertEquals(List.of(1, 2), values);
    }
}
