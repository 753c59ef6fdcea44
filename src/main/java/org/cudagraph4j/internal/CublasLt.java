package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.cudagraph4j.cublaslt.cublasLtMatmulAlgo_t;
import org.cudagraph4j.cublaslt.cublasLtMatmulHeuristicResult_t;
import org.cudagraph4j.cublaslt.cublasLt_h;
import org.cudagraph4j.error.CublasException;

/**
 * The calls into cuBLASLt: a handle, the descriptors of one matmul (operation, four matrix
 * layouts), the heuristic's choice of algorithm and the matmul itself. Every status is checked and
 * a failure is a {@link CublasException} naming the call, its {@code cublasStatus_t} and what was
 * being done. cuBLASLt works on the current device, so each call that touches one makes the
 * caller's device current first.
 */
@SuppressWarnings("restricted") // cuBLASLt returns C strings of unknown length: read up to their NUL
public final class CublasLt {
    public static final int OP_N = cublasLt_h.CUBLAS_OP_N();
    public static final int OP_T = cublasLt_h.CUBLAS_OP_T();
    public static final int R_32F = cublasLt_h.CUDA_R_32F();
    public static final int R_16F = cublasLt_h.CUDA_R_16F();
    public static final int R_16BF = cublasLt_h.CUDA_R_16BF();
    public static final int COMPUTE_32F = cublasLt_h.CUBLAS_COMPUTE_32F();
    public static final int COMPUTE_32F_FAST_TF32 = cublasLt_h.CUBLAS_COMPUTE_32F_FAST_TF32();
    public static final int COMPUTE_32F_FAST_16BF = cublasLt_h.CUBLAS_COMPUTE_32F_FAST_16BF();
    public static final int COMPUTE_32F_FAST_16F = cublasLt_h.CUBLAS_COMPUTE_32F_FAST_16F();
    public static final int COMPUTE_32F_EMULATED_16BFX9 = cublasLt_h.CUBLAS_COMPUTE_32F_EMULATED_16BFX9();
    public static final int EPILOGUE_DEFAULT = cublasLt_h.CUBLASLT_EPILOGUE_DEFAULT();
    public static final int EPILOGUE_RELU = cublasLt_h.CUBLASLT_EPILOGUE_RELU();
    public static final int EPILOGUE_BIAS = cublasLt_h.CUBLASLT_EPILOGUE_BIAS();
    public static final int EPILOGUE_RELU_BIAS = cublasLt_h.CUBLASLT_EPILOGUE_RELU_BIAS();
    public static final int EPILOGUE_GELU = cublasLt_h.CUBLASLT_EPILOGUE_GELU();
    public static final int EPILOGUE_GELU_BIAS = cublasLt_h.CUBLASLT_EPILOGUE_GELU_BIAS();
    private static final int SUCCESS = cublasLt_h.CUBLAS_STATUS_SUCCESS();

    private CublasLt() {}

    /**
     * An algorithm the heuristic chose, with the workspace it needs.
     *
     * @param algo the 64-byte {@code cublasLtMatmulAlgo_t}, in memory that lives as long as the JVM
     * @param workspaceBytes the workspace it needs
     * @param waves the heuristic's estimate of how many waves of the GPU it fills
     */
    public record Algorithm(MemorySegment algo, long workspaceBytes, float waves) {}

    /** {@return cuBLASLt's version, e.g. 130000 for 13.0.0} */
    public static long version() {
        CublasLtLoader.ensureLoaded();
        return cublasLt_h.cublasLtGetVersion();
    }

    /** Creates a handle with {@code device} current. */
    public static MemorySegment create(int device) {
        CublasLtLoader.ensureLoaded();
        Devices.use(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(ADDRESS);
            check(cublasLt_h.cublasLtCreate(handle), "cublasLtCreate", null);
            return handle.get(ADDRESS, 0);
        }
    }

    public static void destroy(MemorySegment handle) {
        check(cublasLt_h.cublasLtDestroy(handle), "cublasLtDestroy", null);
    }

    /** A column-major layout of {@code rows} x {@code columns} elements of {@code type}, columns {@code ld} apart. */
    public static MemorySegment createLayout(int type, long rows, long columns, long ld) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment layout = arena.allocate(ADDRESS);
            check(cublasLt_h.cublasLtMatrixLayoutCreate(layout, type, rows, columns, ld), "cublasLtMatrixLayoutCreate",
                    rows + " x " + columns + ", ld " + ld);
            return layout.get(ADDRESS, 0);
        }
    }

    public static void destroyLayout(MemorySegment layout) {
        check(cublasLt_h.cublasLtMatrixLayoutDestroy(layout), "cublasLtMatrixLayoutDestroy", null);
    }

    /**
     * An operation descriptor: FP32 scaling, the transposes, the epilogue and, for an epilogue
     * with a bias, its element type; {@code description} names the product in an error.
     */
    public static MemorySegment createOperation(int computeType, int transA, int transB, int epilogue, int biasType,
            Object description) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int status = cublasLt_h.cublasLtMatmulDescCreate(out, computeType, R_32F);
            if (status != SUCCESS) {
                throw failure("cublasLtMatmulDescCreate", status, String.valueOf(description));
            }
            MemorySegment operation = out.get(ADDRESS, 0);
            try {
                setInt(arena, operation, cublasLt_h.CUBLASLT_MATMUL_DESC_TRANSA(), transA, "TRANSA");
                setInt(arena, operation, cublasLt_h.CUBLASLT_MATMUL_DESC_TRANSB(), transB, "TRANSB");
                setInt(arena, operation, cublasLt_h.CUBLASLT_MATMUL_DESC_EPILOGUE(), epilogue, "EPILOGUE");
                if (biasType >= 0) {
                    setInt(arena, operation, cublasLt_h.CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE(), biasType,
                            "BIAS_DATA_TYPE");
                }
                return operation;
            } catch (RuntimeException e) {
                destroyOperation(operation);
                throw e;
            }
        }
    }

    public static void destroyOperation(MemorySegment operation) {
        check(cublasLt_h.cublasLtMatmulDescDestroy(operation), "cublasLtMatmulDescDestroy", null);
    }

    /** Points the operation's bias epilogue at {@code address}; the operation then reads it at each matmul. */
    public static void setBias(MemorySegment operation, long address, Arena arena) {
        MemorySegment value = arena.allocateFrom(JAVA_LONG, address);
        check(cublasLt_h.cublasLtMatmulDescSetAttribute(operation, cublasLt_h.CUBLASLT_MATMUL_DESC_BIAS_POINTER(),
                value, JAVA_LONG.byteSize()), "cublasLtMatmulDescSetAttribute", "BIAS_POINTER");
    }

    /**
     * The heuristic's best algorithm for the described matmul on the current device of {@code device},
     * within {@code maxWorkspaceBytes} and for pointers aligned to {@code alignment} bytes.
     *
     * @throws CublasException if cuBLASLt has no algorithm for it ({@code CUBLAS_STATUS_NOT_SUPPORTED})
     */
    public static Algorithm heuristic(int device, MemorySegment handle, MemorySegment operation, MemorySegment a,
            MemorySegment b, MemorySegment c, MemorySegment d, long maxWorkspaceBytes, int alignment,
            String description) {
        Devices.use(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(cublasLt_h.cublasLtMatmulPreferenceCreate(out), "cublasLtMatmulPreferenceCreate", null);
            MemorySegment preference = out.get(ADDRESS, 0);
            try {
                setPreference(arena, preference, cublasLt_h.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES(),
                        arena.allocateFrom(JAVA_LONG, maxWorkspaceBytes), "MAX_WORKSPACE_BYTES");
                for (int attribute : new int[] {cublasLt_h.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES(),
                        cublasLt_h.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES(),
                        cublasLt_h.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES(),
                        cublasLt_h.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES()}) {
                    setPreference(arena, preference, attribute, arena.allocateFrom(JAVA_INT, alignment),
                            "MIN_ALIGNMENT");
                }
                MemorySegment result = cublasLtMatmulHeuristicResult_t.allocate(arena);
                MemorySegment count = arena.allocate(JAVA_INT);
                check(cublasLt_h.cublasLtMatmulAlgoGetHeuristic(handle, operation, a, b, c, d, preference, 1, result,
                        count), "cublasLtMatmulAlgoGetHeuristic", description);
                int state = cublasLtMatmulHeuristicResult_t.state(result);
                if (count.get(JAVA_INT, 0) < 1 || state != SUCCESS) {
                    int status = count.get(JAVA_INT, 0) < 1 ? NOT_SUPPORTED : state;
                    throw failure("cublasLtMatmulAlgoGetHeuristic", status, "no algorithm for " + description);
                }
                MemorySegment algo = Arena.global().allocate(cublasLtMatmulAlgo_t.layout());
                algo.copyFrom(cublasLtMatmulHeuristicResult_t.algo(result));
                return new Algorithm(algo, cublasLtMatmulHeuristicResult_t.workspaceSize(result),
                        cublasLtMatmulHeuristicResult_t.wavesCount(result));
            } finally {
                check(cublasLt_h.cublasLtMatmulPreferenceDestroy(preference), "cublasLtMatmulPreferenceDestroy", null);
            }
        }
    }

    /** {@code CUBLAS_STATUS_NOT_SUPPORTED}: what an empty heuristic answer means. */
    private static final int NOT_SUPPORTED = 15;

    /**
     * Queues {@code D = alpha op(A) op(B) + beta C}, then the operation's epilogue, on {@code stream}
     * with {@code device} current; {@code description} names the product in an error, and is
     * formatted only then.
     */
    public static void matmul(int device, MemorySegment handle, MemorySegment operation, float alpha, long a,
            MemorySegment aLayout, long b, MemorySegment bLayout, float beta, long c, MemorySegment cLayout, long d,
            MemorySegment dLayout, Algorithm algorithm, long workspace, long workspaceBytes, MemorySegment stream,
            Arena arena, Object description) {
        HostFunctions.refuseInCallback("cublasLtMatmul");
        Devices.use(device);
        int status = cublasLt_h.cublasLtMatmul(handle, operation, arena.allocateFrom(JAVA_FLOAT, alpha),
                MemorySegment.ofAddress(a), aLayout, MemorySegment.ofAddress(b), bLayout,
                arena.allocateFrom(JAVA_FLOAT, beta), MemorySegment.ofAddress(c), cLayout, MemorySegment.ofAddress(d),
                dLayout, algorithm.algo(), MemorySegment.ofAddress(workspace), workspaceBytes, stream);
        if (status != SUCCESS) {
            throw failure("cublasLtMatmul", status, String.valueOf(description));
        }
    }

    private static void setInt(Arena arena, MemorySegment operation, int attribute, int value, String name) {
        check(cublasLt_h.cublasLtMatmulDescSetAttribute(operation, attribute, arena.allocateFrom(JAVA_INT, value),
                JAVA_INT.byteSize()), "cublasLtMatmulDescSetAttribute", name);
    }

    private static void setPreference(Arena arena, MemorySegment preference, int attribute, MemorySegment value,
            String name) {
        check(cublasLt_h.cublasLtMatmulPreferenceSetAttribute(preference, attribute, value, value.byteSize()),
                "cublasLtMatmulPreferenceSetAttribute", name);
    }

    private static void check(int status, String function, String context) {
        if (status != SUCCESS) {
            throw failure(function, status, context);
        }
    }

    private static CublasException failure(String function, int status, String context) {
        return new CublasException(function, status, cString(cublasLt_h.cublasLtGetStatusName(status), status),
                cString(cublasLt_h.cublasLtGetStatusString(status), status), context);
    }

    private static String cString(MemorySegment text, int status) {
        return text.equals(MemorySegment.NULL) ? "cublasStatus_t " + status : text.reinterpret(Long.MAX_VALUE).getString(0);
    }
}
