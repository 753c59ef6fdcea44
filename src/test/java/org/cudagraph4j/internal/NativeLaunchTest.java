package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.cudagraph4j.cudart.cudart_h.cudaLaunchAttributeClusterDimension;
import static org.cudagraph4j.cudart.cudart_h.cudaLaunchAttributeCooperative;
import static org.cudagraph4j.cudart.cudart_h.cudaLaunchAttributeProgrammaticStreamSerialization;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.cudart.cudaKernelNodeParams;
import org.cudagraph4j.cudart.cudaLaunchAttributeValue;
import org.cudagraph4j.cudart.cudaLaunchAttribute_st;
import org.cudagraph4j.cudart.cudaLaunchConfig_st;
import org.cudagraph4j.cudart.dim3;
import org.junit.jupiter.api.Test;

/** The native form of a launch, read back without a GPU: what the runtime would be given. */
class NativeLaunchTest {
    private static final int[] GRID = {8, 4, 2};
    private static final int[] BLOCK = {64, 2, 1};

    @Test
    void aLaunchWithoutAttributesIsItsGridAndBlockAlone() {
        NativeLaunch launch = NativeLaunch.of(GRID, BLOCK, 512, false, null, false);
        assertArrayEquals(GRID, launch.grid().toArray(JAVA_INT));
        assertArrayEquals(BLOCK, launch.block().toArray(JAVA_INT));
        assertEquals(0, launch.attributeCount());
        assertEquals(0, launch.nodeAttributeCount());
        assertNull(launch.config(), "cudaLaunchKernel takes no configuration struct");
        assertEquals(MemorySegment.NULL, launch.attributes());
    }

    @Test
    void attributesComeClusterThenCooperativeThenProgrammatic() {
        NativeLaunch launch = NativeLaunch.of(GRID, BLOCK, 512, true, new int[] {2, 1, 1}, true);
        assertEquals(3, launch.attributeCount());
        assertEquals(2, launch.nodeAttributeCount(), "a kernel node takes the cluster and cooperative launch");
        assertTrue(launch.programmatic());
        MemorySegment cluster = attribute(launch, 0);
        assertEquals(cudaLaunchAttributeClusterDimension(), cudaLaunchAttribute_st.id(cluster));
        MemorySegment dim = cudaLaunchAttributeValue.clusterDim(cudaLaunchAttribute_st.val(cluster));
        assertArrayEquals(new int[] {2, 1, 1}, new int[] {cudaLaunchAttributeValue.clusterDim.x(dim),
                cudaLaunchAttributeValue.clusterDim.y(dim), cudaLaunchAttributeValue.clusterDim.z(dim)});
        MemorySegment cooperative = attribute(launch, 1);
        assertEquals(cudaLaunchAttributeCooperative(), cudaLaunchAttribute_st.id(cooperative));
        assertEquals(1, cudaLaunchAttributeValue.cooperative(cudaLaunchAttribute_st.val(cooperative)));
        MemorySegment programmatic = attribute(launch, 2);
        assertEquals(cudaLaunchAttributeProgrammaticStreamSerialization(), cudaLaunchAttribute_st.id(programmatic));
        assertEquals(1, cudaLaunchAttributeValue.programmaticStreamSerializationAllowed(
                cudaLaunchAttribute_st.val(programmatic)));
    }

    @Test
    void theLaunchConfigurationHoldsShapeAndAttributesButNoStream() {
        NativeLaunch launch = NativeLaunch.of(GRID, BLOCK, 512, false, null, true);
        MemorySegment config = launch.config();
        assertArrayEquals(GRID, dims(cudaLaunchConfig_st.gridDim(config)));
        assertArrayEquals(BLOCK, dims(cudaLaunchConfig_st.blockDim(config)));
        assertEquals(512, cudaLaunchConfig_st.dynamicSmemBytes(config));
        assertEquals(MemorySegment.NULL, cudaLaunchConfig_st.stream(config), "the stream is each launch's own");
        assertEquals(launch.attributes().address(), cudaLaunchConfig_st.attrs(config).address());
        assertEquals(1, cudaLaunchConfig_st.numAttrs(config));
        assertEquals(cudaLaunchAttributeCooperative(), cudaLaunchAttribute_st.id(attribute(launch, 0)));
        assertEquals(1, launch.nodeAttributeCount());
    }

    @Test
    void programmaticDependentLaunchIsNoNodeAttribute() {
        NativeLaunch launch = NativeLaunch.of(GRID, BLOCK, 0, true, null, false);
        assertEquals(1, launch.attributeCount());
        assertEquals(0, launch.nodeAttributeCount(), "in a graph it is a programmatic edge");
        assertThrows(IllegalStateException.class, () -> launch.maxActiveClusters(MemorySegment.NULL, "k"));
    }

    @Test
    void aKernelNodeIsFilledInFullFromTheSameValue() {
        NativeLaunch launch = NativeLaunch.of(GRID, BLOCK, 19200, false, new int[] {2, 2, 1}, false);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = cudaKernelNodeParams.allocate(arena).fill((byte) 0x5a); // stale bytes
            MemorySegment function = MemorySegment.ofAddress(0x1000);
            MemorySegment arguments = MemorySegment.ofAddress(0x2000);
            launch.nodeParams(params, function, arguments);
            assertEquals(0x1000, cudaKernelNodeParams.func(params).address());
            assertArrayEquals(GRID, dims(cudaKernelNodeParams.gridDim(params)));
            assertArrayEquals(BLOCK, dims(cudaKernelNodeParams.blockDim(params)));
            assertEquals(19200, cudaKernelNodeParams.sharedMemBytes(params));
            assertEquals(0x2000, cudaKernelNodeParams.kernelParams(params).address());
            assertEquals(MemorySegment.NULL, cudaKernelNodeParams.extra(params));
        }
    }

    private static MemorySegment attribute(NativeLaunch launch, int index) {
        return cudaLaunchAttribute_st.asSlice(launch.attributes(), index);
    }

    private static int[] dims(MemorySegment dims) {
        return new int[] {dim3.x(dims), dim3.y(dims), dim3.z(dims)};
    }
}
