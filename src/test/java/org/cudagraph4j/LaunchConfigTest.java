package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class LaunchConfigTest {
    @Test
    void shapeCollapsesTrailingOnesAsTheSeedDiagramDoes() {
        assertEquals("<<<{32,20},64,19200>>>", LaunchConfig.shape(Dim3.of(32, 20), Dim3.of(64), 19200));
        assertEquals("<<<{256,2},{8,32},0>>>", LaunchConfig.shape(Dim3.of(256, 2), Dim3.of(8, 32), 0));
        assertEquals("<<<{1,1,4},1,0>>>", LaunchConfig.shape(Dim3.of(1, 1, 4), Dim3.of(1), 0));
    }

    @Test
    void dim3RejectsZeroAndNegativeComponents() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Dim3.of(4, 0));
        assertEquals("every Dim3 component must be at least 1, got (4, 0, 1)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Dim3.of(-1));
    }

    @Test
    void dim3VolumeDoesNotOverflow() {
        assertEquals(8L * Integer.MAX_VALUE, Dim3.of(Integer.MAX_VALUE, 8).volume());
    }
}
