package org.cudagraph4j.kernels;

import java.util.Objects;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.blas.CublasLt;
import org.cudagraph4j.blas.Matmul;
import org.cudagraph4j.blas.MatmulCompute;
import org.cudagraph4j.blas.MatmulEpilogue;
import org.cudagraph4j.blas.MatrixLayout;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphBindings;

/**
 * {@code torch.nn.Linear} followed by ReLU: {@code y = relu(x * Wᵀ + b)}, with x [batch, in],
 * W [out, in] (row-major, as PyTorch stores it), b [out] and y [batch, out].
 *
 * <p>{@link Mode#FUSED} runs one sgemm kernel with the bias and ReLU in its epilogue;
 * {@link Mode#UNFUSED} runs the seed's two nodes: an sgemm, then the standalone bias+ReLU kernel
 * in place. Both can be captured into a graph.
 *
 * <p>With a {@link #withWorkspace(GemmWorkspace) workspace}, the fused kernel may split its K loop
 * over several blocks, which is what makes small batches fast; the result is the same bits on
 * every run either way. {@link #withProgrammaticDependentLaunch()} lets each layer's sgemm start
 * while the kernel before it is finishing (see {@link Sgemm#withProgrammaticDependentLaunch()}).
 *
 * <p>A layer's weight, bias, input and output hold one element type: FP32, or BF16 or FP16 for
 * the tensor cores. {@link #withCublasLt(CublasLt)} multiplies on cuBLASLt, with the bias and ReLU
 * in its epilogue ({@link Mode#FUSED}) or in the shipped epilogue kernel of the layer's type
 * ({@link Mode#UNFUSED}); BF16 and FP16 layers multiply only there. Either way every product
 * accumulates in FP32.
 *
 * <p>The layer refers to its weight, bias, workspace and cuBLASLt handle but does not own them. Thread safety:
 * immutable; safe to share, except that launches through one workspace must be ordered on the
 * device (see {@link GemmWorkspace}).
 */
public final class Linear {
    /** How the bias and ReLU are applied. */
    public enum Mode {
        /** One kernel: sgemm with a bias+ReLU epilogue. */
        FUSED,
        /** Two kernels, as in the seed's graph: sgemm, then bias+ReLU. */
        UNFUSED
    }

    /**
     * The most rows a fused half-precision forward gives the shipped GEMV by default: one. There it
     * was measured faster than cuBLASLt on an H200 at widths 512 and 1024; at eight rows cuBLASLt was
     * (kernels/PERFORMANCE.md, "Half precision").
     */
    public static final int DEFAULT_HALF_GEMV_MAX_BATCH = 1;

    private final ShippedKernels kernels;
    private final DeviceBuffer weight;
    private final DeviceBuffer bias;
    private final int inFeatures;
    private final int outFeatures;
    private final Dim3 epilogueGrid;
    private final GemmWorkspace workspace;
    private final boolean programmaticDependentLaunch;
    private final MathMode mathMode;
    private final CublasLt lt;
    private final ElementType type;
    /** The shipped half-precision GEMV for this layer's type; null for FP32. */
    private final HalfGemv gemv;
    /** The most rows a fused half-precision forward gives the shipped GEMV rather than cuBLASLt. */
    private final int halfGemvMaxBatch;

    /**
     * Creates a layer on weight and bias buffers that stay owned by the caller.
     *
     * @param kernels the loaded kernels to run on
     * @param weight [outFeatures, inFeatures] elements: FLOAT32, or FLOAT16 or BFLOAT16 for a layer that
     *     multiplies on {@linkplain #withCublasLt cuBLASLt}
     * @param bias [outFeatures] elements of the weight's type
     * @param inFeatures columns of x and of the weight, at least 1
     * @param outFeatures rows of the weight and columns of y, at least 1
     * @throws IllegalArgumentException if a feature count is below 1, the weight holds another type, the bias
     *     another type than the weight, or a buffer is too short
     * @throws NullPointerException if {@code kernels}, {@code weight} or {@code bias} is null
     */
    public Linear(ShippedKernels kernels, DeviceBuffer weight, DeviceBuffer bias, int inFeatures, int outFeatures) {
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        if (inFeatures < 1 || outFeatures < 1) {
            throw new IllegalArgumentException("Linear needs inFeatures, outFeatures >= 1, got " + inFeatures + ", "
                    + outFeatures);
        }
        Objects.requireNonNull(weight, "weight");
        this.type = weight.elementType();
        if (type != ElementType.FLOAT32 && type != ElementType.FLOAT16 && type != ElementType.BFLOAT16) {
            throw new IllegalArgumentException("weight must hold FLOAT32, FLOAT16 or BFLOAT16, not " + type);
        }
        MatrixChecks.requireElements("weight", weight, type, (long) outFeatures * inFeatures);
        MatrixChecks.requireElements("bias", bias, type, outFeatures);
        this.weight = weight;
        this.bias = bias;
        this.inFeatures = inFeatures;
        this.outFeatures = outFeatures;
        this.epilogueGrid = null;
        this.workspace = null;
        this.programmaticDependentLaunch = false;
        this.mathMode = MathMode.FP32;
        this.lt = null;
        this.gemv = type == ElementType.FLOAT32 ? null : kernels.halfGemv(type);
        this.halfGemvMaxBatch = gemv == null ? 0 : DEFAULT_HALF_GEMV_MAX_BATCH;
    }

    private Linear(Linear layer, Dim3 epilogueGrid, GemmWorkspace workspace, boolean programmaticDependentLaunch,
            MathMode mathMode, CublasLt lt) {
        this(layer, epilogueGrid, workspace, programmaticDependentLaunch, mathMode, lt, layer.halfGemvMaxBatch);
    }

    private Linear(Linear layer, Dim3 epilogueGrid, GemmWorkspace workspace, boolean programmaticDependentLaunch,
            MathMode mathMode, CublasLt lt, int halfGemvMaxBatch) {
        this.kernels = layer.kernels;
        this.weight = layer.weight;
        this.bias = layer.bias;
        this.inFeatures = layer.inFeatures;
        this.outFeatures = layer.outFeatures;
        this.epilogueGrid = epilogueGrid;
        this.workspace = workspace;
        this.programmaticDependentLaunch = programmaticDependentLaunch;
        this.mathMode = mathMode;
        this.lt = lt;
        this.type = layer.type;
        this.gemv = layer.gemv;
        this.halfGemvMaxBatch = halfGemvMaxBatch;
    }

    /**
     * Binds this layer's weight and bias as {@code <prefix>weight} and {@code <prefix>bias}, so that
     * a graph using it can be saved and loaded as a {@link GraphArchive}.
     *
     * @param bindings where to bind them
     * @param prefix the slot names' prefix
     * @return {@code bindings}
     */
    public GraphBindings bindParameters(GraphBindings bindings, String prefix) {
        return bindings.buffer(prefix + "weight", weight).buffer(prefix + "bias", bias);
    }

    /**
     * The size of one input row.
     *
     * @return columns of x, at least 1
     */
    public int inFeatures() {
        return inFeatures;
    }

    /**
     * The size of one output row.
     *
     * @return columns of y, at least 1
     */
    public int outFeatures() {
        return outFeatures;
    }

    /**
     * A copy of this layer whose unfused epilogue launches on {@code grid} (with the seed's 8 x 32
     * block), e.g. the seed's {@code {256,2}}. The epilogue is correct for any grid.
     *
     * @param grid blocks for the unfused epilogue; {@link Mode#FUSED} ignores it
     * @return a new layer on the same buffers; this one is unchanged
     * @throws NullPointerException if {@code grid} is null
     */
    public Linear withEpilogueGrid(Dim3 grid) {
        return new Linear(this, Objects.requireNonNull(grid, "grid"), workspace, programmaticDependentLaunch,
                mathMode, lt);
    }

    /**
     * A copy of this layer whose fused kernel may split K through {@code workspace}, as
     * {@link Sgemm#choose(int, int, int, boolean, GemmConfig.Epilogue, DeviceBuffer, GemmWorkspace)}
     * decides; {@link Mode#UNFUSED} never splits.
     *
     * @param workspace the workspace, which stays owned by the caller; launches through it must be ordered on the
     *     device
     * @return a new layer on the same buffers; this one is unchanged
     * @throws NullPointerException if {@code workspace} is null
     */
    public Linear withWorkspace(GemmWorkspace workspace) {
        return new Linear(this, epilogueGrid, Objects.requireNonNull(workspace, "workspace"),
                programmaticDependentLaunch, mathMode, lt);
    }

    /**
     * A copy of this layer whose sgemm launches with programmatic dependent launch; the unfused
     * epilogue kernel launches as usual.
     *
     * @return a new layer on the same buffers; this one is unchanged
     */
    public Linear withProgrammaticDependentLaunch() {
        return new Linear(this, epilogueGrid, workspace, true, mathMode, lt);
    }

    /**
     * A copy of this layer whose sgemm computes in {@code mode} (see {@link Sgemm#withMathMode}).
     *
     * @param mode how to multiply; {@link MathMode#FP32} by default
     * @return a new layer on the same buffers; this one is unchanged
     * @throws NullPointerException if {@code mode} is null
     */
    public Linear withMathMode(MathMode mode) {
        return new Linear(this, epilogueGrid, workspace, programmaticDependentLaunch,
                Objects.requireNonNull(mode, "mode"), lt);
    }

    /**
     * A copy of this layer that multiplies on cuBLASLt through {@code lt}'s workspace, in the
     * layer's element type with FP32 accumulation: {@link Mode#FUSED} as one matmul with cuBLASLt's
     * RELU_BIAS epilogue, {@link Mode#UNFUSED} as a matmul and the shipped epilogue kernel. A fused
     * BF16 or FP16 forward of at most {@link #halfGemvMaxBatch()} rows (one, by default) runs the
     * shipped half-precision GEMV instead (see {@link #withHalfGemvUpTo(int)}). An FP32
     * layer's {@link #withMathMode math mode} picks the compute type: {@link MathMode#TF32} rounds to
     * TF32, the others multiply in full FP32. Workspace and programmatic dependent launch apply to the
     * shipped sgemm only.
     *
     * @param lt the handle, on the kernels' device, which stays owned by the caller; forward passes through it must
     *     be ordered on the device (see {@link CublasLt})
     * @return a new layer on the same buffers; this one is unchanged
     * @throws IllegalArgumentException if {@code lt} is on another device than the kernels
     * @throws NullPointerException if {@code lt} is null
     */
    public Linear withCublasLt(CublasLt lt) {
        Objects.requireNonNull(lt, "lt");
        if (!lt.device().equals(kernels.device())) {
            throw new IllegalArgumentException(lt + " is on another device than the kernels, " + kernels.device());
        }
        return new Linear(this, epilogueGrid, workspace, programmaticDependentLaunch, mathMode, lt);
    }

    /**
     * A copy of this layer whose fused BF16 or FP16 forward passes of at most {@code maxBatch} rows
     * run the shipped half-precision GEMV (one kernel that streams the weights once), and larger
     * ones cuBLASLt. The GEMV takes K a multiple of 8 and x and the weight aligned to 16 bytes;
     * other products go to cuBLASLt whatever their batch.
     *
     * @param maxBatch 0 (every batch on cuBLASLt) to the GEMV's largest, 8; {@value #DEFAULT_HALF_GEMV_MAX_BATCH}
     *     by default
     * @return a new layer on the same buffers; this one is unchanged
     * @throws IllegalArgumentException if {@code maxBatch} is out of range, or the layer is FP32
     */
    public Linear withHalfGemvUpTo(int maxBatch) {
        if (gemv == null) {
            throw new IllegalArgumentException("an FP32 layer multiplies on the shipped sgemm or cuBLASLt, not the"
                    + " half-precision GEMV");
        }
        int largest = gemv.maxBatch();
        if (maxBatch < 0 || maxBatch > largest) {
            throw new IllegalArgumentException("maxBatch must be 0 to " + largest + ", got " + maxBatch);
        }
        return new Linear(this, epilogueGrid, workspace, programmaticDependentLaunch, mathMode, lt, maxBatch);
    }

    /**
     * The most rows a fused half-precision forward on cuBLASLt gives the shipped GEMV instead.
     *
     * @return {@value #DEFAULT_HALF_GEMV_MAX_BATCH} by default for BF16 and FP16 layers, as
     *     {@link #withHalfGemvUpTo} set it; 0 for FP32
     */
    public int halfGemvMaxBatch() {
        return halfGemvMaxBatch;
    }

    /**
     * The element type of the weight, bias, input and output.
     *
     * @return FLOAT32, FLOAT16 or BFLOAT16
     */
    public ElementType elementType() {
        return type;
    }

    /**
     * Whether this layer multiplies on cuBLASLt.
     *
     * @return true after {@link #withCublasLt}
     */
    public boolean usesCublasLt() {
        return lt != null;
    }

    /**
     * How this layer's sgemm multiplies.
     *
     * @return the mode given to {@link #withMathMode}, else {@link MathMode#FP32}
     */
    public MathMode mathMode() {
        return mathMode;
    }

    /**
     * Queues the forward pass of {@code batch} rows on {@code stream}.
     *
     * @param stream the stream to launch on
     * @param batch rows of x and y, at least 1
     * @param x [batch, inFeatures] elements of the layer's type
     * @param y [batch, outFeatures] elements of the layer's type; must not overlap x
     * @param mode one fused kernel, or the seed's two kernels
     * @throws IllegalArgumentException if {@code batch} is below 1, {@code x} or {@code y} does not hold the layer's
     *     type or is too short, or {@code y} overlaps {@code x} or the weight
     * @throws NullPointerException if {@code x}, {@code y} or {@code mode} is null
     * @throws IllegalStateException if the stream, a buffer or the kernels are closed, or a FLOAT16 or BFLOAT16
     *     layer has no {@linkplain #withCublasLt cuBLASLt handle}
     */
    public void forward(CudaStream stream, int batch, DeviceBuffer x, DeviceBuffer y, Mode mode) {
        if (batch < 1) {
            throw new IllegalArgumentException("batch must be at least 1, got " + batch);
        }
        MatrixChecks.requireElements("x", x, type, (long) batch * inFeatures);
        MatrixChecks.requireElements("y", y, type, (long) batch * outFeatures);
        Objects.requireNonNull(mode, "mode");
        if (lt != null) {
            forwardOnCublasLt(stream, batch, x, y, mode);
            return;
        }
        if (type != ElementType.FLOAT32) {
            throw new IllegalStateException("a " + type + " layer multiplies on cuBLASLt: use withCublasLt(lt)");
        }
        Sgemm sgemm = kernels.sgemm().withMathMode(mathMode);
        if (programmaticDependentLaunch) {
            sgemm = sgemm.withProgrammaticDependentLaunch();
        }
        switch (mode) {
            case FUSED -> sgemm.multiply(stream,
                    GemmOperands.biasRelu(batch, outFeatures, inFeatures, x, weight, true, bias, y), workspace);
            case UNFUSED -> {
                sgemm.multiply(stream,
                        GemmOperands.linearCombination(batch, outFeatures, inFeatures, 1f, x, weight, true, 0f, y),
                        null);
                Dim3 grid = epilogueGrid != null ? epilogueGrid : BiasRelu.defaultGrid(batch, outFeatures);
                kernels.biasRelu().apply(stream, batch, outFeatures, y, bias, y, grid, BiasRelu.BLOCK);
            }
        }
    }

    private void forwardOnCublasLt(CudaStream stream, int batch, DeviceBuffer x, DeviceBuffer y, Mode mode) {
        if (MatrixChecks.overlaps(y, x) || MatrixChecks.overlaps(y, weight)) {
            throw new IllegalArgumentException("y must not overlap x or the weight");
        }
        Matmul product = Matmul.of(MatrixLayout.rowMajor(type, batch, inFeatures), Matmul.Op.NONE,
                MatrixLayout.rowMajor(type, outFeatures, inFeatures), Matmul.Op.TRANSPOSE,
                MatrixLayout.rowMajor(type, batch, outFeatures))
                .withCompute(mathMode == MathMode.TF32 ? MatmulCompute.FP32_FAST_TF32 : MatmulCompute.FP32);
        if (mode == Mode.FUSED && batch <= halfGemvMaxBatch && gemv.takes(batch, inFeatures, x, weight)) {
            gemv.apply(stream, batch, outFeatures, inFeatures, x, weight, bias, y);
            return;
        }
        switch (mode) {
            case FUSED -> lt.matmul(stream, product.withEpilogue(MatmulEpilogue.RELU_BIAS), x, weight, y, bias);
            case UNFUSED -> {
                lt.matmul(stream, product, x, weight, y, null);
                Dim3 grid = epilogueGrid != null ? epilogueGrid : BiasRelu.defaultGrid(batch, outFeatures);
                kernels.biasRelu(type).apply(stream, batch, outFeatures, y, bias, y, grid, BiasRelu.BLOCK);
            }
        }
    }
}
