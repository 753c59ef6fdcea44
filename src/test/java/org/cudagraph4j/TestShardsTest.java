package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Shards of the gpu tests cover every gpu test class exactly once, and only gpu test classes. */
class TestShardsTest {
    @Test
    void theShardsPartitionTheGpuTestClasses() {
        List<String> all = TestShards.gpuTestClasses();
        for (String gpuClass : List.of("AllocationFaultTest", "CaptureFaultTest", "ConcurrencyFaultTest",
                "CopyFaultTest", "GraphUpdateFaultTest", "KernelArgumentFaultTest", "LaunchShapeFaultTest",
                "LibraryImageFaultTest", "UseAfterCloseFaultTest", "ImageFuzzTest")) {
            assertTrue(all.contains("org.cudagraph4j." + gpuClass), gpuClass + " in " + all);
        }
        assertFalse(all.contains("org.cudagraph4j.TestShardsTest"), "a CPU test is not a gpu test");
        assertFalse(all.contains("org.cudagraph4j.GpuTest"), "the annotation holds no tests");
        for (int count : new int[] {1, 3, 4, 7}) {
            List<String> union = new ArrayList<>();
            for (int index = 1; index <= count; index++) {
                List<String> shard = TestShards.shard(all, index, count);
                assertFalse(shard.isEmpty(), "shard " + index + "/" + count);
                union.addAll(shard);
            }
            Set<String> distinct = new HashSet<>(union);
            assertEquals(union.size(), distinct.size(), "no class in two shards of " + count);
            assertEquals(new HashSet<>(all), distinct, "every class in a shard of " + count);
        }
    }

    @Test
    void onlyIOfNWithOneAtMostIAtMostNIsAccepted() {
        assertArrayEquals(new int[] {2, 4}, TestShards.parse(new String[] {"2", "4"}));
        assertNull(TestShards.parse(new String[] {"0", "4"}));
        assertNull(TestShards.parse(new String[] {"5", "4"}));
        assertNull(TestShards.parse(new String[] {"2/4"}));
        assertNull(TestShards.parse(new String[] {"-1", "4"}));
    }
}
