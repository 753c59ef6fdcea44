package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class LaunchConfigTest {
    @Test
    void shapeCollapsesTrailingOnesAsTheSeedDiagramDoes() {
        assertEquals("<<<{32,20},64,19200>>>", LaunchConfig.shape(Dim3.of(32, 20), Dim3.of(64), 19200));
        assertEquals("<<<{256,2},{8,32},0>>>", LaunchConfig.shape(Dim3.of(256, 2), Dim3.of(8, 32), 0));
        assertEquals("<<<{1,1,4},1,0>>>", LaunchConfig.shape(Dim3.of(1, 1, 4), Dim3.of(1), 0));
    }

    @Test
    void theShapeIsCheckedOnceWhereItIsMade() {
        IllegalArgumentException block = assertThrows(IllegalArgumentException.class,
                () -> LaunchConfig.of(Dim3.of(1), Dim3.of(1025)));
        assertEquals("a block has at most 1024 threads, but 1025 has 1025", block.getMessage());
        IllegalArgumentException shared = assertThrows(IllegalArgumentException.class,
                () -> LaunchConfig.of(Dim3.of(1), Dim3.of(32), -1));
        assertEquals("sharedMemBytes must not be negative, got -1", shared.getMessage());
        NullPointerException grid = assertThrows(NullPointerException.class, () -> LaunchConfig.of(null, Dim3.of(32)));
        assertEquals("grid", grid.getMessage());
        IllegalArgumentException cluster = assertThrows(IllegalArgumentException.class,
                () -> LaunchConfig.of(Dim3.of(6), Dim3.of(32)).withCluster(Dim3.of(4)));
        assertEquals("the grid 6 is not a whole number of clusters 4: each grid dimension must be a multiple of the "
                + "cluster's", cluster.getMessage());
    }

    @Test
    void attributesAddToTheShapeAndKeepIt() {
        LaunchConfig plain = LaunchConfig.of(Dim3.of(8), Dim3.of(64), 256);
        assertFalse(plain.programmaticDependentLaunch() || plain.cooperative());
        assertNull(plain.cluster());
        LaunchConfig all = plain.withProgrammaticDependentLaunch().withCluster(Dim3.of(2)).withCooperativeLaunch();
        assertTrue(all.programmaticDependentLaunch() && all.cooperative());
        assertEquals(Dim3.of(2), all.cluster());
        assertEquals(plain.shape(), all.shape());
        assertEquals(new LaunchConfig(Dim3.of(8), Dim3.of(64), 0, false, null, false),
                LaunchConfig.of(Dim3.of(8), Dim3.of(64)));
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

    @Test
    void theNativeFormIsMadeOnceAndKeptByTheConfiguration() {
        LaunchConfig config = LaunchConfig.of(Dim3.of(8), Dim3.of(64), 256).withCluster(Dim3.of(2));
        assertSame(config.nativeLaunch(), config.nativeLaunch());
        LaunchConfig equal = LaunchConfig.of(Dim3.of(8), Dim3.of(64), 256).withCluster(Dim3.of(2));
        assertEquals(config, equal, "the native form is no part of the value");
        assertEquals(config.hashCode(), equal.hashCode());
        equal.nativeLaunch();
        assertEquals(config, equal);
    }

    @Test
    void itComparesAndPrintsAsARecordWould() {
        LaunchConfig plain = LaunchConfig.of(Dim3.of(8), Dim3.of(64), 256);
        assertNotEquals(plain, plain.withCooperativeLaunch());
        assertNotEquals(plain, plain.withProgrammaticDependentLaunch());
        assertNotEquals(plain, plain.withCluster(Dim3.of(2)));
        assertNotEquals(plain, LaunchConfig.of(Dim3.of(8), Dim3.of(64), 128));
        assertEquals("LaunchConfig[grid=8, block=64, sharedMemBytes=256, programmaticDependentLaunch=false, "
                + "cluster=2, cooperative=true]", plain.withCluster(Dim3.of(2)).withCooperativeLaunch().toString());
    }
}
