package org.cudagraph4j.error;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.cudagraph4j.cudart.cudart_h;
import org.junit.jupiter.api.Test;

class CudaErrorTest {
    @Test
    void everyEntryMatchesTheGeneratedConstant() throws Exception {
        for (CudaError error : CudaError.values()) {
            if (error == CudaError.UNRECOGNIZED) {
                continue;
            }
            Method constant = cudart_h.class.getMethod(error.cudaName());
            assertEquals(constant.invoke(null), error.code(), error.cudaName());
        }
    }

    @Test
    void everyGeneratedErrorConstantHasAnEntry() {
        Set<String> known = Arrays.stream(CudaError.values()).map(CudaError::cudaName).collect(Collectors.toSet());
        Set<String> generated = Arrays.stream(cudart_h.class.getMethods())
                .filter(m -> Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 0)
                .map(Method::getName)
                .filter(name -> name.startsWith("cudaError") && !name.equals("cudaError_t"))
                .collect(Collectors.toSet());
        generated.removeAll(known);
        assertTrue(generated.isEmpty(), "no CudaError entry for " + generated);
    }

    @Test
    void unknownCodesMapToUnrecognized() {
        assertEquals(CudaError.UNRECOGNIZED, CudaError.fromCode(123456));
        assertEquals(CudaError.NO_DEVICE, CudaError.fromCode(100));
    }

    @Test
    void captureErrorsAreTheNineHundredRange() {
        assertTrue(CudaError.STREAM_CAPTURE_UNSUPPORTED.isCaptureError());
        assertTrue(CudaError.STREAM_CAPTURE_IMPLICIT.isCaptureError());
        assertTrue(CudaError.STREAM_CAPTURE_WRONG_THREAD.isCaptureError());
        assertFalse(CudaError.GRAPH_EXEC_UPDATE_FAILURE.isCaptureError());
    }
}
