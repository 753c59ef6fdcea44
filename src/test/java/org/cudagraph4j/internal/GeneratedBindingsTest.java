package org.cudagraph4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.cudagraph4j.cublaslt.cublasLtMatmulAlgo_t;
import org.cudagraph4j.cublaslt.cublasLtMatmulHeuristicResult_t;
import org.cudagraph4j.cudart.cudaDeviceProp;
import org.cudagraph4j.cudart.cudaGraphEdgeData;
import org.cudagraph4j.cudart.cudaGraphExecUpdateResultInfo;
import org.cudagraph4j.cudart.cudaGraphInstantiateParams;
import org.cudagraph4j.cudart.cudaKernelNodeParams;
import org.cudagraph4j.cudart.cudaMemPoolProps;
import org.cudagraph4j.cudart.cudaMemcpy3DParms;
import org.cudagraph4j.cudart.cudaMemsetParams;
import org.cudagraph4j.cudart.cudaPointerAttributes;
import org.cudagraph4j.cudart.dim3;
import org.cudagraph4j.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import org.junit.jupiter.api.Test;

/** The generated bindings agree with the C headers and with the runtime found at test time. */
public class GeneratedBindingsTest {
    @Test
    void everyAllowListedFunctionIsExportedByTheRuntime() throws IOException {
        List<String> functions = allowListedFunctions("cudart.args");
        SymbolLookup runtime = CudartLoader.ensureLoaded();

        List<String> missing = functions.stream().filter(f -> runtime.find(f).isEmpty()).toList();

        assertTrue(functions.size() > 50, "allow-list parsed: " + functions.size() + " functions");
        assertTrue(missing.isEmpty(), "not exported by " + CudartLoader.loadedFrom().orElseThrow() + ": " + missing);
    }

    /** Sizes from gcc's sizeof on the CUDA 13.0 headers, x86-64. */
    @Test
    void structSizesMatchTheCHeaders() {
        assertEquals(12, dim3.layout().byteSize());
        assertEquals(1008, cudaDeviceProp.layout().byteSize());
        assertEquals(56, cudaKernelNodeParams.layout().byteSize());
        assertEquals(40, cudaMemsetParams.layout().byteSize());
        assertEquals(160, cudaMemcpy3DParms.layout().byteSize());
        assertEquals(24, cudaGraphExecUpdateResultInfo.layout().byteSize());
        assertEquals(32, cudaGraphInstantiateParams.layout().byteSize());
        assertEquals(8, cudaGraphEdgeData.layout().byteSize());
        assertEquals(88, cudaMemPoolProps.layout().byteSize());
        assertEquals(88, cudaPointerAttributes.layout().byteSize());
        assertEquals(72, CUDA_KERNEL_NODE_PARAMS_v2_st.layout().byteSize());
        assertEquals(64, cublasLtMatmulAlgo_t.layout().byteSize());
        assertEquals(96, cublasLtMatmulHeuristicResult_t.layout().byteSize());
        assertEquals(64, cublasLtMatmulHeuristicResult_t.workspaceSize$offset());
        assertEquals(72, cublasLtMatmulHeuristicResult_t.state$offset());
    }

    @Test
    void fieldOffsetsTheLibraryReliesOnMatchTheCHeaders() {
        assertEquals(288, cudaDeviceProp.totalGlobalMem$offset());
        assertEquals(360, cudaDeviceProp.major$offset());
        assertEquals(384, cudaDeviceProp.multiProcessorCount$offset());
        assertEquals(672, cudaDeviceProp.sharedMemPerBlockOptin$offset());
        assertEquals(8, cudaKernelNodeParams.gridDim$offset());
        assertEquals(32, cudaKernelNodeParams.sharedMemBytes$offset());
        assertEquals(8, cudaPointerAttributes.devicePointer$offset());
        assertEquals(32, CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes$offset());
        assertEquals(56, CUDA_KERNEL_NODE_PARAMS_v2_st.kern$offset());
        assertEquals(40, cudaKernelNodeParams.kernelParams$offset());
        assertEquals(8, cudaMemPoolProps.location$offset());
        assertEquals(24, cudaMemPoolProps.maxSize$offset());
    }

    /** The {@code --include-function} names of one of {@code jextract-config}'s argfiles. */
    public static List<String> allowListedFunctions(String argfile) throws IOException {
        try (InputStream in = GeneratedBindingsTest.class.getResourceAsStream("/jextract-config/" + argfile)) {
            assertFalse(in == null, argfile + " is on the test class path");
            String args = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            Matcher m = Pattern.compile("(?m)^--include-function\\s+(\\S+)").matcher(args);
            List<String> functions = new ArrayList<>();
            while (m.find()) {
                functions.add(m.group(1));
            }
            return functions;
        }
    }
}
