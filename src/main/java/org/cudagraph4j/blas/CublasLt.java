package org.cudagraph4j.blas;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;

/**
 * A cuBLASLt handle on one device, with a workspace, which plans matrix products and runs them.
 * cuBLASLt ({@code libcublasLt.so.13}) is an optional part of the library, as NVRTC is: it is
 * opened on the first {@link #create}, found the way the runtime is (the property
 * {@code org.cudagraph4j.cublaslt.path}, {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64}, the
 * dynamic loader, {@code /usr/local/cuda/lib64}), and its absence is one
 * {@link org.cudagraph4j.error.CudaRuntimeNotFoundException} listing what was tried; nothing else in
 * the library needs it.
 *
 * <p>{@link #plan(Matmul)} asks cuBLASLt's heuristic for an algorithm once per product and
 * workspace size, and the handle remembers the choice, so that every later plan of the same
 * product reuses it. A matmul allocates nothing when it runs, so it can be captured into a graph;
 * the graph keeps its buffers and workspace alive, and {@code describe()} draws its kernels by
 * name.
 *
 * {@snippet :
 * try (CublasLt lt = CublasLt.create(device);
 *      MatmulPlan plan = lt.plan(linear)) {     // a Matmul, see there
 *     plan.run(stream, x, weight, y, bias);
 * }
 * }
 *
 * <p>Thread safety: safe to share. Plans made without a workspace of their own share the handle's
 * workspace, so their matmuls must run in one order on the device: the handle's workspace serves
 * the first stream a matmul runs on through it, and a matmul on another stream is refused
 * ({@link IllegalStateException}) rather than left to race it. Give each stream a handle of its own
 * (a serving lane, say), or plans with their own workspace. {@link #close()} must not race the
 * handle's use.
 */
public final class CublasLt implements AutoCloseable {
    /** The workspace a handle gets by default, as PyTorch gives cuBLASLt on Hopper: 32 MiB. */
    public static final long DEFAULT_WORKSPACE_BYTES = 32L << 20;

    private final CudaDevice device;
    private final MemorySegment handle;
    private final DeviceBuffer workspace;
    private final Map<AlgorithmKey, org.cudagraph4j.internal.CublasLt.Algorithm> algorithms = new ConcurrentHashMap<>();
    private final Set<MatmulPlan> plans = ConcurrentHashMap.newKeySet();
    private final Map<Matmul, MatmulPlan> kept = new ConcurrentHashMap<>();
    /** The stream the handle's workspace serves: the first one a matmul ran on through it. */
    private final AtomicLong workspaceStream = new AtomicLong();
    private volatile boolean closed;

    private record AlgorithmKey(Matmul matmul, long workspaceBytes) {}

    private CublasLt(CudaDevice device, MemorySegment handle, DeviceBuffer workspace) {
        this.device = device;
        this.handle = handle;
        this.workspace = workspace;
    }

    /**
     * Opens cuBLASLt if needed and creates a handle on {@code device} with a workspace of
     * {@value #DEFAULT_WORKSPACE_BYTES} bytes.
     *
     * @param device the device whose products this handle plans and runs
     * @return the handle
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException if {@code libcublasLt.so.13} is not found,
     *     listing every place tried
     * @throws org.cudagraph4j.error.CublasException if cuBLASLt cannot create a handle
     */
    public static CublasLt create(CudaDevice device) {
        return create(device, DEFAULT_WORKSPACE_BYTES);
    }

    /**
     * Creates a handle with a workspace of {@code workspaceBytes}; 0 restricts plans without a workspace of their
     * own to algorithms that need none.
     *
     * @param device the device whose products this handle plans and runs
     * @param workspaceBytes the workspace's size, at least 0
     * @return the handle
     * @throws IllegalArgumentException if {@code workspaceBytes} is negative
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException if {@code libcublasLt.so.13} is not found
     * @throws org.cudagraph4j.error.CublasException if cuBLASLt cannot create a handle
     */
    public static CublasLt create(CudaDevice device, long workspaceBytes) {
        Objects.requireNonNull(device, "device");
        if (workspaceBytes < 0) {
            throw new IllegalArgumentException("workspaceBytes must be at least 0, got " + workspaceBytes);
        }
        MemorySegment handle = org.cudagraph4j.internal.CublasLt.create(device.ordinal());
        try {
            DeviceBuffer workspace = workspaceBytes == 0 ? null : device.allocate(ElementType.INT8, workspaceBytes);
            return new CublasLt(device, handle, workspace);
        } catch (RuntimeException e) {
            org.cudagraph4j.internal.CublasLt.destroy(handle);
            throw e;
        }
    }

    /**
     * {@return cuBLASLt's version, e.g. 130000 for 13.0.0; opens it if needed}
     *
     * @throws org.cudagraph4j.error.CudaRuntimeNotFoundException if {@code libcublasLt.so.13} is not found
     */
    public static long version() {
        return org.cudagraph4j.internal.CublasLt.version();
    }

    /** {@return the device this handle plans and runs on} */
    public CudaDevice device() {
        return device;
    }

    /** {@return the bytes of the handle's workspace} */
    public long workspaceBytes() {
        return workspace == null ? 0 : workspace.byteSize();
    }

    /**
     * Plans {@code matmul} on the handle's workspace: cuBLASLt's descriptors, and the heuristic's
     * algorithm, asked once per product and reused.
     *
     * @param matmul the product
     * @return a plan, closed by its {@code close()} or with this handle
     * @throws org.cudagraph4j.error.CublasException if cuBLASLt has no algorithm for the product on this device
     *     ({@code CUBLAS_STATUS_NOT_SUPPORTED}), e.g. {@link MatmulCompute#FP32_EMULATED_BF16X9} before Blackwell
     * @throws IllegalStateException if this handle is closed
     */
    public MatmulPlan plan(Matmul matmul) {
        return plan(matmul, workspace, false);
    }

    /**
     * Plans {@code matmul} on a workspace of the caller's, which the heuristic's choice fits in: a
     * plan of its own for a stream of its own.
     *
     * @param matmul the product
     * @param workspace device memory of any type on this handle's device, which stays the caller's; its
     *     matmuls must run in one order on the device
     * @return a plan, closed by its {@code close()} or with this handle
     * @throws IllegalArgumentException if {@code workspace} is on another device
     * @throws org.cudagraph4j.error.CublasException if cuBLASLt has no algorithm for the product on this device
     * @throws IllegalStateException if this handle or the workspace is closed
     */
    public MatmulPlan plan(Matmul matmul, DeviceBuffer workspace) {
        Objects.requireNonNull(workspace, "workspace");
        if (!workspace.device().equals(device)) {
            throw new IllegalArgumentException("the workspace " + workspace + " is on " + workspace.device()
                    + ", this handle on " + device);
        }
        workspace.address(); // open
        return plan(matmul, workspace, false);
    }

    /**
     * Runs {@code matmul} through a plan this handle keeps for it (made on first use, on the
     * handle's workspace): {@code D = epilogue(op(A) op(B) [+ bias])}.
     *
     * @param stream the stream to queue it on, of this handle's device
     * @param matmul the product
     * @param a A, as {@code matmul} lays it out
     * @param b B
     * @param d D
     * @param bias the bias when the epilogue has one, else {@code null}
     * @throws IllegalArgumentException as {@link MatmulPlan#run(CudaStream, float, DeviceBuffer, DeviceBuffer, float,
     *     DeviceBuffer, DeviceBuffer, DeviceBuffer)}
     * @throws org.cudagraph4j.error.CublasException if cuBLASLt has no algorithm for it, or fails
     */
    public void matmul(CudaStream stream, Matmul matmul, DeviceBuffer a, DeviceBuffer b, DeviceBuffer d,
            DeviceBuffer bias) {
        Objects.requireNonNull(matmul, "matmul");
        ensureOpen();
        kept.computeIfAbsent(matmul, product -> plan(product, workspace, true))
                .run(stream, 1f, a, b, 0f, null, d, bias);
    }

    private MatmulPlan plan(Matmul matmul, DeviceBuffer workspace, boolean keptByHandle) {
        Objects.requireNonNull(matmul, "matmul");
        synchronized (this) {
            ensureOpen();
            MatmulPlan plan = new MatmulPlan(this, matmul, workspace, keptByHandle);
            plans.add(plan);
            return plan;
        }
    }

    /** The heuristic's algorithm for a plan's descriptors, asked once per product and workspace size. */
    org.cudagraph4j.internal.CublasLt.Algorithm algorithm(Matmul matmul, long workspaceBytes,
            MemorySegment operation, MemorySegment a, MemorySegment b, MemorySegment d) {
        return algorithms.computeIfAbsent(new AlgorithmKey(matmul, workspaceBytes),
                key -> org.cudagraph4j.internal.CublasLt.heuristic(device.ordinal(), handle, operation, a, b, d, d,
                        workspaceBytes, matmul.alignment(), matmul + " on " + device + " within " + workspaceBytes
                                + " bytes of workspace"));
    }

    MemorySegment handle() {
        return handle;
    }

    /**
     * Claims the handle's workspace for {@code stream}, the first time; later, refuses any other stream.
     *
     * @throws IllegalStateException if the workspace serves another stream
     */
    void claimWorkspace(CudaStream stream) {
        long address = stream.handle().address();
        long owner = workspaceStream.compareAndExchange(0, address);
        if (owner != 0 && owner != address) {
            throw new IllegalStateException("this cuBLASLt handle's workspace serves the stream at 0x"
                    + Long.toHexString(owner) + ", and a matmul on " + stream + " could overwrite it while that stream"
                    + " uses it: give each stream a CublasLt of its own, or plan with a workspace of its own");
        }
    }

    /** Whether {@code buffer} is this handle's own workspace. */
    boolean ownsWorkspace(DeviceBuffer buffer) {
        return buffer != null && buffer == workspace;
    }

    void forget(MatmulPlan plan) {
        plans.remove(plan);
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("this cuBLASLt handle on " + device + " is closed");
        }
    }

    /** {@return whether this handle is open} */
    public boolean isOpen() {
        return !closed;
    }

    /**
     * Closes every plan this handle made that is still open, destroys the handle and frees its
     * workspace; graphs captured from its matmuls keep the workspace alive. Idempotent.
     */
    @Override
    public void close() {
        // The monitor only marks the handle closed: plans made before that are in the set, and none
        // is made after. Closing the plans outside it leaves no lock held while a plan's is taken.
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (MatmulPlan plan : plans) {
            plan.closeFromHandle();
        }
        plans.clear();
        kept.clear();
        try {
            org.cudagraph4j.internal.CublasLt.destroy(handle);
        } finally {
            if (workspace != null) {
                workspace.close();
            }
        }
    }

    /** {@return e.g. {@code CublasLt[device 0, 33554432-byte workspace]}} */
    @Override
    public String toString() {
        return "CublasLt[" + device + ", " + workspaceBytes() + "-byte workspace" + (closed ? ", closed" : "") + "]";
    }
}
