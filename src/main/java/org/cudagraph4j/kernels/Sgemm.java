package org.cudagraph4j.kernels;

import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.LaunchConfig;

/**
 * Single-precision matrix product on the shipped kernels, for row-major matrices:
 * {@code C = alpha * A * B + beta * C}, with A [m, k], B [k, n] (or B stored transposed, [n, k])
 * and C [m, n], all dense. Any m, n, k of at least 1. The problem is a {@link GemmOperands}:
 *
 * <pre>{@code
 * sgemm.multiply(stream, GemmOperands.linearCombination(m, n, k, 1f, a, b, false, 0f, c), null);
 * sgemm.multiply(stream, GemmOperands.biasRelu(batch, out, in, x, weight, true, bias, y), workspace);
 * }</pre>
 *
 * <p>The instance is chosen by problem size (the large 128x128 tile once it fills every SM, the
 * seed's 64x32 tile below that, split-K or GEMV instances for skinny problems) and by the
 * {@link #withMathMode math mode}: {@link MathMode#FP32}, the default, takes the 3xTF32 tensor-core
 * instances from K = 1024 where they were measured faster, {@link MathMode#SIMT_FP32} never does,
 * {@link MathMode#TF32X3} and {@link MathMode#TF32} always take their own. Or the instance is pinned
 * with {@link #multiply(CudaStream, GemmConfig, GemmOperands, GemmWorkspace)}. With {@code beta == 0},
 * C is not read, so it may hold anything, NaN included.
 *
 * <p>{@link #withProgrammaticDependentLaunch()} gives an Sgemm whose launches may overlap the
 * previous kernel on the stream (programmatic dependent launch, sm_90 and newer): every shipped
 * kernel waits for it on the device before it reads its inputs or writes anything, and split-K
 * instances first ask L2 for their first weight tiles. The result is the same bits either way.
 *
 * <p>Thread safety: immutable; safe to share.
 */
public final class Sgemm {
    private static final int MAX_GRID_Y = 65535;

    /**
     * The least K for which {@link MathMode#FP32} may take a 3xTF32 instance: from K = 1024 its error
     * was no worse than the SIMT kernel's on every data set measured (on the H200, 2026-12-01:
     * normal, uniform and wide-exponent data, max and mean), at K = 256 and 512 it was worse on
     * wide-exponent data.
     */
    static final int FP32_TENSOR_CORE_MIN_K = 1024;

    /**
     * The least K for which {@link MathMode#FP32} may take a 3xTF32 {@code wgmma} instance, whose
     * tensor cores sum a whole k-tile of 32 before each FP32 add (the {@code mma.sync} ones 8 or 16):
     * on the H200 (2026-12-02) its max error was below the SIMT kernel's from K = 1024 on every data
     * set and its mean too from K = 2048, while at K = 1024 on wide-exponent data its mean was 3% above
     * (9.03e-8 against 8.79e-8).
     */
    static final int FP32_WGMMA_MIN_K = 2048;

    private final ShippedKernels kernels;
    private final boolean programmaticDependentLaunch;
    private final MathMode mathMode;

    Sgemm(ShippedKernels kernels, boolean programmaticDependentLaunch, MathMode mathMode) {
        this.kernels = kernels;
        this.programmaticDependentLaunch = programmaticDependentLaunch;
        this.mathMode = mathMode;
    }

    /**
     * An Sgemm on the same kernels whose launches use programmatic dependent launch.
     *
     * @return an Sgemm that launches with {@link LaunchConfig#withProgrammaticDependentLaunch()}
     */
    public Sgemm withProgrammaticDependentLaunch() {
        return programmaticDependentLaunch ? this : new Sgemm(kernels, true, mathMode);
    }

    /**
     * An Sgemm on the same kernels whose chosen instances compute in {@code mode}; pinned instances
     * ({@link #multiply(CudaStream, GemmConfig, GemmOperands, GemmWorkspace)}) keep their own.
     *
     * @param mode how to multiply; {@link MathMode#FP32} by default
     * @return an Sgemm that chooses in {@code mode}
     * @throws NullPointerException if {@code mode} is null
     */
    public Sgemm withMathMode(MathMode mode) {
        Objects.requireNonNull(mode, "mode");
        return mode == mathMode ? this : new Sgemm(kernels, programmaticDependentLaunch, mode);
    }

    /**
     * How the chosen instances multiply.
     *
     * @return the mode given to {@link #withMathMode}, else {@link MathMode#FP32}
     */
    public MathMode mathMode() {
        return mathMode;
    }

    /**
     * Whether launches use programmatic dependent launch.
     *
     * @return true for an Sgemm from {@link #withProgrammaticDependentLaunch()}
     */
    public boolean programmaticDependentLaunch() {
        return programmaticDependentLaunch;
    }

    /**
     * Computes {@code operands} on the instance {@link #choose} picks for them: for a skinny problem
     * the GEMV instance or the split-K launch the tuning table gives, the latter only through a
     * workspace; otherwise a tiled instance by the problem's size and B's alignment.
     *
     * @param stream the stream to launch on
     * @param operands the problem; a bias makes it the fused bias+ReLU
     * @param workspace where split-K partials go, or null to never split; one launch at a time may use it
     * @throws IllegalArgumentException if a dimension is below 1, a buffer does not hold FLOAT32 or is shorter than
     *     its matrix, the output overlaps A or B, n needs more than 65535 tiles, or the stream is not on the
     *     kernels' device, or a buffer is on a device that the stream's device cannot reach
     * @throws NullPointerException if {@code operands} or a matrix is null
     * @throws IllegalStateException if the stream, a buffer, the workspace or the kernels are closed
     */
    public void multiply(CudaStream stream, GemmOperands operands, GemmWorkspace workspace) {
        Objects.requireNonNull(operands, "operands").check();
        launch(stream, choose(operands.m(), operands.n(), operands.k(), operands.bTransposed(), operands.epilogue(),
                operands.a(), operands.b(), workspace), operands, workspace);
    }

    /**
     * Runs a pinned instance on {@code operands}, split-K ones through {@code workspace}. The
     * instance fixes the epilogue and B's layout: the operands must have a bias exactly when it is
     * bias+ReLU, and B stored as it takes it.
     *
     * @param stream the stream to launch on
     * @param config the instance and slice count, from {@link ShippedKernels#gemmConfigs()} and
     *     {@link GemmConfig#withSlices(int)}
     * @param operands the problem's dimensions, factors and buffers
     * @param workspace required by a split-K instance of more than one slice, for its partials and tickets; else
     *     may be null
     * @throws IllegalArgumentException if a dimension is below 1, a buffer does not hold FLOAT32 or is shorter than
     *     its matrix, the output overlaps A or B, n needs more than 65535 tiles, a linear-combination instance is
     *     given a bias, B is not stored as the instance takes it, B's leading dimension or address is not a
     *     multiple of the instance's alignment, a GEMV instance cannot read A 4 floats at a time, a split-K instance
     *     of more than one slice has no workspace, or one too small for this problem, or more slices than K has
     *     k-tiles, or the stream is not on the kernels' device, or a buffer is on a device that the stream's device
     *     cannot reach
     * @throws NullPointerException if {@code config}, {@code operands} or a matrix is null, or a bias+ReLU instance
     *     is given no bias
     * @throws IllegalStateException if the stream, a buffer, the workspace or the kernels are closed
     */
    public void multiply(CudaStream stream, GemmConfig config, GemmOperands operands, GemmWorkspace workspace) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(operands, "operands").check();
        launch(stream, config, operands, workspace);
    }

    /** Launches {@code config} on operands that have passed {@link GemmOperands#check()}. */
    private void launch(CudaStream stream, GemmConfig config, GemmOperands operands, GemmWorkspace workspace) {
        if (!stream.device().equals(kernels.device())) {
            // Their shared-memory limits were raised on that device only.
            throw new IllegalArgumentException("the kernels were loaded for " + kernels.device() + " but the stream is on "
                    + stream.device() + ": load ShippedKernels for each device");
        }
        check(config, operands);
        int m = operands.m();
        int n = operands.n();
        int k = operands.k();
        if (config.splitK() && (workspace != null || config.slices() > 1)) {
            if (workspace == null) {
                throw new IllegalArgumentException(config.kernelName() + " with " + config.slices()
                        + " slices needs a GemmWorkspace");
            }
            if (config.slices() > config.maxSlices(k)) {
                throw new IllegalArgumentException(config.slices() + " slices are more than k=" + k + " has k-tiles ("
                        + config.maxSlices(k) + ")");
            }
            if (!workspace.fits(config, m, n)) {
                throw new IllegalArgumentException("the workspace is too small for " + config.slices() + " slices of a "
                        + m + " x " + n + " output");
            }
        }
        CudaKernel kernel = kernels.library().kernel(config.kernelName());
        LaunchConfig launch = LaunchConfig.of(config.grid(m, n), Dim3.of(config.threads()), config.sharedMemBytes());
        if (programmaticDependentLaunch) {
            launch = launch.withProgrammaticDependentLaunch();
        }
        DeviceBuffer a = operands.a();
        DeviceBuffer b = operands.b();
        DeviceBuffer c = operands.c();
        int ldb = operands.ldb();
        boolean fused = config.epilogue() == GemmConfig.Epilogue.BIAS_RELU;
        if (!config.splitK()) {
            if (fused) {
                kernel.launch(stream, launch, m, n, k, a, k, b, ldb, operands.bias(), c, n);
            } else {
                kernel.launch(stream, launch, m, n, k, operands.alpha(), a, k, b, ldb, operands.beta(), c, n);
            }
        } else {
            // With one slice the kernel touches neither: null pointers do without a workspace.
            Object partials = workspace == null ? (Object) 0L : workspace.partials();
            Object tickets = workspace == null ? (Object) 0L : workspace.tickets();
            if (fused) {
                kernel.launch(stream, launch, m, n, k, a, k, b, ldb, operands.bias(), c, n, partials, tickets);
            } else {
                kernel.launch(stream, launch, m, n, k, operands.alpha(), a, k, b, ldb, operands.beta(), c, n, partials,
                        tickets);
            }
        }
    }

    /**
     * The instance {@link #multiply(CudaStream, GemmOperands, GemmWorkspace)} would use without a
     * workspace. For a skinny problem whose nearest shape in the tuning table ran fastest on a GEMV
     * instance, that instance, where K and B allow its 16-byte loads (A is taken to start aligned, as
     * every allocation does; the multiply that chooses looks at A itself and takes a tiled instance
     * for an unaligned one); for one
     * whose nearest shape ran fastest unsplit, that table's instance with one slice; otherwise, among the instances
     * that do not split K with the right epilogue and B layout (and B aligned for vector loads where the instance
     * needs it), the large tile when its grid fills every multiprocessor, else the smallest tile, each with 16-byte
     * loads of B where B's leading dimension (K when B is stored [n, k]) is a multiple of 4 and B starts 16-byte
     * aligned, and with 4-byte loads otherwise.
     *
     * @param m rows of A and of the output, at least 1
     * @param n columns of op(B) and of the output, at least 1
     * @param k columns of A and rows of op(B)
     * @param bTransposed whether B is stored [n, k]
     * @param epilogue the epilogue wanted
     * @param b B, whose address decides whether instances with vector loads fit
     * @return one of {@link ShippedKernels#gemmConfigs()}, with one slice
     * @throws IllegalArgumentException if m or n is below 1
     * @throws IllegalStateException if no shipped instance has this epilogue and B layout, or B is closed
     */
    public GemmConfig choose(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue, DeviceBuffer b) {
        return choose(m, n, k, bTransposed, epilogue, null, b, null);
    }

    /**
     * The instance and slice count {@link #multiply(CudaStream, GemmOperands, GemmWorkspace)} uses with
     * this workspace. Skinny problems (m up to the tuning table's largest) take the GEMV instance where
     * the table says it won, under the alignment conditions of the other overload, else the split-K instance and slice count measured best for
     * the nearest shape in {@link SgemmTuning the tuning table}, with the slices scaled to this GPU's
     * multiprocessor count and cut to what K and the workspace allow; other problems are chosen as by
     * {@link #choose(int, int, int, boolean, GemmConfig.Epilogue, DeviceBuffer)}.
     *
     * @param m rows of A and of the output, at least 1
     * @param n columns of op(B) and of the output, at least 1
     * @param k columns of A and rows of op(B), at least 1
     * @param bTransposed whether B is stored [n, k]
     * @param epilogue the epilogue wanted
     * @param b B, whose address decides whether instances with vector loads fit
     * @param workspace the workspace a split-K launch would use, or null for none (then as the other overload)
     * @return one of {@link ShippedKernels#gemmConfigs()}, possibly {@link GemmConfig#withSlices(int) with slices}
     * @throws IllegalArgumentException if m, n or k is below 1
     * @throws IllegalStateException if no shipped instance has this epilogue and B layout, or B is closed
     */
    public GemmConfig choose(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue, DeviceBuffer b,
            GemmWorkspace workspace) {
        MatrixChecks.requireDimensions(m, n, k);
        return choose(m, n, k, bTransposed, epilogue, null, b, workspace);
    }

    /**
     * As the public overloads; with {@code a} non-null, a GEMV instance only if A is aligned for it.
     * Without a workspace, the table's split-K launch only where it measured one slice fastest.
     */
    private GemmConfig choose(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue, DeviceBuffer a,
            DeviceBuffer b, GemmWorkspace workspace) {
        SgemmTuning.Entry entry = m >= 1 && n >= 1 && k >= 1 ? kernels.tuning().nearest(m, n, k) : null;
        GemmConfig tensor = tensorCorePlan(kernels.gemmConfigs(), kernels.tuning(), kernels.multiprocessorCount(),
                mathMode, entry, m, n, k, bTransposed, epilogue, a == null ? 0 : a.address(), b.address());
        if (tensor != null) {
            return fitSlices(workspace == null ? tensor.withSlices(1) : tensor, workspace, m, n);
        }
        GemmConfig gemv = gemv(entry, k, bTransposed, epilogue, a, b);
        if (gemv != null) {
            return gemv;
        }
        GemmConfig split = tuned(entry, k, bTransposed, epilogue);
        if (split == null || (workspace == null && split.slices() > 1)) {
            return chooseUnsplit(m, n, bTransposed, epilogue, b, bTransposed ? k : n);
        }
        return fitSlices(split, workspace, m, n);
    }

    /** {@code config} with its slices cut until the workspace holds them (none to cut without one). */
    private static GemmConfig fitSlices(GemmConfig config, GemmWorkspace workspace, int m, int n) {
        int slices = config.slices();
        while (slices > 1 && !workspace.fits(config.withSlices(slices), m, n)) {
            slices--;
        }
        return config.withSlices(slices);
    }

    /**
     * The tensor-core instance and slices for a problem, or null where {@code mode} takes a SIMT one.
     * {@link MathMode#TF32X3} and {@link MathMode#TF32} always take one of their mode;
     * {@link MathMode#FP32} takes a 3xTF32 one only where K is at least {@link #FP32_TENSOR_CORE_MIN_K}
     * ({@link #FP32_WGMMA_MIN_K} for a {@code wgmma} one),
     * A and B allow 16-byte loads, and the tensor-core instance was measured faster: where the tuning
     * table's entry for a skinny problem says so and lies within a factor of 2 of the problem in each
     * dimension ({@link SgemmTuning.Entry#tensorCoresWinNear}), or, for a problem that is not skinny, where the large
     * tensor-core tile fills every multiprocessor. An entry that names a wgmma tile takes that instance where
     * the device has it (sm_90), and counts as not measured elsewhere. In a tensor-core mode: the large tile
     * (the wgmma one where the device has it) where it fits the device and fills every multiprocessor and A
     * and B allow its loads; else the small split-K
     * tile (its 4-byte twin for unaligned operands), with the table entry's tensor-core slices where
     * it has them, else 2 where its tiles leave multiprocessors idle (measured best at 128 and 256
     * rows, widths 1024 and 4096), cut to K's k-tiles.
     *
     * @param configs the instances that run on the device
     * @param entry the tuning table's entry nearest the problem, or null where it is not skinny
     * @param aAddress A's device address, or 0 where it is an allocation's start (aligned)
     * @throws IllegalStateException if a tensor-core mode has no instance for this epilogue and B layout
     */
    static GemmConfig tensorCorePlan(List<GemmConfig> configs, SgemmTuning tuning, int multiprocessors,
            MathMode mode, SgemmTuning.Entry entry, int m, int n, int k, boolean bTransposed,
            GemmConfig.Epilogue epilogue, long aAddress, long bAddress) {
        boolean aligned = alignmentAllows(4, k, aAddress) && alignmentAllows(4, bTransposed ? k : n, bAddress);
        MathMode math = mode;
        if (mode == MathMode.FP32) {
            if (k < FP32_TENSOR_CORE_MIN_K || !aligned) {
                return null;
            }
            math = MathMode.TF32X3;
        } else if (!mode.tensorCores()) {
            return null;
        }
        MathMode kernelMath = math;
        List<GemmConfig> candidates = configs.stream()
                .filter(c -> c.math() == kernelMath && c.epilogue() == epilogue && c.bTransposed() == bTransposed)
                .filter(c -> aligned || c.alignment() == 1)
                .filter(c -> mode != MathMode.FP32 || c.mainloop() != GemmConfig.Mainloop.WGMMA
                        || k >= FP32_WGMMA_MIN_K)
                .toList();
        if (entry == null) {
            GemmConfig large = candidates.stream().filter(c -> !c.splitK())
                    .max(Comparator.<GemmConfig>comparingInt(c -> c.tileM() * c.tileN())
                            .thenComparing(c -> c.mainloop() == GemmConfig.Mainloop.WGMMA))
                    .orElse(null);
            if (large != null && large.grid(m, n).volume() >= multiprocessors) {
                return large;
            }
        }
        boolean won = entry != null && entry.tensorCoresWinNear(m, n, k);
        if (won && entry.tensorCoreWgmma()) {
            // Measured on sm_90's wgmma tile: elsewhere it says nothing.
            GemmConfig wgmma = candidates.stream().filter(entry::isWinningWgmma).findFirst().orElse(null);
            if (wgmma != null) {
                return wgmma.splitK() ? wgmma.withSlices(Math.max(1, Math.min(
                        tuning.tensorCoreSlicesFor(entry, multiprocessors), wgmma.maxSlices(k)))) : wgmma;
            }
        }
        boolean measured = won && !entry.tensorCoreWgmma();
        if (mode == MathMode.FP32 && !measured) {
            return null;
        }
        GemmConfig split = candidates.stream().filter(GemmConfig::splitK)
                .filter(c -> !measured
                        || (c.tileM() == entry.tensorCoreTileM() && c.tileN() == entry.tensorCoreTileN()))
                .max(Comparator.comparingInt(GemmConfig::alignment)).orElse(null);
        if (split == null) {
            if (mode == MathMode.FP32) {
                return null;
            }
            throw new IllegalStateException("no shipped " + mode + " instance for epilogue " + epilogue
                    + (bTransposed ? " with B transposed" : "") + " runs on this device");
        }
        int slices = measured ? tuning.tensorCoreSlicesFor(entry, multiprocessors)
                : split.grid(m, n).volume() < multiprocessors ? 2 : 1;
        // K = 0 has no k-tiles; the choosing overloads that take no operands allow it.
        return split.withSlices(Math.max(1, Math.min(slices, split.maxSlices(k))));
    }

    /**
     * The GEMV instance the tuning table gives this shape where it ran faster than any split-K
     * launch, if K and B (and A, unless null) allow its 16-byte loads; else null.
     */
    GemmConfig gemv(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue, DeviceBuffer a,
            DeviceBuffer b) {
        return gemv(kernels.tuning().nearest(m, n, k), k, bTransposed, epilogue, a, b);
    }

    /** As above, for the tuning table's entry nearest the problem (null: none, the problem is not skinny). */
    private GemmConfig gemv(SgemmTuning.Entry entry, int k, boolean bTransposed, GemmConfig.Epilogue epilogue,
            DeviceBuffer a, DeviceBuffer b) {
        if (entry == null || !entry.gemvWins()) {
            return null;
        }
        return kernels.gemmConfigs().stream()
                .filter(c -> entry.isWinningGemv(c) && c.epilogue() == epilogue && c.bTransposed() == bTransposed)
                .filter(c -> fitsGemv(k, a) && fitsAlignment(c, k, b))
                .findFirst()
                .orElse(null);
    }

    /**
     * The split-K instance and slice count the tuning table gives a skinny problem, whatever the
     * workspace; null when the problem is not skinny or no such instance is shipped.
     */
    GemmConfig tuned(int m, int n, int k, boolean bTransposed, GemmConfig.Epilogue epilogue) {
        return tuned(kernels.tuning().nearest(m, n, k), k, bTransposed, epilogue);
    }

    /** As above, for the tuning table's entry nearest the problem (null: none, the problem is not skinny). */
    private GemmConfig tuned(SgemmTuning.Entry entry, int k, boolean bTransposed, GemmConfig.Epilogue epilogue) {
        return tuned(kernels.gemmConfigs(), kernels.tuning(), kernels.multiprocessorCount(), entry, k, bTransposed,
                epilogue);
    }

    /**
     * The rule behind {@link #tuned}, on the instances of a manifest: the split-K instance of the
     * entry's tile and reduction batch, with the entry's slices scaled to this many multiprocessors
     * and cut to K's k-tiles; null for a null entry or where no such instance is shipped.
     */
    static GemmConfig tuned(List<GemmConfig> configs, SgemmTuning tuning, int multiprocessors, SgemmTuning.Entry entry,
            int k, boolean bTransposed, GemmConfig.Epilogue epilogue) {
        if (entry == null) {
            return null;
        }
        return configs.stream()
                .filter(c -> c.math() == MathMode.SIMT_FP32 && c.splitK() && c.epilogue() == epilogue
                        && c.bTransposed() == bTransposed)
                .filter(c -> c.tileM() == entry.tileM() && c.tileN() == entry.tileN()
                        && c.reductionBatch() == entry.reductionBatch())
                .findFirst()
                .map(c -> c.withSlices(Math.min(tuning.slicesFor(entry, multiprocessors), c.maxSlices(k))))
                .orElse(null);
    }

    private GemmConfig chooseUnsplit(int m, int n, boolean bTransposed, GemmConfig.Epilogue epilogue, DeviceBuffer b,
            int ldb) {
        return chooseTiled(kernels.gemmConfigs(), kernels.multiprocessorCount(), m, n, ldb, bTransposed, epilogue,
                b.address());
    }

    /**
     * The rule for problems that are not split: among the tiled instances that do not split K with
     * this epilogue and B layout and whose loads of B {@link #alignmentAllows fit} B, the large tile
     * when its grid fills every multiprocessor, else the smallest tile; of two instances of one tile,
     * the one measured faster on the H200 (2026-12-01, one run of the native harness). That is the
     * one with the wider loads of B, except for the large tile with B stored [n, k], whose 16-byte
     * loader stages B through registers and lost to its cp.async align1 twin (39.4 against 42.2
     * TFLOP/s at 4096³): it keeps align1. The seed tile with B stored [n, k] reads B 16 bytes at a
     * time when K is a multiple of 4 and B starts 16-byte aligned (at 2048×640×512 with bias and
     * ReLU, 0.85× against 0.62× the time of cuBLAS plus the epilogue), and its align1 twin otherwise.
     *
     * @param configs the shipped instances
     * @param multiprocessors the device's multiprocessor count
     * @param m rows of the output
     * @param n columns of the output
     * @param ldb B's leading dimension: k for B stored [n, k], else n
     * @param bTransposed whether B is stored [n, k]
     * @param epilogue the epilogue wanted
     * @param bAddress B's device address
     * @return one of {@code configs}
     * @throws IllegalStateException if no instance has this epilogue and B layout
     */
    static GemmConfig chooseTiled(List<GemmConfig> configs, int multiprocessors, int m, int n, int ldb,
            boolean bTransposed, GemmConfig.Epilogue epilogue, long bAddress) {
        List<GemmConfig> candidates = configs.stream()
                .filter(c -> c.math() == MathMode.SIMT_FP32 && c.mainloop() == GemmConfig.Mainloop.TILED
                        && !c.splitK() && c.epilogue() == epilogue && c.bTransposed() == bTransposed)
                .filter(c -> alignmentAllows(c.alignment(), ldb, bAddress))
                .toList();
        if (candidates.isEmpty()) {
            throw new IllegalStateException("no shipped sgemm instance for epilogue " + epilogue
                    + (bTransposed ? " with B transposed" : ""));
        }
        Comparator<GemmConfig> byArea = Comparator.comparingInt(c -> c.tileM() * c.tileN());
        Comparator<GemmConfig> fasterLargeTile = Comparator.comparingInt(c -> c.bTransposed() ? -c.alignment()
                : c.alignment());
        GemmConfig largest = candidates.stream().max(byArea.thenComparing(fasterLargeTile)).orElseThrow();
        if (largest.grid(m, n).volume() >= multiprocessors) {
            return largest;
        }
        return candidates.stream()
                .min(byArea.thenComparing(Comparator.comparingInt(GemmConfig::alignment).reversed()))
                .orElseThrow();
    }

    /** The checks that depend on the instance; {@link GemmOperands#check()} has made the others. */
    private static void check(GemmConfig config, GemmOperands operands) {
        int n = operands.n();
        int k = operands.k();
        if (config.epilogue() == GemmConfig.Epilogue.BIAS_RELU) {
            Objects.requireNonNull(operands.bias(), config.kernelName() + " needs a bias");
        } else if (operands.bias() != null) {
            throw new IllegalArgumentException(config.kernelName() + " takes no bias");
        }
        if (config.bTransposed() != operands.bTransposed()) {
            throw new IllegalArgumentException(config.kernelName() + " takes B stored "
                    + (config.bTransposed() ? "[n, k]" : "[k, n]") + ", the operands' B is stored the other way");
        }
        if (config.grid(operands.m(), n).y() > MAX_GRID_Y) {
            throw new IllegalArgumentException("n=" + n + " needs more than " + MAX_GRID_Y + " tiles of "
                    + config.tileN() + " columns");
        }
        if (!fitsAlignment(config, operands.ldb(), operands.b())) {
            throw new IllegalArgumentException(config.kernelName() + " needs B's leading dimension (" + operands.ldb()
                    + ") and address to be multiples of " + config.alignment() + " floats");
        }
        if (config.math().tensorCores() && !alignmentAllows(config.alignmentA(), k, operands.a().address())) {
            throw new IllegalArgumentException(config.kernelName() + " reads A " + config.alignmentA()
                    + " floats at a time: it needs K (" + k + ") to be a multiple of " + config.alignmentA()
                    + " and A to start " + Float.BYTES * config.alignmentA() + "-byte aligned");
        }
        if (config.mainloop() == GemmConfig.Mainloop.GEMV && !fitsGemv(k, operands.a())) {
            throw new IllegalArgumentException(config.kernelName() + " reads A 4 floats at a time: it needs K (" + k
                    + ") to be a multiple of 4 and A to start 16-byte aligned");
        }
    }

    /** Whether K and A (unless null: an allocation's start, which is aligned) allow a GEMV instance's float4 loads. */
    private static boolean fitsGemv(int k, DeviceBuffer a) {
        return k % 4 == 0 && (a == null || a.address() % 16 == 0);
    }

    /** Whether B's leading dimension and address allow {@code config}'s vector loads. */
    private static boolean fitsAlignment(GemmConfig config, int ldb, DeviceBuffer b) {
        return config.alignment() == 1 || alignmentAllows(config.alignment(), ldb, b.address());
    }

    /**
     * Whether an instance that reads B {@code alignment} floats at a time may run on this B: every
     * access must be {@code 4 * alignment} bytes aligned, so B's address and its leading dimension
     * (k for B stored [n, k], where it also makes k a multiple of the alignment, else n) must be
     * multiples of it. The kernels need nothing of K or N beyond that: where a group of 4 floats
     * crosses the edge of the matrix, only its part inside is read.
     *
     * @param alignment elements per access of B: 1 or 4
     * @param ldb B's leading dimension in floats
     * @param bAddress B's device address in bytes
     */
    static boolean alignmentAllows(int alignment, int ldb, long bAddress) {
        return alignment == 1 || (ldb % alignment == 0 && bAddress % (Float.BYTES * (long) alignment) == 0);
    }
}
