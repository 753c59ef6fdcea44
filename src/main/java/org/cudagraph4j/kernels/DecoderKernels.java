package org.cudagraph4j.kernels;

import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaKernel;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.DeviceProperties;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;

/**
 * The shipped kernels of a Llama-architecture decoder step in BF16 ({@code kernels/src/cg4j_llm.cu}),
 * as launches: embedding, the QKV projection with RMSNorm and RoPE writing the KV cache, decode
 * attention, the output and down projections added into the FP32 residual stream, the gate and up
 * projections with SwiGLU, the LM head, and sampling. {@link org.cudagraph4j.llm.LlamaDecoder} composes
 * them; each method documents the buffers its kernel reads and writes.
 *
 * <p>A step takes {@code rows} tokens (at most {@link #MAX_ROWS}), each with a position and a KV-cache
 * slot in device {@code int} arrays. The projections run on tensor cores: a block multiplies a tile
 * of 16 weight rows by every row of the step, its warps splitting the inner dimension, and the grid
 * is sized here to the device's multiprocessors; the projections that normalize stage their
 * {@code rows * H} BF16 inputs in shared memory once per block. Every launch uses programmatic
 * dependent launch (sm_90 and newer), so that a kernel's start overlaps the end of the one before.
 *
 * <p>Thread safety: immutable once loaded; launches may be built from any thread. Close once, after
 * every graph that holds its kernels is closed or no longer launched (graphs keep the module alive).
 */
public final class DecoderKernels implements AutoCloseable {
    /** The most rows one launch takes. */
    public static final int MAX_ROWS = 16;
    /** Vocabulary entries per sampling chunk. */
    public static final int SAMPLE_CHUNK = 2048;
    /** Candidates a chunk keeps for sampling, and the largest top-k. */
    public static final int SAMPLE_CANDIDATES = 64;
    /** The largest vocabulary the sampler takes: 64 chunks. */
    public static final int MAX_VOCABULARY = 64 * SAMPLE_CHUNK;
    /** What the projections' input widths (hidden, intermediate, heads x head dim) must be multiples of. */
    public static final int K_MULTIPLE = 32;
    /** The head dimensions attention is built for. */
    private static final int[] HEAD_DIMS = {64, 128};

    /** Threads per block of each projection: its launch bound ({@code tensor_gemv.cuh}'s warps). */
    private static final int QKV_THREADS = 512;
    private static final int RESIDUAL_THREADS = 1024;
    private static final int GATE_UP_THREADS = 512;
    private static final int LM_HEAD_THREADS = 512;
    private static final int ATTENTION_THREADS = 256;
    private static final int SAMPLE_THREADS = 1024;

    private final CudaLibrary library;
    private final String image;
    private final CudaDevice device;
    private final int multiprocessors;
    private final int sharedMemOptin;

    private DecoderKernels(CudaLibrary library, String image, CudaDevice device, DeviceProperties properties) {
        this.library = library;
        this.image = image;
        this.device = device;
        this.multiprocessors = properties.multiprocessorCount();
        this.sharedMemOptin = (int) properties.sharedMemPerBlockOptinBytes();
    }

    /**
     * Loads the decoder's image for {@code device}.
     *
     * @param device the device whose compute capability picks the image
     * @return the kernels, to be closed
     * @throws IllegalStateException if no shipped image runs on the device
     */
    public static DecoderKernels load(CudaDevice device) {
        DeviceProperties properties = device.properties();
        String image = KernelManifest.load().imageFor("llm.", properties.major(), properties.minor());
        CudaLibrary library = CudaLibrary.loadResource(DecoderKernels.class, KernelManifest.RESOURCE_DIR + image);
        return new DecoderKernels(library, image, device, properties);
    }

    /** {@return the file loaded, e.g. {@code cg4j_llm.sm_90.cubin}} */
    public String image() {
        return image;
    }

    /**
     * Lets the normalizing projections stage {@code rows * hidden} BF16 values in shared memory, for
     * every row capacity; call once per hidden size before building launches.
     *
     * @param device the device the kernels run on
     * @param hidden the hidden size
     * @throws IllegalArgumentException if {@link #MAX_ROWS} rows of {@code hidden} do not fit a block's
     *     shared memory on this device
     */
    public void reserveSharedMemory(CudaDevice device, int hidden) {
        long bytes = stagedBytes(MAX_ROWS, hidden);
        if (bytes > sharedMemOptin - 2048) {
            throw new IllegalArgumentException("hidden size " + hidden + " needs " + bytes + " bytes of shared memory "
                    + "for " + MAX_ROWS + " rows, more than this device's " + sharedMemOptin + " per block");
        }
        for (int capacity : new int[] {8, 16}) {
            int staged = Math.max(stagedBytes(capacity, hidden), 48 * 1024);
            for (String name : new String[] {"cg4j_llm_qkv_rope", "cg4j_llm_gate_up", "cg4j_llm_lm_head"}) {
                projection(name, capacity).setMaxDynamicSharedMemory(device, staged);
            }
        }
    }

    /**
     * Lets attention keep {@code maxSequence} scores in shared memory.
     *
     * @param device the device the kernels run on
     * @param maxSequence the longest context
     * @throws IllegalArgumentException if the scores do not fit a block's shared memory
     */
    public void reserveAttentionMemory(CudaDevice device, int maxSequence) {
        long bytes = 4L * maxSequence;
        if (bytes > sharedMemOptin - 8192) {
            throw new IllegalArgumentException("a context of " + maxSequence + " positions needs " + bytes
                    + " bytes of shared memory for its scores, more than this device's " + sharedMemOptin);
        }
        for (int d : HEAD_DIMS) {
            library.kernel("cg4j_llm_attention_d" + d).setMaxDynamicSharedMemory(device,
                    (int) Math.max(bytes, 48 * 1024));
        }
    }

    /**
     * Whether attention is built for head dimension {@code headDim}.
     *
     * @param headDim a head's dimension
     * @return true for 64 and 128
     */
    public static boolean supportsHeadDim(int headDim) {
        return headDim == 64 || headDim == 128;
    }

    /**
     * {@code x[r, :] = table[token[r], :]} as FP32.
     *
     * @param rows rows of the step
     * @param table BF16 embedding [V, H]
     * @param token int [rows] token ids, each below V
     * @param x FP32 [rows, H] residual stream, written
     * @param hidden H
     * @return the launch
     */
    public KernelLaunch embed(int rows, DeviceBuffer table, DeviceBuffer token, DeviceBuffer x, int hidden) {
        return KernelLaunch.of(kernel("cg4j_llm_embed"), config(Dim3.of(rows), Dim3.of(256), 0), table, token, x,
                hidden);
    }

    /**
     * The QKV projection of {@code rmsnorm(x) * norm}, RoPE on q and k, and k and v written into the
     * cache at each row's position (rows at {@code maxSeq} or beyond write nothing).
     *
     * @param rows rows of the step
     * @param x FP32 [rows, H]
     * @param norm BF16 [H] input-norm weight
     * @param eps RMSNorm epsilon
     * @param wq BF16 [NQ*D, H]
     * @param wk BF16 [NKV*D, H]
     * @param wv BF16 [NKV*D, H]
     * @param rope FP32 (cos, sin) pairs [maxSeq, D/2]
     * @param pos int [rows] positions
     * @param slot int [rows] cache slots
     * @param q BF16 [rows, NQ*D], written
     * @param kCache this layer's BF16 key cache [slots, NKV, maxSeq, D]
     * @param vCache this layer's BF16 value cache, the same shape
     * @param shape the model's sizes
     * @return the launch
     */
    public KernelLaunch qkvRope(int rows, DeviceBuffer x, DeviceBuffer norm, float eps, DeviceBuffer wq,
            DeviceBuffer wk, DeviceBuffer wv, DeviceBuffer rope, DeviceBuffer pos, DeviceBuffer slot, DeviceBuffer q,
            DeviceBuffer kCache, DeviceBuffer vCache, Shape shape) {
        int pairs = (shape.heads() + 2 * shape.kvHeads()) * shape.headDim() / 2;
        return projectionLaunch("cg4j_llm_qkv_rope", rows, pairs, 8, QKV_THREADS, stagedBytes(rows, shape.hidden()), x,
                norm, eps, wq, wk, wv, rope, pos, slot, q, kCache, vCache, shape.hidden(), shape.heads(),
                shape.kvHeads(), shape.headDim(), shape.maxSequence(), rows);
    }

    /**
     * Decode attention: each row's query heads over its slot's positions {@code 0..pos}.
     *
     * @param rows rows of the step
     * @param q BF16 [rows, NQ*D] after RoPE
     * @param kCache this layer's key cache
     * @param vCache this layer's value cache
     * @param pos int [rows]
     * @param slot int [rows]
     * @param out BF16 [rows, NQ*D], written
     * @param shape the model's sizes
     * @return the launch
     */
    public KernelLaunch attention(int rows, DeviceBuffer q, DeviceBuffer kCache, DeviceBuffer vCache,
            DeviceBuffer pos, DeviceBuffer slot, DeviceBuffer out, Shape shape) {
        LaunchConfig config = config(Dim3.of(shape.heads(), rows, 1), Dim3.of(ATTENTION_THREADS),
                4 * shape.maxSequence());
        return KernelLaunch.of(kernel("cg4j_llm_attention_d" + shape.headDim()), config, q, kCache, vCache, pos, slot,
                out, shape.heads(), shape.kvHeads(), shape.maxSequence(), (float) (1.0 / Math.sqrt(shape.headDim())));
    }

    /**
     * {@code x[r, n] += sum_k W[n, k] in[r, k]}: the output and down projections.
     *
     * @param rows rows of the step
     * @param in BF16 [rows, K]
     * @param weight BF16 [N, K]
     * @param x FP32 [rows, N], added into
     * @param out N
     * @param inner K
     * @return the launch
     */
    public KernelLaunch residual(int rows, DeviceBuffer in, DeviceBuffer weight, DeviceBuffer x, int out, int inner) {
        return projectionLaunch("cg4j_llm_residual", rows, out, 16, RESIDUAL_THREADS, 0, in, weight, x, out, inner,
                rows);
    }

    /**
     * {@code h = silu(G n) * (U n)} for {@code n = rmsnorm(x) * norm}, rounded to BF16.
     *
     * @param rows rows of the step
     * @param x FP32 [rows, H]
     * @param norm BF16 [H] post-attention norm weight
     * @param eps RMSNorm epsilon
     * @param gate BF16 [I, H]
     * @param up BF16 [I, H]
     * @param h BF16 [rows, I], written
     * @param hidden H
     * @param intermediate I
     * @return the launch
     */
    public KernelLaunch gateUp(int rows, DeviceBuffer x, DeviceBuffer norm, float eps, DeviceBuffer gate,
            DeviceBuffer up, DeviceBuffer h, int hidden, int intermediate) {
        return projectionLaunch("cg4j_llm_gate_up", rows, intermediate, 8, GATE_UP_THREADS, stagedBytes(rows, hidden),
                x, norm, eps, gate, up, h, hidden, intermediate, rows);
    }

    /**
     * {@code logits = W (rmsnorm(x) * norm)} in FP32.
     *
     * @param rows rows of the step
     * @param x FP32 [rows, H]
     * @param norm BF16 [H] final norm weight
     * @param eps RMSNorm epsilon
     * @param weight BF16 [V, H]
     * @param logits FP32 [rows, V], written
     * @param vocabulary V
     * @param hidden H
     * @return the launch
     */
    public KernelLaunch lmHead(int rows, DeviceBuffer x, DeviceBuffer norm, float eps, DeviceBuffer weight,
            DeviceBuffer logits, int vocabulary, int hidden) {
        return projectionLaunch("cg4j_llm_lm_head", rows, vocabulary, 16, LM_HEAD_THREADS, stagedBytes(rows, hidden),
                x, norm, eps, weight, logits, vocabulary, hidden, rows);
    }

    /**
     * The first sampling pass: per row and chunk of the vocabulary, the best logit (greedy rows) or
     * the {@link #SAMPLE_CANDIDATES} best in rank order (sampled rows).
     *
     * @param rows rows of the step
     * @param logits FP32 [rows, V]
     * @param vocabulary V, at most {@link #MAX_VOCABULARY}
     * @param control the rows' sampling parameters, read from {@code firstRow}
     * @param firstRow the control row of logits row 0
     * @param candidates FP32 values and int indices, each [rows, chunks, 64], written
     * @param candidateIndices the indices
     * @return the launch
     */
    public KernelLaunch samplePartial(int rows, DeviceBuffer logits, int vocabulary, Control control, int firstRow,
            DeviceBuffer candidates, DeviceBuffer candidateIndices) {
        int chunks = chunks(vocabulary);
        return KernelLaunch.of(kernel("cg4j_llm_sample_partial"), config(Dim3.of(chunks, rows, 1),
                Dim3.of(SAMPLE_THREADS), 0), logits, vocabulary, control.temperature(), control.topK(), firstRow,
                candidates, candidateIndices, chunks);
    }

    /**
     * The second sampling pass: picks each row's token from its candidates, streams it to the host,
     * makes it the row's next input one position on, and ends the row on a stop token or its limit.
     *
     * @param rows rows of the step
     * @param vocabulary V
     * @param control the rows' state, from {@code firstRow}
     * @param firstRow the control row of candidate row 0
     * @param candidates as written by {@link #samplePartial}
     * @param candidateIndices as written by {@link #samplePartial}
     * @return the launch
     */
    public KernelLaunch sampleFinish(int rows, int vocabulary, Control control, int firstRow, DeviceBuffer candidates,
            DeviceBuffer candidateIndices) {
        return KernelLaunch.of(kernel("cg4j_llm_sample_finish"), config(Dim3.of(rows), Dim3.of(SAMPLE_THREADS), 0),
                candidates, candidateIndices, chunks(vocabulary), firstRow, control.token(),
                control.pos(), control.generated(), control.maxNew(), control.done(), control.active(),
                control.temperature(), control.topK(), control.topP(), control.seed(), control.stopIds(),
                control.stopCount(), control.hostTokens(), control.hostCount(), control.stride());
    }

    /**
     * The sizes a step's launches need.
     *
     * @param hidden H
     * @param heads NQ
     * @param kvHeads NKV
     * @param headDim D
     * @param maxSequence positions per cache slot
     */
    public record Shape(int hidden, int heads, int kvHeads, int headDim, int maxSequence) {}

    /**
     * The decode rows' state in device memory, one entry per row, and the pinned host stream of their
     * tokens ({@code hostTokens} and {@code hostCount} are addresses of page-locked host memory, which
     * the device writes directly).
     *
     * @param token int: the next input token
     * @param pos int: its position
     * @param generated int: tokens made
     * @param maxNew int: the token limit
     * @param done int: 1 once ended
     * @param active int [1]: rows not ended
     * @param temperature float
     * @param topK int
     * @param topP float
     * @param seed long
     * @param stopIds int [stopCount]
     * @param stopCount how many stop ids
     * @param hostTokens int [rows, stride] in pinned host memory
     * @param hostCount int [rows] in pinned host memory
     * @param stride tokens a row's host stream holds
     */
    public record Control(DeviceBuffer token, DeviceBuffer pos, DeviceBuffer generated, DeviceBuffer maxNew,
            DeviceBuffer done, DeviceBuffer active, DeviceBuffer temperature, DeviceBuffer topK, DeviceBuffer topP,
            DeviceBuffer seed, DeviceBuffer stopIds, int stopCount, long hostTokens, long hostCount, int stride) {}

    /**
     * The vocabulary chunks the sampler splits a row into.
     *
     * @param vocabulary V
     * @return {@code ceil(V / SAMPLE_CHUNK)}
     */
    public static int chunks(int vocabulary) {
        return (vocabulary + SAMPLE_CHUNK - 1) / SAMPLE_CHUNK;
    }

    private CudaKernel kernel(String name) {
        return library.kernel(name);
    }

    private CudaKernel projection(String prefix, int rows) {
        if (rows < 1 || rows > MAX_ROWS) {
            throw new IllegalArgumentException("a decoder launch takes 1 to " + MAX_ROWS + " rows, got " + rows);
        }
        return library.kernel(prefix + "_mma_r" + (rows <= 8 ? 8 : 16));
    }

    /**
     * A projection's launch: a block per tile of {@code tileFeatures} features, at most as many as the
     * device keeps resident at once; the blocks walk the remaining tiles, so that a block normalizes
     * its rows of x once.
     */
    private KernelLaunch projectionLaunch(String prefix, int rows, int features, int tileFeatures, int threads,
            int sharedBytes, Object... arguments) {
        CudaKernel kernel = projection(prefix, rows);
        int resident = kernel.maxActiveBlocksPerMultiprocessor(device, Dim3.of(threads), sharedBytes);
        int blocks = Math.max(1, Math.min((features + tileFeatures - 1) / tileFeatures, resident * multiprocessors));
        return KernelLaunch.of(kernel, config(Dim3.of(blocks), Dim3.of(threads), sharedBytes), arguments);
    }

    /**
     * Every decoder kernel launches with programmatic dependent launch: it may start while the kernel
     * before it runs, and waits on the device before it reads what that kernel writes; a projection
     * starts on its weights meanwhile, which no kernel writes ({@code tensor_gemv.cuh}).
     */
    private static LaunchConfig config(Dim3 grid, Dim3 block, int sharedBytes) {
        return LaunchConfig.of(grid, block, sharedBytes).withProgrammaticDependentLaunch();
    }

    /** Shared memory for {@code rows} normalized rows, each padded by 16 bytes. */
    private int stagedBytes(int rows, int hidden) {
        return rows * (hidden + 8) * 2;
    }

    @Override
    public void close() {
        library.close();
    }
}
