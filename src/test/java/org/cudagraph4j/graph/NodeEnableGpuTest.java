package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.Test;

/** Nodes of an executable turned off and on without an update, and the nodes CUDA cannot switch refused. */
@GpuTest
class NodeEnableGpuTest {
    @Test
    void aDisabledMemsetDoesNothingAndRunsAgainOnceEnabled() {
        CudaDevice device = TestData.device();
        int n = 256;
        try (CudaStream stream = device.createStream(); DeviceBuffer buffer = device.allocateFloats(n);
                DeviceBuffer copy = device.allocateFloats(n); CudaGraph graph = CudaGraph.create();
                CudaGraph other = CudaGraph.create()) {
            GraphNode set = graph.addMemset(buffer, 0x40);
            GraphNode copied = graph.addMemcpy(copy, buffer, set);
            GraphNode empty = graph.addEmpty(copied);
            GraphNode foreign = other.addEmpty();
            float[] filled = new float[n];
            Arrays.fill(filled, Float.intBitsToFloat(0x40404040));
            try (GraphExec exec = graph.instantiate()) {
                assertTrue(exec.isEnabled(set) && exec.isEnabled(copied));
                exec.setEnabled(set, false);
                assertFalse(exec.isEnabled(set));
                buffer.copyFrom(TestData.nans(n));
                exec.launch(stream);
                stream.synchronize();
                float[] unset = buffer.toFloatArray();
                assertTrue(Float.isNaN(unset[0]) && Float.isNaN(unset[n - 1]), "the disabled memset did nothing");
                assertArrayEquals(unset, copy.toFloatArray(), "the copy after it still ran");
                exec.setEnabled(set, true);
                exec.setEnabled(copied, false);
                copy.copyFrom(TestData.nans(n));
                exec.launch(stream);
                stream.synchronize();
                assertArrayEquals(filled, buffer.toFloatArray());
                assertTrue(Float.isNaN(copy.toFloatArray()[0]), "the disabled copy did nothing");
                EnableRefusals.assertRefused(exec, empty, "EMPTY", foreign);
            }
            EnableRefusals.assertClosedRefuses(graph, set);
        }
    }
}
