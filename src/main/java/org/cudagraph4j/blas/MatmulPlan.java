package org.cudagraph4j.blas;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.GraphAccess;
import org.cudagraph4j.internal.CublasLt.Algorithm;
import org.cudagraph4j.internal.lifetime.CaptureTracker;
import org.cudagraph4j.internal.lifetime.GraphAllocations;
import org.cudagraph4j.internal.lifetime.Lifetime;

/**
 * One {@link Matmul} ready to run: cuBLASLt's descriptors, the heuristic's algorithm and the
 * workspace it runs in. A run checks its buffers against the product (type, length, device,
 * alignment, overlap) and queues one {@code cublasLtMatmul}; it allocates nothing, so a run on a
 * capturing stream goes into the graph, which keeps the buffers and the workspace alive.
 *
 * <p>cuBLASLt is column-major. A row-major D is computed as the column-major {@code Dᵀ = op(B)ᵀ op(A)ᵀ},
 * which reads the same bytes, so row-major operands cost nothing.
 *
 * <p>Thread safety: safe to share; runs from several threads are serialized on the host. Runs
 * through one workspace must still be ordered on the device (see {@link CublasLt}).
 */
public final class MatmulPlan implements AutoCloseable {
    private final CublasLt lt;
    private final Matmul matmul;
    private final DeviceBuffer workspace;
    private final boolean keptByHandle;
    /** Whether D is row-major, so that A and B trade places in cuBLASLt's column-major product. */
    private final boolean swapped;
    private final MemorySegment operation;
    private final MemorySegment first;
    private final MemorySegment second;
    private final MemorySegment output;
    private final Algorithm algorithm;
    private volatile boolean closed;

    MatmulPlan(CublasLt lt, Matmul matmul, DeviceBuffer workspace, boolean keptByHandle) {
        this.lt = lt;
        this.matmul = matmul;
        this.workspace = workspace;
        this.keptByHandle = keptByHandle;
        this.swapped = matmul.d().order() == MatrixLayout.Order.ROW_MAJOR;
        MatrixLayout firstLayout = swapped ? matmul.b() : matmul.a();
        MatrixLayout secondLayout = swapped ? matmul.a() : matmul.b();
        Matmul.Op firstOp = swapped ? matmul.opB() : matmul.opA();
        Matmul.Op secondOp = swapped ? matmul.opA() : matmul.opB();
        List<MemorySegment> made = new ArrayList<>();
        MemorySegment operationDescriptor = null;
        try {
            first = made(made, nativeLayout(firstLayout));
            second = made(made, nativeLayout(secondLayout));
            output = made(made, nativeLayout(matmul.d()));
            operationDescriptor = org.cudagraph4j.internal.CublasLt.createOperation(computeType(matmul.compute()),
                    nativeOp(firstOp, firstLayout), nativeOp(secondOp, secondLayout), epilogue(matmul.epilogue()),
                    matmul.epilogue().hasBias() ? dataType(matmul.d()) : -1, matmul);
            algorithm = lt.algorithm(matmul, workspace == null ? 0 : workspace.byteSize(), operationDescriptor, first,
                    second, output);
        } catch (RuntimeException e) {
            if (operationDescriptor != null) {
                org.cudagraph4j.internal.CublasLt.destroyOperation(operationDescriptor);
            }
            made.forEach(org.cudagraph4j.internal.CublasLt::destroyLayout);
            throw e;
        }
        this.operation = operationDescriptor;
    }

    private static MemorySegment made(List<MemorySegment> made, MemorySegment layout) {
        made.add(layout);
        return layout;
    }

    /** A row-major matrix read column-major is its transpose: the same bytes, rows and columns traded. */
    private static MemorySegment nativeLayout(MatrixLayout layout) {
        boolean rowMajor = layout.order() == MatrixLayout.Order.ROW_MAJOR;
        return org.cudagraph4j.internal.CublasLt.createLayout(dataType(layout),
                rowMajor ? layout.columns() : layout.rows(), rowMajor ? layout.rows() : layout.columns(),
                layout.leadingDimension());
    }

    /**
     * The transpose cuBLASLt applies to an operand's column-major reading: the one asked for,
     * flipped once if the operand is row-major (it reads as its transpose) and once more if D is
     * (the product is computed transposed).
     */
    private int nativeOp(Matmul.Op op, MatrixLayout layout) {
        boolean transpose = (op == Matmul.Op.TRANSPOSE) ^ (layout.order() == MatrixLayout.Order.ROW_MAJOR) ^ swapped;
        return transpose ? org.cudagraph4j.internal.CublasLt.OP_T : org.cudagraph4j.internal.CublasLt.OP_N;
    }

    private static int dataType(MatrixLayout layout) {
        return switch (layout.type()) {
            case FLOAT32 -> org.cudagraph4j.internal.CublasLt.R_32F;
            case FLOAT16 -> org.cudagraph4j.internal.CublasLt.R_16F;
            case BFLOAT16 -> org.cudagraph4j.internal.CublasLt.R_16BF;
            default -> throw new IllegalStateException("MatrixLayout admits no " + layout.type());
        };
    }

    private static int computeType(MatmulCompute compute) {
        return switch (compute) {
            case FP32 -> org.cudagraph4j.internal.CublasLt.COMPUTE_32F;
            case FP32_FAST_TF32 -> org.cudagraph4j.internal.CublasLt.COMPUTE_32F_FAST_TF32;
            case FP32_FAST_BF16 -> org.cudagraph4j.internal.CublasLt.COMPUTE_32F_FAST_16BF;
            case FP32_FAST_FP16 -> org.cudagraph4j.internal.CublasLt.COMPUTE_32F_FAST_16F;
            case FP32_EMULATED_BF16X9 -> org.cudagraph4j.internal.CublasLt.COMPUTE_32F_EMULATED_16BFX9;
        };
    }

    private static int epilogue(MatmulEpilogue epilogue) {
        return switch (epilogue) {
            case NONE -> org.cudagraph4j.internal.CublasLt.EPILOGUE_DEFAULT;
            case RELU -> org.cudagraph4j.internal.CublasLt.EPILOGUE_RELU;
            case BIAS -> org.cudagraph4j.internal.CublasLt.EPILOGUE_BIAS;
            case RELU_BIAS -> org.cudagraph4j.internal.CublasLt.EPILOGUE_RELU_BIAS;
            case GELU -> org.cudagraph4j.internal.CublasLt.EPILOGUE_GELU;
            case GELU_BIAS -> org.cudagraph4j.internal.CublasLt.EPILOGUE_GELU_BIAS;
        };
    }

    /** {@return the product this plan runs} */
    public Matmul matmul() {
        return matmul;
    }

    /** {@return the workspace bytes the chosen algorithm uses, at most its workspace's size} */
    public long workspaceBytes() {
        return algorithm.workspaceBytes();
    }

    /** {@return the heuristic's estimate of how many waves of the GPU one run fills; 1 fills it once} */
    public float waves() {
        return algorithm.waves();
    }

    /**
     * Queues {@code D = epilogue(op(A) op(B))} for an epilogue without a bias.
     *
     * @param stream the stream, of the handle's device
     * @param a A
     * @param b B
     * @param d D
     * @throws IllegalArgumentException as {@link #run(CudaStream, float, DeviceBuffer, DeviceBuffer, float,
     *     DeviceBuffer, DeviceBuffer, DeviceBuffer)}, and if the epilogue needs a bias
     */
    public void run(CudaStream stream, DeviceBuffer a, DeviceBuffer b, DeviceBuffer d) {
        run(stream, 1f, a, b, 0f, null, d, null);
    }

    /**
     * Queues {@code D = epilogue(op(A) op(B) + bias)}.
     *
     * @param stream the stream, of the handle's device
     * @param a A
     * @param b B
     * @param d D
     * @param bias {@link Matmul#biasLength()} elements of D's type when the epilogue has a bias, else {@code null}
     * @throws IllegalArgumentException as {@link #run(CudaStream, float, DeviceBuffer, DeviceBuffer, float,
     *     DeviceBuffer, DeviceBuffer, DeviceBuffer)}
     */
    public void run(CudaStream stream, DeviceBuffer a, DeviceBuffer b, DeviceBuffer d, DeviceBuffer bias) {
        run(stream, 1f, a, b, 0f, null, d, bias);
    }

    /**
     * Queues {@code D = epilogue(alpha op(A) op(B) + beta C [+ bias])} on {@code stream}.
     *
     * @param stream the stream, of the handle's device
     * @param alpha the product's scale
     * @param a A, of the product's input type, holding at least A's {@link MatrixLayout#span() span}
     * @param b B, likewise
     * @param beta C's scale; 0 leaves C unread
     * @param c C, laid out as D: D itself, a buffer that does not overlap D, or {@code null} when {@code beta} is 0
     * @param d D, of D's type; must not overlap A, B or the bias
     * @param bias {@link Matmul#biasLength()} elements of D's type when the epilogue has a bias, else {@code null}
     * @throws IllegalArgumentException naming the operand, if one has the wrong type, is too short, lies on
     *     another device than the handle, is less aligned than the product says, or overlaps D; if the bias is
     *     missing or given without a bias epilogue; if C is missing while {@code beta} is not 0; or if the
     *     stream is on another device
     * @throws IllegalStateException if the plan, its handle, the stream or a buffer is closed, a buffer is
     *     graph memory of another graph than the one the stream captures into, or the plan runs in the handle's
     *     workspace and that serves another stream
     * @throws org.cudagraph4j.error.CublasException if cuBLASLt fails
     */
    public void run(CudaStream stream, float alpha, DeviceBuffer a, DeviceBuffer b, float beta, DeviceBuffer c,
            DeviceBuffer d, DeviceBuffer bias) {
        Objects.requireNonNull(stream, "stream");
        ensureOpen();
        if (!stream.device().equals(lt.device())) {
            throw new IllegalArgumentException(stream + " is on " + stream.device() + ", the plan's handle on "
                    + lt.device());
        }
        check("A", a, matmul.a().type(), matmul.a().span());
        check("B", b, matmul.b().type(), matmul.b().span());
        check("D", d, matmul.d().type(), matmul.d().span());
        if (beta != 0f) {
            if (c == null) {
                throw new IllegalArgumentException("beta is " + beta + ", so C must be given");
            }
            check("C", c, matmul.d().type(), matmul.d().span());
            if (c != d && overlaps(c, d) && !(c.allocation() == d.allocation() && c.byteOffset() == d.byteOffset())) {
                throw new IllegalArgumentException("C must be D itself or not overlap it");
            }
        }
        if (matmul.epilogue().hasBias()) {
            if (bias == null) {
                throw new IllegalArgumentException(matmul.epilogue() + " reads a bias, and none was given");
            }
            check("bias", bias, matmul.d().type(), matmul.biasLength());
        } else if (bias != null) {
            throw new IllegalArgumentException("a bias was given, but the epilogue " + matmul.epilogue()
                    + " reads none: use BIAS, RELU_BIAS or GELU_BIAS");
        }
        for (var operand : List.of(new Named("A", a), new Named("B", b), new Named("bias", bias))) {
            if (operand.buffer() != null && overlaps(operand.buffer(), d)) {
                throw new IllegalArgumentException("D overlaps " + operand.name() + ": cuBLASLt reads it while D is"
                        + " written");
            }
        }
        if (lt.ownsWorkspace(workspace)) {
            lt.claimWorkspace(stream);
        }
        GraphAccess access = GraphAccess.get();
        CaptureTracker.Slot slot = access.captureSlot(stream);
        MemorySegment streamHandle = stream.handle();
        synchronized (this) {
            ensureOpen();
            CaptureTracker.Capture<?> capture = CaptureTracker.of(slot);
            List<DeviceBuffer> used = new ArrayList<>(List.of(a, b, d));
            if (beta != 0f) {
                used.add(c);
            }
            if (bias != null) {
                used.add(bias);
            }
            if (workspace != null) {
                used.add(workspace);
            }
            for (DeviceBuffer buffer : used) {
                GraphAllocations owner = access.graphMemoryOf(buffer);
                if (owner != null && (capture == null || capture.allocations() != owner)) {
                    throw new IllegalStateException(buffer + " exists only inside its own graph, but " + stream
                            + (capture == null ? " is not capturing" : " is capturing into another graph"));
                }
            }
            try (Arena arena = Arena.ofConfined()) {
                if (bias != null) {
                    org.cudagraph4j.internal.CublasLt.setBias(operation, bias.address(), arena);
                }
                DeviceBuffer firstBuffer = swapped ? b : a;
                DeviceBuffer secondBuffer = swapped ? a : b;
                long source = beta != 0f ? c.address() : d.address();
                if (capture == null) {
                    queue(alpha, firstBuffer, secondBuffer, beta, source, d, streamHandle, arena);
                    return;
                }
                List<Lifetime> lifetimes = used.stream().map(access::lifetime).toList();
                synchronized (slot) {
                    queue(alpha, firstBuffer, secondBuffer, beta, source, d, streamHandle, arena);
                    capture.use(lifetimes);
                }
            }
        }
    }

    private record Named(String name, DeviceBuffer buffer) {}

    private void queue(float alpha, DeviceBuffer firstBuffer, DeviceBuffer secondBuffer, float beta, long source,
            DeviceBuffer d, MemorySegment stream, Arena arena) {
        org.cudagraph4j.internal.CublasLt.matmul(lt.device().ordinal(), lt.handle(), operation, alpha,
                firstBuffer.address(), first, secondBuffer.address(), second, beta, source, output, d.address(), output,
                algorithm, workspace == null ? 0 : workspace.address(), algorithm.workspaceBytes(), stream, arena,
                matmul);
    }

    private void check(String name, DeviceBuffer buffer, org.cudagraph4j.ElementType type, long elements) {
        Objects.requireNonNull(buffer, name);
        if (buffer.elementType() != type) {
            throw new IllegalArgumentException(name + " must hold " + type + ", not " + buffer.elementType()
                    + " (" + matmul + ")");
        }
        if (buffer.length() < elements) {
            throw new IllegalArgumentException(name + " needs " + elements + " elements but " + buffer + " has "
                    + buffer.length());
        }
        if (!buffer.device().equals(lt.device())) {
            throw new IllegalArgumentException(name + " " + buffer + " is on " + buffer.device()
                    + ", the plan's handle on " + lt.device());
        }
        if (buffer.address() % matmul.alignment() != 0) {
            throw new IllegalArgumentException(name + " " + buffer + " is not aligned to the " + matmul.alignment()
                    + " bytes the plan was chosen for: plan a Matmul.withAlignment(bytes) that its address meets");
        }
    }

    private static boolean overlaps(DeviceBuffer x, DeviceBuffer y) {
        if (x.allocation() != y.allocation()) {
            return false;
        }
        return x.byteOffset() < y.byteOffset() + y.byteSize() && y.byteOffset() < x.byteOffset() + x.byteSize();
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("this plan of " + matmul + " is closed");
        }
        lt.ensureOpen();
    }

    /** Destroys the plan's descriptors; graphs captured from its runs do not need them. Idempotent. */
    @Override
    public void close() {
        if (keptByHandle) {
            return; // the handle closes the plans it keeps
        }
        if (closeFromHandle()) {
            lt.forget(this);
        }
    }

    /** Closes the plan; true if this call closed it. */
    synchronized boolean closeFromHandle() {
        if (closed) {
            return false;
        }
        closed = true;
        org.cudagraph4j.internal.CublasLt.destroyOperation(operation);
        org.cudagraph4j.internal.CublasLt.destroyLayout(first);
        org.cudagraph4j.internal.CublasLt.destroyLayout(second);
        org.cudagraph4j.internal.CublasLt.destroyLayout(output);
        return true;
    }

    /** {@return the product and the workspace it uses} */
    @Override
    public String toString() {
        return "MatmulPlan[" + matmul + ", " + algorithm.workspaceBytes() + "-byte workspace" + (closed ? ", closed" : "")
                + "]";
    }
}
