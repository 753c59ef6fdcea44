package org.cudagraph4j.kernels;

import java.util.List;
import java.util.Objects;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.graph.GraphArchive;
import org.cudagraph4j.graph.GraphBindings;

/**
 * A stack of {@link Linear} layers, each followed by ReLU: {@code y = relu(…relu(relu(x W0ᵀ + b0) W1ᵀ + b1)…)}.
 * The activations between layers go through two buffers the stack owns, used in turn, and the
 * fused layers split K through a {@link GemmWorkspace} the stack owns, so a forward pass allocates
 * nothing and can be captured into a graph.
 *
 * <p>The layers hold one element type, FP32, BF16 or FP16, which the activations take too (see
 * {@link Linear} for what multiplies where).
 *
 * <p>Thread safety: one forward pass at a time, in device order. Forward passes on one stream (or
 * replays of one graph captured from it) are safe; passes that could overlap on the device, from
 * two streams say, share the activation buffers and the workspace and would corrupt each other:
 * give each stream its own {@code Mlp} (the weights can be shared). {@link #close()} frees the
 * owned buffers; graphs captured from a forward pass keep them alive.
 */
public final class Mlp implements AutoCloseable {
    private final ShippedKernels kernels;
    private final List<Linear> layers;
    private final int maxBatch;
    private final DeviceBuffer ping;
    private final DeviceBuffer pong;
    private final GemmWorkspace workspace;
    private final ElementType type;

    /**
     * Stacks {@code layers}, whose weights stay owned by the caller, for batches of up to {@code maxBatch} rows.
     *
     * @param kernels the loaded kernels, whose device the buffers are allocated on
     * @param layers at least one layer; each layer's inFeatures must equal the previous layer's outFeatures
     * @param maxBatch the most rows a forward pass takes, at least 1
     * @throws IllegalArgumentException if {@code layers} is empty, two neighbours do not chain, or
     *     {@code maxBatch} is below 1
     * @throws NullPointerException if {@code kernels}, {@code layers} or a layer is null
     */
    public Mlp(ShippedKernels kernels, List<Linear> layers, int maxBatch) {
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        List<Linear> stack = List.copyOf(layers);
        if (stack.isEmpty()) {
            throw new IllegalArgumentException("an Mlp needs at least one layer");
        }
        for (int i = 1; i < stack.size(); i++) {
            if (stack.get(i).inFeatures() != stack.get(i - 1).outFeatures()) {
                throw new IllegalArgumentException("layer " + i + " takes " + stack.get(i).inFeatures()
                        + " features but layer " + (i - 1) + " gives " + stack.get(i - 1).outFeatures());
            }
            if (stack.get(i).elementType() != stack.getFirst().elementType()) {
                throw new IllegalArgumentException("layer " + i + " holds " + stack.get(i).elementType()
                        + " but layer 0 " + stack.getFirst().elementType() + ": a stack holds one element type");
            }
        }
        if (maxBatch < 1) {
            throw new IllegalArgumentException("maxBatch must be at least 1, got " + maxBatch);
        }
        int[] widths = new int[stack.size() + 1];
        widths[0] = stack.getFirst().inFeatures();
        for (int i = 0; i < stack.size(); i++) {
            widths[i + 1] = stack.get(i).outFeatures();
        }
        long activation = (long) maxBatch * stack.stream().mapToInt(Linear::outFeatures).max().orElseThrow();
        this.maxBatch = maxBatch;
        this.type = stack.getFirst().elementType();
        boolean onSgemm = stack.stream().anyMatch(layer -> !layer.usesCublasLt());
        DeviceBuffer first = null;
        DeviceBuffer second = null;
        try {
            first = kernels.device().allocate(type, activation);
            second = kernels.device().allocate(type, activation);
            this.workspace = GemmWorkspace.allocate(kernels.device(), !onSgemm ? GemmWorkspace.Size.NONE
                    : workspaceSize(kernels.gemmConfigs(), kernels.tuning(), kernels.multiprocessorCount(), widths,
                            stack.stream().map(Linear::mathMode).toList(), maxBatch));
        } catch (RuntimeException e) {
            closeAll(first, second);
            throw e;
        }
        this.ping = first;
        this.pong = second;
        this.layers = stack.stream().map(layer -> layer.withWorkspace(workspace)).toList();
    }

    /**
     * The workspace that holds every split-K launch the chooser plans for a fused layer of this
     * stack at any batch up to {@code maxBatch} in the layer's math mode: the tuning table's instance
     * (its tile, from the manifest) and slice count for each layer and batch, or the tensor-core plan
     * ({@link Sgemm#tensorCorePlan}), so that {@link Sgemm#choose} never has to cut slices to fit.
     * Sized to those plans, not to the most slices at the largest batch and the smallest tile, which
     * the table never pairs.
     *
     * @param configs the shipped instances, as the manifest lists them
     * @param tuning the tuning table
     * @param multiprocessors the device's multiprocessor count, which scales the table's slices
     * @param widths the features between layers: layer i takes {@code widths[i]} and gives {@code widths[i + 1]}
     * @param modes each layer's math mode
     * @param maxBatch the most rows a forward pass takes
     */
    static GemmWorkspace.Size workspaceSize(List<GemmConfig> configs, SgemmTuning tuning, int multiprocessors,
            int[] widths, List<MathMode> modes, int maxBatch) {
        GemmWorkspace.Size size = GemmWorkspace.Size.NONE;
        for (int layer = 0; layer + 1 < widths.length; layer++) {
            int in = widths[layer];
            int out = widths[layer + 1];
            MathMode mode = modes.get(layer);
            for (int batch = 1; batch <= maxBatch; batch++) {
                SgemmTuning.Entry entry = tuning.nearest(batch, out, in);
                // The layer's own buffers are aligned allocations; an unaligned x takes the tensor-core
                // tile's 4-byte twin (same tile and slices) or, in FP32, the SIMT plan: both are held.
                GemmConfig tensor = Sgemm.tensorCorePlan(configs, tuning, multiprocessors, mode, entry, batch, out,
                        in, true, GemmConfig.Epilogue.BIAS_RELU, 0, 0);
                if (tensor != null) {
                    size = size.max(GemmWorkspace.Size.of(tensor, batch, out));
                }
                GemmConfig simt = mode.tensorCores() || entry == null ? null
                        : Sgemm.tuned(configs, tuning, multiprocessors, entry, in, true, GemmConfig.Epilogue.BIAS_RELU);
                if (simt != null) {
                    size = size.max(GemmWorkspace.Size.of(simt, batch, out));
                }
            }
        }
        return size;
    }

    /**
     * Binds every buffer a forward pass uses besides its input and output, so that a captured
     * forward can be saved and loaded as a {@link GraphArchive}: the activations
     * {@code mlp.ping} and {@code mlp.pong}, the split-K workspace ({@code mlp.workspace.partials},
     * {@code mlp.workspace.tickets}), and each layer's {@code mlp.layer<i>.weight} and
     * {@code mlp.layer<i>.bias}. An Mlp of the same layer shapes and batch binds the same names.
     *
     * @param bindings where to bind them
     * @return {@code bindings}
     */
    public GraphBindings bindTo(GraphBindings bindings) {
        bindings.buffer("mlp.ping", ping).buffer("mlp.pong", pong);
        workspace.bindTo(bindings, "mlp.workspace.");
        for (int i = 0; i < layers.size(); i++) {
            layers.get(i).bindParameters(bindings, "mlp.layer" + i + ".");
        }
        return bindings;
    }

    /**
     * The libraries this stack's kernels come from, for {@link GraphArchive#load}.
     *
     * @return the shipped kernels' library
     */
    public List<CudaLibrary> libraries() {
        return List.of(kernels.library());
    }

    /**
     * The size of one input row.
     *
     * @return the first layer's inFeatures
     */
    public int inFeatures() {
        return layers.getFirst().inFeatures();
    }

    /**
     * The size of one output row.
     *
     * @return the last layer's outFeatures
     */
    public int outFeatures() {
        return layers.getLast().outFeatures();
    }

    /**
     * Queues the forward pass of {@code batch} rows on {@code stream}: one kernel per layer in
     * {@link Linear.Mode#FUSED} mode, two in {@link Linear.Mode#UNFUSED}.
     *
     * @param stream the stream to launch on
     * @param batch rows of x and y, 1 to the maxBatch given at construction
     * @param x [batch, inFeatures] elements of the layers' type; only read
     * @param y [batch, outFeatures] elements of the layers' type; must not overlap x
     * @param mode how each layer applies its bias and ReLU
     * @throws IllegalArgumentException if {@code batch} is out of range, {@code x} or {@code y} does not hold
     *     the layers' type or is too short, or {@code y} overlaps {@code x}
     * @throws NullPointerException if {@code x}, {@code y} or {@code mode} is null
     * @throws IllegalStateException if the stream, a buffer, the kernels or this stack are closed
     */
    public void forward(CudaStream stream, int batch, DeviceBuffer x, DeviceBuffer y, Linear.Mode mode) {
        Objects.requireNonNull(mode, "mode");
        if (batch < 1 || batch > maxBatch) {
            throw new IllegalArgumentException("batch must be 1 to " + maxBatch + ", got " + batch);
        }
        MatrixChecks.requireElements("x", x, type, (long) batch * inFeatures());
        MatrixChecks.requireElements("y", y, type, (long) batch * outFeatures());
        if (MatrixChecks.overlaps(x, y)) {
            throw new IllegalArgumentException("y must not overlap x");
        }
        DeviceBuffer input = x;
        for (int i = 0; i < layers.size(); i++) {
            Linear layer = layers.get(i);
            DeviceBuffer output = i == layers.size() - 1 ? y
                    : (i % 2 == 0 ? ping : pong).slice(0, (long) batch * layer.outFeatures());
            layer.forward(stream, batch, input, output, mode);
            input = output;
        }
    }

    /** Frees the activation buffers and the workspace; graphs captured from a forward pass keep them alive. */
    @Override
    public void close() {
        try (workspace) {
            closeAll(ping, pong);
        }
    }

    private static void closeAll(DeviceBuffer first, DeviceBuffer second) {
        try {
            if (first != null) {
                first.close();
            }
        } finally {
            if (second != null) {
                second.close();
            }
        }
    }
}
