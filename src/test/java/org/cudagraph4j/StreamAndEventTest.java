package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.StreamCapture;
import org.junit.jupiter.api.Test;

@GpuTest
class StreamAndEventTest {
    private final CudaDevice device = TestData.device();

    @Test
    void eventsTimeWorkOnAStream() {
        try (CudaStream stream = device.createStream(); CudaEvent start = device.createEvent();
                CudaEvent end = device.createEvent(); DeviceBuffer buffer = device.allocateFloats(1 << 24)) {
            start.record(stream);
            buffer.memsetAsync(0x3F, stream);
            end.record(stream);
            end.synchronize();

            assertTrue(end.isComplete());
            float millis = end.elapsedMillisSince(start);
            assertTrue(millis > 0 && millis < 10_000, "elapsed " + millis + " ms");
        }
    }

    @Test
    void timingNeedsTimingEvents() {
        try (CudaEvent a = device.createEvent(CudaEvent.Option.DISABLE_TIMING); CudaEvent b = device.createEvent()) {
            assertThrows(IllegalStateException.class, () -> b.elapsedMillisSince(a));
        }
    }

    @Test
    void streamWaitsForAnEventOnAnotherStream() {
        int n = 1 << 22;
        float[] data = TestData.randomFloats(n, TestData.newSeed());
        try (CudaStream producer = device.createStream(); CudaStream consumer = device.createStream();
                CudaEvent ready = device.createEvent(CudaEvent.Option.DISABLE_TIMING);
                PinnedBuffer pinned = Cuda.allocatePinned(4L * n);
                DeviceBuffer a = device.allocateFloats(n); DeviceBuffer b = device.allocateFloats(n)) {
            pinned.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
            a.copyFromAsync(pinned.segment(), producer);
            ready.record(producer);
            consumer.waitFor(ready);
            b.copyFromAsync(a, consumer);
            consumer.synchronize();

            assertTrue(consumer.isIdle());
            assertArrayEquals(data, b.toFloatArray());
        }
    }

    @Test
    void prioritiesAndIdsAreReported() {
        CudaDevice.PriorityRange range = device.streamPriorityRange();
        assertTrue(range.greatest() <= range.least(), range.toString());
        try (CudaStream high = device.createStream(range.greatest()); CudaStream low = device.createStream()) {
            assertEquals(range.greatest(), high.priority());
            assertNotEquals(high.id(), low.id());
        }
    }

    @Test
    void closedStreamRejectsUse() {
        CudaStream stream = device.createStream();
        stream.close();
        stream.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, stream::synchronize);
        assertTrue(e.getMessage().endsWith("is closed"), e.getMessage());
    }

    /** Destroyed mid-capture, a stream could never end its capture: closing waits for the capture's end. */
    @Test
    void aCapturingStreamRefusesToCloseUntilItsCaptureEnds() {
        CudaStream stream = device.createStream();
        String name = stream.toString();
        try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.GLOBAL)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, stream::close);
            assertEquals(name + " is capturing: end or close its StreamCapture before closing the stream",
                    e.getMessage());
            assertTrue(stream.isOpen());
            assertEquals(CaptureStatus.ACTIVE, stream.captureStatus());
        }
        assertEquals(CaptureStatus.NONE, stream.captureStatus());
        stream.close();
        assertFalse(stream.isOpen());
    }
}
