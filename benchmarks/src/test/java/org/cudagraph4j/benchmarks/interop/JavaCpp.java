package org.cudagraph4j.benchmarks.interop;

import static org.bytedeco.cuda.global.cublas.CUBLAS_DEFAULT_MATH;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.cublasCreate_v2;
import static org.bytedeco.cuda.global.cublas.cublasDestroy_v2;
import static org.bytedeco.cuda.global.cublas.cublasGetStatusName;
import static org.bytedeco.cuda.global.cublas.cublasSetMathMode;
import static org.bytedeco.cuda.global.cublas.cublasSetStream_v2;
import static org.bytedeco.cuda.global.cublas.cublasSetWorkspace_v2;
import static org.bytedeco.cuda.global.cublas.cublasSgemm_v2;
import static org.bytedeco.cuda.global.cudart.cudaFree;
import static org.bytedeco.cuda.global.cudart.cudaGetErrorName;
import static org.bytedeco.cuda.global.cudart.cudaMalloc;
import static org.bytedeco.cuda.global.cudart.cudaMemcpy;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyDeviceToHost;
import static org.bytedeco.cuda.global.cudart.cudaMemcpyHostToDevice;
import static org.bytedeco.cuda.global.cudart.cudaSetDevice;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;

/**
 * What an application that already uses JavaCPP's CUDA presets ({@code org.bytedeco:cuda}) holds:
 * its {@code cudaStream_t}s, its {@code cudaMalloc} memory and a cuBLAS handle, reached through
 * JNI and the system's {@code libcudart.so.13} and {@code libcublas.so.13}. Every status is
 * checked, named by the function that returned it.
 */
final class JavaCpp {
    private JavaCpp() {}

    /** A raw address as a JavaCPP pointer that owns nothing: the GC frees nothing through it. */
    private static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }

    /** {@code handle}, a {@code cudaStream_t} of cudagraph4j, as JavaCPP's {@code cudaStream_t}. */
    static CUstream_st stream(MemorySegment handle) {
        return new CUstream_st(new Address(handle.address()));
    }

    /** JavaCPP's {@code cudaStream_t} as the segment {@code CudaStream.borrow} takes. */
    static MemorySegment handle(CUstream_st stream) {
        return MemorySegment.ofAddress(stream.address());
    }

    /** A device address as the {@code float*} that cuBLAS takes. */
    static FloatPointer floats(long deviceAddress) {
        return new FloatPointer(new Address(deviceAddress));
    }

    static void checkCuda(int status, String function) {
        assertEquals(0, status, () -> function + ": " + cudaGetErrorName(status).getString() + " (" + status + ")");
    }

    static void checkCublas(int status, String function) {
        assertEquals(0, status, () -> function + ": " + cublasGetStatusName(status).getString() + " (" + status + ")");
    }

    /** Makes {@code ordinal} current for JavaCPP's calls on this thread, as cudagraph4j does for its own. */
    static void useDevice(int ordinal) {
        checkCuda(cudaSetDevice(ordinal), "cudaSetDevice");
    }

    /** Copies {@code values} to device memory through JavaCPP ({@code cudaMemcpy}, host to device). */
    static void upload(Pointer device, float[] values) {
        try (FloatPointer host = new FloatPointer(values)) {
            checkCuda(cudaMemcpy(device, host, 4L * values.length, cudaMemcpyHostToDevice), "cudaMemcpy");
        }
    }

    /** Reads {@code length} floats of device memory through JavaCPP ({@code cudaMemcpy}, device to host). */
    static float[] download(Pointer device, int length) {
        float[] values = new float[length];
        try (FloatPointer host = new FloatPointer(length)) {
            checkCuda(cudaMemcpy(host, device, 4L * length, cudaMemcpyDeviceToHost), "cudaMemcpy");
            host.get(values);
        }
        return values;
    }

    /**
     * Device memory from JavaCPP's {@code cudaMalloc}, freed with {@code cudaFree} by {@link #free()},
     * whose statuses are checked, or by {@link #close()} after a failure, whose statuses are not
     * (a test that already failed should report its own failure).
     */
    static final class Allocations implements AutoCloseable {
        private final List<Pointer> live = new ArrayList<>();

        Pointer malloc(long byteSize) {
            Pointer pointer = new Pointer();
            checkCuda(cudaMalloc(pointer, byteSize), "cudaMalloc");
            live.add(pointer);
            return pointer;
        }

        void free() {
            while (!live.isEmpty()) {
                checkCuda(cudaFree(live.removeLast()), "cudaFree");
            }
        }

        @Override
        public void close() {
            while (!live.isEmpty()) {
                cudaFree(live.removeLast());
            }
        }
    }

    /**
     * A cuBLAS handle made through JavaCPP, with a workspace of the caller's, so that its GEMMs
     * allocate nothing and can be captured; FP32 math ({@code CUBLAS_DEFAULT_MATH}: no TF32, whose
     * 10-bit mantissa the tests' 1e-5 bound would catch).
     */
    static final class Cublas implements AutoCloseable {
        private final cublasContext handle = new cublasContext();
        private final Pointer workspace;
        private final long workspaceBytes;
        private final FloatPointer one = new FloatPointer(1f);
        private final FloatPointer zero = new FloatPointer(0f);
        private boolean created;

        /**
         * Creates the handle on the current device of this thread and makes it queue on
         * {@code stream}.
         */
        Cublas(CUstream_st stream, long workspaceAddress, long workspaceBytes) {
            this.workspace = new Address(workspaceAddress);
            this.workspaceBytes = workspaceBytes;
            try {
                checkCublas(cublasCreate_v2(handle), "cublasCreate_v2");
                created = true;
                checkCublas(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
                setStream(stream);
            } catch (RuntimeException | Error e) {
                close();
                throw e;
            }
        }

        /**
         * Makes later GEMMs queue on {@code stream}. {@code cublasSetStream} puts cuBLAS back on its
         * own workspace pool, which would allocate inside a capture, so the caller's is set again.
         */
        void setStream(CUstream_st stream) {
            checkCublas(cublasSetStream_v2(handle, stream), "cublasSetStream_v2");
            checkCublas(cublasSetWorkspace_v2(handle, workspace, workspaceBytes), "cublasSetWorkspace_v2");
        }

        /**
         * {@code y = x·Wᵀ}, row-major, as {@code torch.nn.Linear} computes it before its bias: x
         * [batch, in], W [out, in], y [batch, out]. cuBLAS is column-major, where these are xᵀ
         * [in, batch], Wᵀ [in, out] and yᵀ [out, batch], each with its row length as leading
         * dimension; so the column-major product is {@code yᵀ = op(Wᵀ)·xᵀ} with op transposing:
         * m = out, n = batch, k = in.
         */
        void linear(int batch, int in, int out, long x, long weight, long y) {
            checkCublas(cublasSgemm_v2(handle, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, one, floats(weight), in,
                    floats(x), in, zero, floats(y), out), "cublasSgemm_v2");
        }

        @Override
        public void close() {
            try (one; zero) {
                if (created) {
                    created = false;
                    checkCublas(cublasDestroy_v2(handle), "cublasDestroy_v2");
                }
            }
        }
    }
}
