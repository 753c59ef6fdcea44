package org.cudagraph4j.error;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import org.cudagraph4j.internal.Status;
import org.junit.jupiter.api.Test;

class CudaExceptionTest {
    @Test
    void messageReadsFunctionNameCodeAndExplanation() {
        CudaException e = assertInstanceOf(CudaException.class, Status.error(2, "cudaMalloc", null));

        assertEquals("cudaMalloc: cudaErrorMemoryAllocation (2): out of memory", e.getMessage());
        assertEquals(CudaError.MEMORY_ALLOCATION, e.error());
        assertEquals(2, e.code());
        assertEquals("cudaMalloc", e.function());
        assertEquals("cudaErrorMemoryAllocation", e.cudaName());
    }

    @Test
    void contextIsAppended() {
        CudaException e = assertInstanceOf(CudaException.class, Status.error(100, "cudaSetDevice", "device 3"));

        assertEquals("cudaSetDevice: cudaErrorNoDevice (100): no CUDA-capable device is detected [device 3]",
                e.getMessage());
    }

    @Test
    void unknownCodeKeepsTheRawValue() {
        CudaException e = assertInstanceOf(CudaException.class, Status.error(77777, "cudaFoo", null));

        assertEquals(CudaError.UNRECOGNIZED, e.error());
        assertEquals(77777, e.code());
    }

    @Test
    void captureViolationsAreStreamCaptureExceptionsNamingTheCapture() {
        StreamCaptureException e = assertInstanceOf(StreamCaptureException.class,
                Status.error(CudaError.STREAM_CAPTURE_UNSUPPORTED.code(), "cudaMalloc", null));

        assertEquals(CudaError.STREAM_CAPTURE_UNSUPPORTED, e.error());
        assertEquals("no capture tracked by cudagraph4j (another library may have begun one)", e.capture());
    }
}
