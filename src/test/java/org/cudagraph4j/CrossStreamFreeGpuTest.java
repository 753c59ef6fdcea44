package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;

/**
 * {@link DeviceBuffer#closeOn}: a stream-ordered allocation freed in another stream's order
 * ({@code cudaFreeAsync(p, otherStream)}), and the buffers and streams it refuses, each by name.
 */
@GpuTest
class CrossStreamFreeGpuTest {
    private static final int N = 1 << 20;

    @Test
    void aBufferAllocatedOnOneStreamIsFreedInAnothersOrder() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        try (CudaStream producer = device.createStream(); CudaStream consumer = device.createStream();
                CudaEvent written = device.createEvent();
                MemoryPool pool = device.createMemoryPool(MemoryPool.Options.defaults());
                DeviceBuffer out = device.allocateFloats(N)) {
            DeviceBuffer scratch = pool.allocateFloats(producer, N);
            scratch.memsetAsync(0x3F, producer);
            written.record(producer);
            consumer.waitFor(written);
            out.copyFromAsync(scratch, consumer);
            scratch.closeOn(consumer);
            assertFalse(scratch.isOpen());
            scratch.closeOn(consumer); // idempotent
            consumer.synchronize();
            assertEquals(0, pool.statistics().usedBytes(), "the free ran in the consumer's order: " + pool.statistics());
            float[] values = out.toFloatArray();
            assertEquals(Float.intBitsToFloat(0x3F3F3F3F), values[N - 1]);
        }
        assertEquals(before, Cuda.liveResources());
    }

    @Test
    void aBufferAGraphHoldsIsFreedWhenTheGraphLetsGo() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        LiveResources before = Cuda.liveResources();
        try (CudaStream producer = device.createStream(); CudaStream consumer = device.createStream();
                DeviceBuffer out = device.allocateFloats(N)) {
            DeviceBuffer scratch = producer.allocate(ElementType.FLOAT32, N);
            producer.synchronize();
            GraphExec exec;
            try (CudaGraph graph = CudaGraph.create()) {
                graph.addMemset(scratch, 0);
                exec = graph.instantiate();
            }
            scratch.closeOn(consumer);
            assertEquals(before.deviceBuffers() + 2, Cuda.liveResources().deviceBuffers(),
                    "the executable still holds the buffer");
            exec.launch(consumer);
            consumer.synchronize();
            exec.close();
        }
        assertEquals(before, Cuda.liveResources());
    }

    @Test
    void buffersAndStreamsThatCannotTakeTheFreeAreRefused() {
        CudaDevice device = TestData.device();
        device.makeCurrent();
        try (CudaStream stream = device.createStream(); CudaStream capturing = device.createStream();
                DeviceBuffer plain = device.allocateFloats(16)) {
            IllegalStateException notOrdered = assertThrows(IllegalStateException.class, () -> plain.closeOn(stream));
            assertTrue(notOrdered.getMessage().contains("is not a stream-ordered allocation"),
                    notOrdered.getMessage());
            assertTrue(plain.isOpen());
            IllegalStateException slice = assertThrows(IllegalStateException.class,
                    () -> plain.slice(0, 4).closeOn(stream));
            assertTrue(slice.getMessage().contains("is not a stream-ordered allocation"), slice.getMessage());
            DeviceBuffer ordered = stream.allocate(ElementType.FLOAT32, 16);
            try (StreamCapture capture = StreamCapture.begin(capturing, CaptureMode.RELAXED)) {
                IllegalStateException inCapture = assertThrows(IllegalStateException.class,
                        () -> ordered.closeOn(capturing));
                assertTrue(inCapture.getMessage().contains("which is capturing"), inCapture.getMessage());
                assertTrue(ordered.isOpen(), "a refused free leaves the buffer open");
                try (CudaGraph graph = CudaGraph.create()) {
                    DeviceBuffer graphMemory = graph.addMemAlloc(ElementType.FLOAT32, 16).buffer();
                    IllegalStateException owned = assertThrows(IllegalStateException.class,
                            () -> graphMemory.closeOn(stream));
                    assertTrue(owned.getMessage().contains("is graph memory: its graph frees it"),
                            owned.getMessage());
                }
            }
            CudaStream closed = device.createStream();
            closed.close();
            assertThrows(IllegalStateException.class, () -> ordered.closeOn(closed));
            assertTrue(ordered.isOpen());
            ordered.closeOn(stream);
            stream.synchronize();
        }
    }
}
