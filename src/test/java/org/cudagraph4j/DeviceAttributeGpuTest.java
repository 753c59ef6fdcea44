package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.error.CudaError;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Devices;
import org.junit.jupiter.api.Test;

/**
 * {@link CudaDevice#attribute} on a real device: every attribute reads, the values are plausible,
 * and those {@link DeviceProperties} also carries agree with it.
 */
@GpuTest
class DeviceAttributeGpuTest {
    /** The attributes that say whether the device supports something: 1 or 0. */
    private static final List<DeviceAttribute> FLAGS = List.of(DeviceAttribute.CONCURRENT_KERNELS,
            DeviceAttribute.MANAGED_MEMORY, DeviceAttribute.CONCURRENT_MANAGED_ACCESS,
            DeviceAttribute.COMPUTE_PREEMPTION_SUPPORTED, DeviceAttribute.COOPERATIVE_LAUNCH,
            DeviceAttribute.MEMORY_POOLS_SUPPORTED, DeviceAttribute.CLUSTER_LAUNCH);

    /**
     * The clocks, which CUDA 13's {@code cudaDeviceProp} no longer holds: NVIDIA's {@code helper_cuda.h}
     * takes {@code cudaErrorInvalidValue} for the clock rate as "not reported", and so does this
     * test. A clock that is reported must be positive.
     */
    private static final List<DeviceAttribute> CLOCKS = List.of(DeviceAttribute.CLOCK_RATE_KHZ,
            DeviceAttribute.MEMORY_CLOCK_RATE_KHZ);

    @Test
    void everyAttributeReadsAndTheFlagsAreZeroOrOne() {
        CudaDevice device = TestData.device();
        Map<DeviceAttribute, Integer> values = new EnumMap<>(DeviceAttribute.class);
        for (DeviceAttribute attribute : DeviceAttribute.values()) {
            if (!CLOCKS.contains(attribute)) {
                values.put(attribute, device.attribute(attribute));
            }
        }
        System.out.println(device + ": " + values);
        for (DeviceAttribute flag : FLAGS) {
            int value = values.get(flag);
            assertTrue(value == 0 || value == 1, flag + " = " + value);
        }
        int mode = values.get(DeviceAttribute.COMPUTE_MODE);
        assertTrue(mode >= 0 && mode <= 3, "a cudaComputeMode: " + mode);
        assertTrue(values.get(DeviceAttribute.ASYNC_ENGINE_COUNT) >= 0);
    }

    @Test
    void clocksArePositiveWhereTheDeviceReportsThem() {
        CudaDevice device = TestData.device();
        for (DeviceAttribute clock : CLOCKS) {
            int kilohertz;
            try {
                kilohertz = device.attribute(clock);
            } catch (CudaException notReported) {
                assertEquals(CudaError.INVALID_VALUE, notReported.error(), notReported.getMessage());
                assertTrue(notReported.getMessage().contains(clock.cudaName()), notReported.getMessage());
                System.out.println(device + " does not report " + clock + ": " + notReported.getMessage());
                continue;
            }
            System.out.println(device + ": " + clock + " = " + kilohertz);
            assertTrue(kilohertz > 0, clock + " = " + kilohertz);
        }
    }

    @Test
    void sizesArePlausible() {
        CudaDevice device = TestData.device();
        assertTrue(device.attribute(DeviceAttribute.GLOBAL_MEMORY_BUS_WIDTH_BITS) > 0);
        int perBlock = device.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_BYTES);
        int optin = device.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN_BYTES);
        int perMultiprocessor = device.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR_BYTES);
        assertTrue(perBlock >= 48 * 1024, "shared memory per block: " + perBlock);
        assertTrue(perBlock <= optin && optin <= perMultiprocessor,
                "per block " + perBlock + ", opted in " + optin + ", per multiprocessor " + perMultiprocessor);
        int threadsPerBlock = device.attribute(DeviceAttribute.MAX_THREADS_PER_BLOCK);
        assertTrue(device.attribute(DeviceAttribute.MAX_THREADS_PER_MULTIPROCESSOR) >= threadsPerBlock);
        assertTrue(device.attribute(DeviceAttribute.MAX_BLOCKS_PER_MULTIPROCESSOR) > 0);
    }

    @Test
    void agreesWithTheDeviceProperties() {
        CudaDevice device = TestData.device();
        DeviceProperties properties = device.properties();
        assertEquals(properties.multiprocessorCount(), device.attribute(DeviceAttribute.MULTIPROCESSOR_COUNT));
        assertEquals(properties.major(), device.attribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR));
        assertEquals(properties.minor(), device.attribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR));
        assertEquals(properties.warpSize(), device.attribute(DeviceAttribute.WARP_SIZE));
        assertEquals(properties.maxThreadsPerBlock(), device.attribute(DeviceAttribute.MAX_THREADS_PER_BLOCK));
        assertEquals(properties.l2CacheBytes(), device.attribute(DeviceAttribute.L2_CACHE_SIZE_BYTES));
        assertEquals(properties.sharedMemPerBlockOptinBytes(),
                device.attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN_BYTES));
    }

    @Test
    void aDeviceWithClustersSaysSo() {
        CudaDevice device = TestData.device();
        int major = device.properties().major();
        assertEquals(major >= 9 ? 1 : 0, device.attribute(DeviceAttribute.CLUSTER_LAUNCH),
                "clusters came with sm_90; this is sm_" + major + "x");
    }

    @Test
    void readingLeavesTheCurrentDeviceAlone() {
        int before = Devices.current();
        for (CudaDevice device : Cuda.devices()) {
            assertTrue(device.attribute(DeviceAttribute.MULTIPROCESSOR_COUNT) > 0, device.toString());
        }
        assertEquals(before, Devices.current());
    }
}
