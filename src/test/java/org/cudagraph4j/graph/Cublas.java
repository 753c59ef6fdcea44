package org.cudagraph4j.graph;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;

/**
 * Another library's kernels for the gpu tests: cuBLAS ({@code libcublas.so.13}), called through
 * a few FFM downcalls of the tests' own, as a server that uses cuBLAS beside cudagraph4j would.
 * cuBLAS loads its kernels through the driver, so the runtime cannot name their graph nodes.
 */
final class Cublas implements AutoCloseable {
    private static final String SONAME = "libcublas.so.13";
    private static final int OP_N = 0;
    private static final int OP_T = 1;
    private static final Optional<SymbolLookup> LIBRARY = open();
    private static final Linker LINKER = Linker.nativeLinker();

    private final MemorySegment handle;
    private final DeviceBuffer workspace;

    private Cublas(MemorySegment handle, DeviceBuffer workspace) {
        this.handle = handle;
        this.workspace = workspace;
    }

    /** {@return where cuBLAS was looked for, for the message of a test that cannot run without it} */
    static String searched() {
        return "org.cudagraph4j.test.cublas, $CUDA_HOME/lib64, /usr/local/cuda/lib64, then " + SONAME
                + " through the dynamic loader";
    }

    static boolean isAvailable() {
        return LIBRARY.isPresent();
    }

    /**
     * A cuBLAS handle queuing on {@code stream}, with {@code workspace} as its workspace, so that
     * its GEMMs allocate nothing and can be captured; FP32 math without TF32.
     */
    static Cublas create(CudaStream stream, DeviceBuffer workspace) {
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(call("cublasCreate_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS), out), "cublasCreate_v2");
            handle = out.get(ADDRESS, 0);
        }
        Cublas cublas = new Cublas(handle, workspace);
        cublas.setStream(stream.handle());
        check(call("cublasSetMathMode", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), handle, 0),
                "cublasSetMathMode");
        return cublas;
    }

    /**
     * Makes later GEMMs queue on {@code stream}, a {@code cudaStream_t}, with the workspace given at
     * creation ({@code cublasSetStream} resets the workspace to cuBLAS's own pool, which would
     * allocate during a capture).
     */
    void setStream(MemorySegment stream) {
        check(call("cublasSetStream_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), handle, stream),
                "cublasSetStream_v2");
        check(call("cublasSetWorkspace_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG), handle,
                workspace.handle(), workspace.byteSize()), "cublasSetWorkspace_v2");
    }

    /**
     * {@code y = x·Wᵀ}, row-major, as {@code torch.nn.Linear} computes it without its bias: x is
     * [batch, in], W [out, in], y [batch, out]. Column-major, that is {@code yᵀ = Wᵀᵀ·xᵀ}: W read
     * transposed.
     */
    void linear(int batch, int in, int out, DeviceBuffer x, DeviceBuffer weight, DeviceBuffer y) {
        linear(batch, in, out, x.address(), weight.address(), y.address());
    }

    /** {@link #linear(int, int, int, DeviceBuffer, DeviceBuffer, DeviceBuffer)} on raw device addresses. */
    void linear(int batch, int in, int out, long x, long weight, long y) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocateFrom(JAVA_FLOAT, 1f);
            MemorySegment zero = arena.allocateFrom(JAVA_FLOAT, 0f);
            check(call("cublasSgemm_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT,
                    JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT),
                    handle, OP_T, OP_N, out, batch, in, one, MemorySegment.ofAddress(weight), in,
                    MemorySegment.ofAddress(x), in, zero, MemorySegment.ofAddress(y), out), "cublasSgemm_v2");
        }
    }

    @Override
    public void close() {
        check(call("cublasDestroy_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS), handle), "cublasDestroy_v2");
    }

    private static int call(String function, FunctionDescriptor descriptor, Object... arguments) {
        MethodHandle downcall = LINKER.downcallHandle(LIBRARY.orElseThrow().find(function)
                .orElseThrow(() -> new AssertionError(SONAME + " has no " + function)), descriptor);
        try {
            return (int) downcall.invokeWithArguments(arguments);
        } catch (Throwable e) {
            throw new AssertionError(function + " threw", e);
        }
    }

    private static void check(int status, String function) {
        assertEquals(0, status, function + " returned cublasStatus_t " + status);
    }

    private static Optional<SymbolLookup> open() {
        List<String> candidates = new ArrayList<>();
        String property = System.getProperty("org.cudagraph4j.test.cublas");
        if (property != null) {
            candidates.add(property);
        }
        String cudaHome = System.getenv("CUDA_HOME");
        if (cudaHome != null) {
            candidates.add(cudaHome + "/lib64/" + SONAME);
        }
        candidates.add("/usr/local/cuda/lib64/" + SONAME);
        for (String candidate : candidates) {
            if (Files.isRegularFile(Path.of(candidate))) {
                return Optional.of(SymbolLookup.libraryLookup(Path.of(candidate), Arena.global()));
            }
        }
        try {
            return Optional.of(SymbolLookup.libraryLookup(SONAME, Arena.global()));
        } catch (IllegalArgumentException notFound) {
            return Optional.empty();
        }
    }
}
