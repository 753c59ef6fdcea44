package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Optional;
import org.cudagraph4j.cudart.cudart_h;
import org.junit.jupiter.api.Test;

/** The attributes {@link CudaDevice#attribute} reads carry CUDA's values, kept equal to the generated constants. */
class DeviceAttributeTest {
    @Test
    void eachAttributeHasTheValueOfTheGeneratedConstantItNames() throws Exception {
        for (DeviceAttribute attribute : DeviceAttribute.values()) {
            String name = attribute.cudaName();
            assertTrue(name.startsWith("cudaDevAttr"), name);
            assertEquals(cudart_h.class.getMethod(name).invoke(null), attribute.value(), name);
        }
    }

    @Test
    void valuesAreUniqueAndFoundAgain() {
        assertEquals(DeviceAttribute.values().length,
                Arrays.stream(DeviceAttribute.values()).mapToInt(DeviceAttribute::value).distinct().count());
        for (DeviceAttribute attribute : DeviceAttribute.values()) {
            assertEquals(Optional.of(attribute), CudaEnum.find(DeviceAttribute.class, attribute.value()));
        }
        assertEquals(Optional.empty(), CudaEnum.find(DeviceAttribute.class, 92), "a reserved value is no attribute");
    }

    @Test
    void theSamplesAttributesAreThere() {
        assertEquals("cudaDevAttrClockRate", DeviceAttribute.CLOCK_RATE_KHZ.cudaName());
        assertEquals(13, DeviceAttribute.CLOCK_RATE_KHZ.value());
        assertEquals("cudaDevAttrMemoryPoolsSupported", DeviceAttribute.MEMORY_POOLS_SUPPORTED.cudaName());
        assertEquals(115, DeviceAttribute.MEMORY_POOLS_SUPPORTED.value());
    }

    @Test
    void aNullAttributeIsRefusedBeforeTheRuntimeIsAsked() {
        NullPointerException e = assertThrows(NullPointerException.class, () -> new CudaDevice(0).attribute(null));
        assertEquals("attribute", e.getMessage());
    }
}
