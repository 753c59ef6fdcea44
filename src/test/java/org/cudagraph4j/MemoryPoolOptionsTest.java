package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link MemoryPool.Options}, {@link MemoryPool.Statistics} and the pool count in {@link LiveResources}: no GPU needed. */
class MemoryPoolOptionsTest {
    @Test
    void defaultsAreTheRuntimes() {
        MemoryPool.Options defaults = MemoryPool.Options.defaults();

        assertEquals(0, defaults.releaseThresholdBytes());
        assertEquals(0, defaults.maxSizeBytes());
    }

    @Test
    void withersChangeOneValueEach() {
        MemoryPool.Options options = MemoryPool.Options.defaults().withReleaseThreshold(1L << 30).withMaxSize(1L << 33);

        assertEquals(new MemoryPool.Options(1L << 30, 1L << 33), options);
        assertEquals(new MemoryPool.Options(Long.MAX_VALUE, 1L << 33), options.withReleaseThreshold(Long.MAX_VALUE));
        assertEquals(new MemoryPool.Options(1L << 30, 0), options.withMaxSize(0));
    }

    @Test
    void negativeSizesAreRefused() {
        IllegalArgumentException threshold = assertThrows(IllegalArgumentException.class,
                () -> MemoryPool.Options.defaults().withReleaseThreshold(-1));
        IllegalArgumentException maxSize = assertThrows(IllegalArgumentException.class,
                () -> new MemoryPool.Options(0, Long.MIN_VALUE));

        assertEquals("releaseThresholdBytes must not be negative, got -1", threshold.getMessage());
        assertEquals("maxSizeBytes must not be negative, got " + Long.MIN_VALUE, maxSize.getMessage());
    }

    @Test
    void creatingAPoolWithoutOptionsFailsBeforeTheRuntime() {
        assertThrows(NullPointerException.class, () -> new CudaDevice(0).createMemoryPool(null));
    }

    @Test
    void liveResourcesNameGrowthInMemoryPools() {
        LiveResources before = new LiveResources(1, 0, 2, 64, 0, 0, 0, 0, 0, 0, 0, 0);
        LiveResources after = new LiveResources(1, 0, 3, 96, 0, 0, 0, 0, 0, 0, 2, 0);

        assertEquals("deviceBuffers +1 (+32 bytes), memoryPools +2", after.growthSince(before));
        assertTrue(before.growthSince(after).isEmpty(), before.growthSince(after));
    }
}
