package org.cudagraph4j.kernels;

import java.util.Objects;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
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
 * <p>The layer refers to its weight, bias and workspace but does not own them. Thread safety:
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

    private final ShippedKernels kernels;
    private final DeviceBuffer weight;
    private final DeviceBuffer bias;
    private final int inFeatures;
    private final int outFeatures;
    private final Dim3 epilogueGrid;
    private final GemmWorkspace workspace;
    private final boolean programmaticDependentLaunch;
    private final MathMode mathMode;

    /**
     * Creates a layer on weight and bias buffers that stay owned by the caller.
     *
     * @param kernels the loaded kernels to run on
     * @param weight [outFeatures, inFeatures] floats
     * @param bias [outFeatures] floats
     * @param inFeatures columns of x and of the weight, at least 1
     * @param outFeatures rows of the weight and columns of y, at least 1
     * @throws IllegalArgumentException if a feature count is below 1, or a buffer does not hold FLOAT32 or is too
     *     short
     * @throws NullPointerException if {@code kernels}, {@code weight} or {@code bias} is null
     */
    public Linear(ShippedKernels kernels, DeviceBuffer weight, DeviceBuffer bias, int inFeatures, int outFeatures) {
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        if (inFeatures < 1 || outFeatures < 1) {
            throw new IllegalArgumentException("Linear needs inFeatures, outFeatures >= 1, got " + inFeatures + ", "
                    + outFeatures);
        }
        MatrixChecks.requireFloats("weight", weight, (long) outFeatures * inFeatures);
        MatrixChecks.requireFloats("bias", bias, outFeatures);
        this.weight = weight;
        this.bias = bias;
        this.inFeatures = inFeatures;
        this.outFeatures = outFeatures;
        this.epilogueGrid = null;
        this.workspace = null;
        this.programmaticDependentLaunch = false;
        this.mathMode = MathMode.FP32;
    }

    private Linear(Linear layer, Dim3 epilogueGrid, GemmWorkspace workspace, boolean programmaticDependentLaunch,
            MathMode mathMode) {
        this.kernels = layer.kernels;
        this.weight = layer.weight;
        this.bias = layer.bias;
        this.inFeatures = layer.inFeatures;
        this.outFeatures = layer.outFeatures;
        this.epilogueGrid = epilogueGrid;
        this.workspace = workspace;
        this.programmaticDependentLaunch = programmaticDependentLaunch;
        this.mathMode = mathMode;
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
                mathMode);
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
                programmaticDependentLaunch, mathMode);
    }

    /**
     * A copy of this layer whose sgemm launches with programmatic dependent launch; the unfused
     * epilogue kernel launches as usual.
     *
     * @return a new layer on the same buffers; this one is unchanged
     */
    public Linear withProgrammaticDependentLaunch() {
        return new Linear(this, epilogueGrid, workspace, true, mathMode);
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
                Objects.requireNonNull(mode, "mode"));
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
     * @param x [batch, inFeatures] floats
     * @param y [batch, outFeatures] floats; must not overlap x
     * @param mode one fused kernel, or the seed's two kernels
     * @throws IllegalArgumentException if {@code batch} is below 1, {@code x} or {@code y} does not hold FLOAT32 or
     *     is too short, or {@code y} overlaps {@code x} or the weight
     * @throws NullPointerException if {@code x}, {@code y} or {@code mode} is null
     * @throws IllegalStateException if the stream, a buffer or the kernels are closed
     */
    public void forward(CudaStream stream, int batch, DeviceBuffer x, DeviceBuffer y, Mode mode) {
        if (batch < 1) {
            throw new IllegalArgumentException("batch must be at least 1, got " + batch);
        }
        MatrixChecks.requireFloats("x", x, (long) batch * inFeatures);
        MatrixChecks.requireFloats("y", y, (long) batch * outFeatures);
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
}
