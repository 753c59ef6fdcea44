package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

@GpuTest
class DeviceTest {
    @Test
    void reportsPropertiesOfARealDevice(TestReporter reporter) {
        DeviceProperties properties = TestData.device().properties();
        reporter.publishEntry("device", properties.toString());

        assertFalse(properties.name().isBlank());
        assertTrue(properties.computeCapability() >= 80, "sm_80 or newer: " + properties.computeCapability());
        assertTrue(properties.multiprocessorCount() > 0);
        assertTrue(properties.totalMemoryBytes() > 1L << 30);
        assertTrue(properties.sharedMemPerBlockOptinBytes() >= 48 * 1024);
        assertEquals(32, properties.warpSize());
        assertEquals(1024, properties.maxThreadsPerBlock());
    }

    @Test
    void driverSupportsTheRuntime() {
        assertTrue(Cuda.runtimeVersion() >= 13000, "runtime " + Cuda.runtimeVersion());
        assertTrue(Cuda.driverVersion() >= Cuda.runtimeVersion(),
                "driver " + Cuda.driverVersion() + " < runtime " + Cuda.runtimeVersion());
    }

    @Test
    void listsDevicesAndRejectsAMissingOrdinal() {
        int count = Cuda.deviceCount();
        assertEquals(count, Cuda.devices().size());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Cuda.device(count));
        assertEquals("no CUDA device " + count + ": this machine has " + count, e.getMessage());
    }

    @Test
    void memoryInfoIsConsistent() {
        CudaDevice.MemoryInfo info = TestData.device().memoryInfo();
        assertTrue(info.freeBytes() > 0 && info.freeBytes() <= info.totalBytes(), info.toString());
    }
}
