package org.cudagraph4j.llm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.PinnedBuffer;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.ConditionalHandle;
import org.cudagraph4j.graph.ConditionalKernels;
import org.cudagraph4j.graph.ConditionalNode;
import org.cudagraph4j.graph.CudaGraph;
import org.cudagraph4j.graph.GraphExec;
import org.cudagraph4j.graph.GraphNode;
import org.cudagraph4j.graph.StreamCapture;
import org.cudagraph4j.kernels.DecoderKernels;

/**
 * A Llama-architecture decoder on one GPU: a Hugging Face checkpoint's BF16 weights on the device, a
 * KV cache of {@code maxBatch} sequences of {@code maxSequence} positions, and generation from
 * prompts of token ids (or text, where the checkpoint has a {@code tokenizer.json}).
 *
 * <pre>{@code
 * try (LlamaDecoder decoder = LlamaDecoder.load(Cuda.device(0), Path.of("Llama-3.2-1B"), 1, 1024)) {
 *     String text = decoder.generate("The capital of France is", GenerationOptions.greedy(32));
 * }
 * }</pre>
 *
 * <p>A prompt is prefilled 16 tokens per launch; each decode step is one pass over the weights for
 * every sequence of the batch (embedding to sampled token, all on the device), launched per kernel,
 * as one CUDA graph per step, or, by default, run to the end of every sequence by a WHILE conditional
 * node in one launch ({@link DecodeMode}). Tokens reach the host through pinned memory as they are
 * made, and a {@link TokenListener} receives them there.
 *
 * <p>Limits: batches of 1 to {@link #MAX_BATCH} sequences; head dimensions 64 and 128; vocabularies
 * up to 131,072 tokens; contexts up to what attention's shared memory holds (about 50,000 positions
 * on an H200). Each is checked at {@link #load} or at {@code generate}, with an exception naming it.
 *
 * <p>Thread safety: safe to share; generations and scorings run one at a time (each holds the decoder
 * while it runs). Close once, when no call is running.
 */
public final class LlamaDecoder implements AutoCloseable {
    /** The most sequences one generation decodes together. */
    public static final int MAX_BATCH = DecoderKernels.MAX_ROWS;
    /** The most stop tokens a generation takes. */
    public static final int MAX_STOP_TOKENS = 16;

    private static final int CHUNK = DecoderKernels.MAX_ROWS;
    private static final VarHandle INT_ACQUIRE = ValueLayout.JAVA_INT.varHandle();
    /** The decode rows' int fields, each {@code maxBatch} long in one buffer. */
    private static final int TOKEN = 0;
    private static final int POS = 1;
    private static final int SLOT = 2;
    private static final int GENERATED = 3;
    private static final int MAX_NEW = 4;
    private static final int DONE = 5;
    private static final int TOP_K = 6;
    private static final int INT_FIELDS = 7;

    private final CudaDevice device;
    private final LlamaConfig config;
    private final LlamaTokenizer tokenizer;
    private final int maxBatch;
    private final int maxSequence;
    private final DecoderKernels kernels;
    private final ConditionalKernels conditionals;
    private final CudaStream stream;
    private final DecoderKernels.Shape shape;
    private final float eps;
    /** Everything the decoder allocated, closed in reverse order; filled as the constructor goes. */
    private final List<AutoCloseable> owned;

    private final DeviceBuffer embedding;
    private final DeviceBuffer finalNorm;
    private final DeviceBuffer lmHead;
    private final DeviceBuffer rope;
    private final Layer[] layers;
    private final DeviceBuffer[] keyCache;
    private final DeviceBuffer[] valueCache;

    private final DeviceBuffer x;
    private final DeviceBuffer q;
    private final DeviceBuffer attention;
    private final DeviceBuffer hidden;
    private final DeviceBuffer logits;
    private final DeviceBuffer candidates;
    private final DeviceBuffer candidateIndices;
    /** Prefill rows: token, position and slot of every prompt token, {@code maxSequence} per sequence. */
    private final DeviceBuffer prefillMeta;
    private final DeviceBuffer controlInts;
    private final DeviceBuffer controlFloats;
    private final DeviceBuffer seeds;
    private final DeviceBuffer stopIds;
    private final DeviceBuffer active;
    private final PinnedBuffer hostTokens;
    private final PinnedBuffer hostCount;
    private final DecoderKernels.Control control;
    private final Map<DecodeMode, Map<Integer, GraphExec>> graphs = new EnumMap<>(DecodeMode.class);
    private boolean closed;
    /** Set while a {@link GenerationEngine} schedules this decoder's rows. */
    private GenerationEngine engine;

    /** One layer's weights on the device. */
    private record Layer(DeviceBuffer inputNorm, DeviceBuffer wq, DeviceBuffer wk, DeviceBuffer wv, DeviceBuffer wo,
            DeviceBuffer postNorm, DeviceBuffer gate, DeviceBuffer up, DeviceBuffer down) {}

    private LlamaDecoder(CudaDevice device, LlamaCheckpoint checkpoint, LlamaTokenizer tokenizer, int maxBatch,
            int maxSequence, List<AutoCloseable> owned) {
        this.owned = owned;
        this.device = device;
        this.config = checkpoint.config();
        this.tokenizer = tokenizer;
        this.maxBatch = maxBatch;
        this.maxSequence = maxSequence;
        LlamaConfig c = config;
        this.shape = new DecoderKernels.Shape(c.hiddenSize(), c.heads(), c.keyValueHeads(), c.headDim(), maxSequence);
        this.eps = (float) c.rmsNormEps();
        this.kernels = own(DecoderKernels.load(device));
        kernels.reserveSharedMemory(device, c.hiddenSize());
        kernels.reserveAttentionMemory(device, maxSequence);
        this.conditionals = own(ConditionalKernels.load());
        this.stream = own(device.createStream());

        long h = c.hiddenSize();
        long qWidth = (long) c.heads() * c.headDim();
        long kvWidth = (long) c.keyValueHeads() * c.headDim();
        long inter = c.intermediateSize();
        long vocab = c.vocabSize();
        this.embedding = upload(checkpoint.weight("model.embed_tokens.weight", vocab, h));
        this.finalNorm = upload(checkpoint.weight("model.norm.weight", h));
        this.lmHead = c.tieWordEmbeddings() ? embedding : upload(checkpoint.weight("lm_head.weight", vocab, h));
        this.layers = new Layer[c.layers()];
        this.keyCache = new DeviceBuffer[c.layers()];
        this.valueCache = new DeviceBuffer[c.layers()];
        long cacheLength = (long) maxBatch * c.keyValueHeads() * maxSequence * c.headDim();
        for (int i = 0; i < c.layers(); i++) {
            String p = "model.layers." + i + ".";
            layers[i] = new Layer(upload(checkpoint.weight(p + "input_layernorm.weight", h)),
                    upload(checkpoint.weight(p + "self_attn.q_proj.weight", qWidth, h)),
                    upload(checkpoint.weight(p + "self_attn.k_proj.weight", kvWidth, h)),
                    upload(checkpoint.weight(p + "self_attn.v_proj.weight", kvWidth, h)),
                    upload(checkpoint.weight(p + "self_attn.o_proj.weight", h, qWidth)),
                    upload(checkpoint.weight(p + "post_attention_layernorm.weight", h)),
                    upload(checkpoint.weight(p + "mlp.gate_proj.weight", inter, h)),
                    upload(checkpoint.weight(p + "mlp.up_proj.weight", inter, h)),
                    upload(checkpoint.weight(p + "mlp.down_proj.weight", h, inter)));
            keyCache[i] = allocate(ElementType.BFLOAT16, cacheLength);
            valueCache[i] = allocate(ElementType.BFLOAT16, cacheLength);
        }
        this.rope = allocate(ElementType.FLOAT32, (long) maxSequence * c.headDim());
        rope.copyFrom(ropeTable(c.ropeInverseFrequencies(), maxSequence));

        int rows = DecoderKernels.MAX_ROWS;
        this.x = allocate(ElementType.FLOAT32, rows * h);
        this.q = allocate(ElementType.BFLOAT16, rows * qWidth);
        this.attention = allocate(ElementType.BFLOAT16, rows * qWidth);
        this.hidden = allocate(ElementType.BFLOAT16, rows * inter);
        this.logits = allocate(ElementType.FLOAT32, rows * vocab);
        long candidateCount = (long) rows * DecoderKernels.chunks(c.vocabSize()) * DecoderKernels.SAMPLE_CANDIDATES;
        this.candidates = allocate(ElementType.FLOAT32, candidateCount);
        this.candidateIndices = allocate(ElementType.INT32, candidateCount);
        this.prefillMeta = allocate(ElementType.INT32, 3L * maxBatch * maxSequence);
        this.controlInts = allocate(ElementType.INT32, (long) INT_FIELDS * maxBatch);
        this.controlFloats = allocate(ElementType.FLOAT32, 2L * maxBatch);
        this.seeds = allocate(ElementType.INT64, maxBatch);
        this.stopIds = allocate(ElementType.INT32, MAX_STOP_TOKENS);
        this.active = allocate(ElementType.INT32, 1);
        this.hostTokens = own(Cuda.allocatePinned(4L * maxBatch * maxSequence));
        this.hostCount = own(Cuda.allocatePinned(4L * maxBatch));
        this.control = new DecoderKernels.Control(field(TOKEN), field(POS), field(GENERATED), field(MAX_NEW),
                field(DONE), active, controlFloats.slice(0, maxBatch), field(TOP_K),
                controlFloats.slice(maxBatch, maxBatch), seeds, stopIds, MAX_STOP_TOKENS,
                hostTokens.segment().address(), hostCount.segment().address(), maxSequence);
    }

    /**
     * Loads a checkpoint's weights onto {@code device} and sizes the KV cache.
     *
     * @param device the GPU
     * @param checkpoint a Hugging Face Llama checkpoint directory: {@code config.json}, BF16
     *     {@code model.safetensors} or its shards, and optionally {@code tokenizer.json}
     * @param maxBatch the most sequences one generation decodes, 1 to {@link #MAX_BATCH}
     * @param maxSequence the most positions of a sequence (prompt and generated tokens together), at
     *     least 2 and at most the checkpoint's {@code max_position_embeddings}
     * @return the decoder, to be closed
     * @throws IllegalArgumentException if the checkpoint cannot be read or is not one this decoder runs,
     *     or a limit is out of range, each naming the problem
     * @throws org.cudagraph4j.error.CudaException if the device cannot hold the weights and the cache
     */
    public static LlamaDecoder load(CudaDevice device, Path checkpoint, int maxBatch, int maxSequence) {
        Objects.requireNonNull(device, "device");
        if (maxBatch < 1 || maxBatch > MAX_BATCH) {
            throw new IllegalArgumentException("maxBatch must be 1 to " + MAX_BATCH + ", got " + maxBatch);
        }
        try (LlamaCheckpoint weights = LlamaCheckpoint.open(checkpoint)) {
            LlamaConfig c = weights.config();
            if (maxSequence < 2 || maxSequence > c.maxPositionEmbeddings()) {
                throw new IllegalArgumentException("maxSequence must be 2 to the checkpoint's max_position_embeddings ("
                        + c.maxPositionEmbeddings() + "), got " + maxSequence);
            }
            if (!DecoderKernels.supportsHeadDim(c.headDim())) {
                throw new IllegalArgumentException(checkpoint + ": head_dim " + c.headDim()
                        + " is not one the decoder's attention is built for (64 or 128)");
            }
            for (int width : new int[] {c.hiddenSize(), c.intermediateSize(), c.heads() * c.headDim()}) {
                if (width % DecoderKernels.K_MULTIPLE != 0) {
                    throw new IllegalArgumentException(checkpoint + ": a projection of width " + width + " is not a"
                            + " multiple of " + DecoderKernels.K_MULTIPLE + ", which the decoder's kernels read at once");
                }
            }
            if (c.vocabSize() > DecoderKernels.MAX_VOCABULARY) {
                throw new IllegalArgumentException(checkpoint + ": vocab_size " + c.vocabSize()
                        + " is above the sampler's " + DecoderKernels.MAX_VOCABULARY);
            }
            weights.checkLlamaWeights();
            Path tokenizerFile = checkpoint.resolve("tokenizer.json");
            LlamaTokenizer tokenizer = Files.exists(tokenizerFile) ? LlamaTokenizer.load(tokenizerFile) : null;
            List<AutoCloseable> owned = new ArrayList<>();
            try {
                return new LlamaDecoder(device, weights, tokenizer, maxBatch, maxSequence, owned);
            } catch (RuntimeException | Error e) {
                // A device too small for the weights and the cache fails part way: free what was made.
                closeAll(owned, e);
                throw e;
            }
        }
    }

    /** {@return the checkpoint's configuration} */
    public LlamaConfig config() {
        return config;
    }

    /** {@return the checkpoint's tokenizer, if it has a {@code tokenizer.json}} */
    public Optional<LlamaTokenizer> tokenizer() {
        return Optional.ofNullable(tokenizer);
    }

    /** {@return the most sequences one generation decodes} */
    public int maxBatch() {
        return maxBatch;
    }

    /** {@return the most positions of a sequence} */
    public int maxSequence() {
        return maxSequence;
    }

    /**
     * Generates a continuation of {@code prompt}, tokenized with the checkpoint's tokenizer (with its
     * begin-of-text token), and returns it as text without special tokens.
     *
     * @param prompt the text
     * @param options how many tokens and how to pick them
     * @return the generated text
     * @throws IllegalStateException if the checkpoint has no {@code tokenizer.json}
     */
    public String generate(String prompt, GenerationOptions options) {
        LlamaTokenizer t = tokenizer().orElseThrow(() -> new IllegalStateException(
                "the checkpoint has no tokenizer.json; generate from token ids instead"));
        return t.decode(generate(t.encode(prompt), options), true);
    }

    /**
     * Generates a continuation of one prompt of token ids.
     *
     * @param prompt the token ids, at least one
     * @param options how many tokens and how to pick them
     * @return the generated tokens, ending with the stop token if one ended it
     */
    public int[] generate(int[] prompt, GenerationOptions options) {
        return generate(List.of(prompt), options).getFirst();
    }

    /**
     * Generates continuations of a batch of prompts of any lengths, decoded together.
     *
     * @param prompts 1 to {@link #maxBatch()} prompts of token ids, each at least one token, each
     *     with room for {@code options.maxNewTokens()} more within {@link #maxSequence()}
     * @param options how many tokens and how to pick them
     * @return each prompt's generated tokens, in order
     * @throws IllegalArgumentException naming the prompt and the limit it breaks
     * @throws IllegalStateException if the decoder is closed
     */
    public synchronized List<int[]> generate(List<int[]> prompts, GenerationOptions options) {
        checkOpen();
        Objects.requireNonNull(options, "options");
        int batch = prompts.size();
        if (batch < 1 || batch > maxBatch) {
            throw new IllegalArgumentException("a generation takes 1 to " + maxBatch + " prompts, got " + batch);
        }
        for (int i = 0; i < batch; i++) {
            checkTokens(prompts.get(i), "prompt " + i);
            if (prompts.get(i).length + options.maxNewTokens() > maxSequence) {
                throw new IllegalArgumentException("prompt " + i + " has " + prompts.get(i).length
                        + " tokens; with maxNewTokens " + options.maxNewTokens() + " it needs "
                        + (prompts.get(i).length + options.maxNewTokens()) + " positions, more than maxSequence "
                        + maxSequence);
            }
        }
        int[] stops = options.stopTokens() != null ? options.stopTokens()
                : config.eosTokenIds().stream().limit(MAX_STOP_TOKENS).mapToInt(Integer::intValue).toArray();
        stream.synchronize();
        writeControl(prompts, options, stops);
        for (int i = 0; i < batch; i++) {
            queuePrefill(i, prompts.get(i).length);
        }
        TokenStream tokens = new TokenStream(batch, options.maxNewTokens(), stops, options.listener());
        switch (options.mode()) {
            case EAGER -> stepByStep(batch, tokens, null);
            case GRAPH_PER_STEP -> stepByStep(batch, tokens, graph(DecodeMode.GRAPH_PER_STEP, batch));
            case DEVICE_LOOP -> deviceLoop(batch, tokens);
        }
        return tokens.results();
    }

    /**
     * The logits of the next token after {@code prompt} and after each token of {@code continuation}
     * fed in turn (teacher forcing): the prompt is prefilled as a generation's is, and each
     * continuation token is one single-row decode step, so the result checks both paths.
     *
     * @param prompt at least one token id
     * @param continuation token ids to feed after the prompt, possibly none
     * @return {@code continuation.length + 1} rows of {@code vocab_size} FP32 logits
     * @throws IllegalArgumentException if a token is out of range or the sequence is longer than
     *     {@link #maxSequence()}
     */
    public synchronized float[][] scoreLogits(int[] prompt, int[] continuation) {
        checkOpen();
        checkTokens(prompt, "prompt");
        Objects.requireNonNull(continuation, "continuation");
        int total = prompt.length + continuation.length;
        if (total > maxSequence) {
            throw new IllegalArgumentException("prompt and continuation are " + total + " tokens, more than maxSequence "
                    + maxSequence);
        }
        int[] all = Arrays.copyOf(prompt, total);
        System.arraycopy(continuation, 0, all, prompt.length, continuation.length);
        checkTokens(all, "continuation");
        stream.synchronize();
        writePrefillMeta(0, all);
        float[][] out = new float[continuation.length + 1][];
        int lastRows = queuePrompt(0, prompt.length);
        out[0] = logitsOfRow(lastRows - 1);
        for (int j = 0; j < continuation.length; j++) {
            int row = prompt.length + j;
            queueForward(1, meta(0, 0, row, 1), meta(0, 1, row, 1), meta(0, 2, row, 1));
            out[j + 1] = logitsOfRow(0);
        }
        return out;
    }

    private float[] logitsOfRow(int row) {
        int vocab = config.vocabSize();
        kernels.lmHead(1, x.slice((long) row * config.hiddenSize(), config.hiddenSize()), finalNorm, eps, lmHead,
                logits, vocab, config.hiddenSize()).launch(stream);
        stream.synchronize();
        float[] values = new float[vocab];
        logits.slice(0, vocab).copyTo(values);
        return values;
    }

    private void checkTokens(int[] tokens, String what) {
        Objects.requireNonNull(tokens, what);
        if (tokens.length == 0) {
            throw new IllegalArgumentException(what + " is empty; a prompt needs at least one token");
        }
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] < 0 || tokens[i] >= config.vocabSize()) {
                throw new IllegalArgumentException(what + " has token " + tokens[i] + " at index " + i
                        + ", outside the vocabulary of " + config.vocabSize());
            }
        }
    }

    /** Writes every row's starting state: at its last prompt position, nothing generated yet. */
    private void writeControl(List<int[]> prompts, GenerationOptions options, int[] stops) {
        int batch = prompts.size();
        int[] ints = new int[INT_FIELDS * maxBatch];
        float[] floats = new float[2 * maxBatch];
        long[] seedValues = new long[maxBatch];
        Sampling s = options.sampling();
        for (int i = 0; i < maxBatch; i++) {
            boolean used = i < batch;
            ints[TOKEN * maxBatch + i] = 0;
            ints[POS * maxBatch + i] = used ? prompts.get(i).length - 1 : 0;
            ints[SLOT * maxBatch + i] = i;
            ints[MAX_NEW * maxBatch + i] = options.maxNewTokens();
            ints[DONE * maxBatch + i] = used ? 0 : 1;
            ints[TOP_K * maxBatch + i] = s.isGreedy() ? 1 : s.topK();
            floats[i] = s.isGreedy() ? 0 : s.temperature();
            floats[maxBatch + i] = s.topP();
            seedValues[i] = s.seed() + i;
        }
        controlInts.copyFrom(ints);
        controlFloats.copyFrom(floats);
        seeds.copyFrom(seedValues);
        int[] stopValues = new int[MAX_STOP_TOKENS];
        Arrays.fill(stopValues, -1);
        System.arraycopy(stops, 0, stopValues, 0, stops.length);
        stopIds.copyFrom(stopValues);
        active.copyFrom(new int[] {batch});
        hostCount.segment().fill((byte) 0);
        for (int i = 0; i < batch; i++) {
            writePrefillMeta(i, prompts.get(i));
        }
    }

    private void writePrefillMeta(int sequence, int[] tokens) {
        int[] meta = new int[3 * tokens.length];
        for (int j = 0; j < tokens.length; j++) {
            meta[j] = tokens[j];
            meta[tokens.length + j] = j;
            meta[2 * tokens.length + j] = sequence;
        }
        for (int f = 0; f < 3; f++) {
            meta(sequence, f, 0, tokens.length).copyFrom(Arrays.copyOfRange(meta, f * tokens.length,
                    (f + 1) * tokens.length));
        }
    }

    /** Field {@code f} (token, position, slot) of prefill rows {@code [from, from + rows)} of a sequence. */
    private DeviceBuffer meta(int sequence, int f, int from, int rows) {
        return prefillMeta.slice(((long) f * maxBatch + sequence) * maxSequence + from, rows);
    }

    /** Prefills sequence {@code i}'s prompt, then samples its first token into decode row {@code i}. */
    private void queuePrefill(int i, int promptLength) {
        int lastRows = queuePrompt(i, promptLength);
        DeviceBuffer lastRow = x.slice((long) (lastRows - 1) * config.hiddenSize(), config.hiddenSize());
        kernels.lmHead(1, lastRow, finalNorm, eps, lmHead, logits, config.vocabSize(), config.hiddenSize())
                .launch(stream);
        kernels.samplePartial(1, logits, config.vocabSize(), control, i, candidates, candidateIndices).launch(stream);
        kernels.sampleFinish(1, config.vocabSize(), control, i, candidates, candidateIndices).launch(stream);
    }

    /** Runs the prompt through every layer, {@value #CHUNK} rows a launch; returns the last chunk's rows. */
    private int queuePrompt(int sequence, int promptLength) {
        int rows = 0;
        for (int from = 0; from < promptLength; from += CHUNK) {
            rows = Math.min(CHUNK, promptLength - from);
            queueForward(rows, meta(sequence, 0, from, rows), meta(sequence, 1, from, rows),
                    meta(sequence, 2, from, rows));
        }
        return rows;
    }

    private void queueForward(int rows, DeviceBuffer token, DeviceBuffer pos, DeviceBuffer slot) {
        for (KernelLaunch launch : forward(rows, token, pos, slot)) {
            launch.launch(stream);
        }
    }

    /** Embedding and every layer for {@code rows} rows, leaving the residual stream in {@link #x}. */
    private List<KernelLaunch> forward(int rows, DeviceBuffer token, DeviceBuffer pos, DeviceBuffer slot) {
        LlamaConfig c = config;
        List<KernelLaunch> launches = new ArrayList<>(2 + 5 * layers.length);
        launches.add(kernels.embed(rows, embedding, token, x, c.hiddenSize()));
        for (int i = 0; i < layers.length; i++) {
            Layer l = layers[i];
            launches.add(kernels.qkvRope(rows, x, l.inputNorm(), eps, l.wq(), l.wk(), l.wv(), rope, pos, slot, q,
                    keyCache[i], valueCache[i], shape));
            launches.add(kernels.attention(rows, q, keyCache[i], valueCache[i], pos, slot, attention, shape));
            launches.add(kernels.residual(rows, attention, l.wo(), x, c.hiddenSize(), c.heads() * c.headDim()));
            launches.add(kernels.gateUp(rows, x, l.postNorm(), eps, l.gate(), l.up(), hidden, c.hiddenSize(),
                    c.intermediateSize()));
            launches.add(kernels.residual(rows, hidden, l.down(), x, c.hiddenSize(), c.intermediateSize()));
        }
        return launches;
    }

    /** One decode step of {@code batch} rows: forward, LM head, and the sampled token recorded. */
    private List<KernelLaunch> decodeStep(int batch) {
        List<KernelLaunch> launches = forward(batch, control.token(), control.pos(), field(SLOT));
        int vocab = config.vocabSize();
        launches.add(kernels.lmHead(batch, x, finalNorm, eps, lmHead, logits, vocab, config.hiddenSize()));
        launches.add(kernels.samplePartial(batch, logits, vocab, control, 0, candidates, candidateIndices));
        launches.add(kernels.sampleFinish(batch, vocab, control, 0, candidates, candidateIndices));
        return launches;
    }

    /**
     * Decodes with a host launch per step (every kernel, or one graph), keeping one step queued ahead
     * of the one whose tokens the host is reading.
     */
    private void stepByStep(int batch, TokenStream tokens, GraphExec step) {
        List<KernelLaunch> launches = step == null ? decodeStep(batch) : null;
        try (CudaEvent even = device.createEvent(CudaEvent.Option.DISABLE_TIMING);
                CudaEvent odd = device.createEvent(CudaEvent.Option.DISABLE_TIMING)) {
            // The prefill sampled the first token; each step makes one more.
            stream.synchronize();
            tokens.poll(hostCount.segment(), hostTokens.segment(), maxSequence);
            int steps = tokens.remainingSteps();
            for (int s = 0; s < steps && !tokens.allDone(); s++) {
                if (step == null) {
                    for (KernelLaunch launch : launches) {
                        launch.launch(stream);
                    }
                } else {
                    step.launch(stream);
                }
                CudaEvent done = (s & 1) == 0 ? even : odd;
                done.record(stream);
                if (s > 0) {
                    ((s & 1) == 0 ? odd : even).synchronize();
                    tokens.poll(hostCount.segment(), hostTokens.segment(), maxSequence);
                }
            }
            stream.synchronize();
            tokens.poll(hostCount.segment(), hostTokens.segment(), maxSequence);
        }
    }

    /** Decodes every sequence to its end in one launch, reading tokens as the device writes them. */
    private void deviceLoop(int batch, TokenStream tokens) {
        graph(DecodeMode.DEVICE_LOOP, batch).launch(stream);
        while (!stream.isIdle()) {
            tokens.poll(hostCount.segment(), hostTokens.segment(), maxSequence);
            LockSupport.parkNanos(20_000);
        }
        stream.synchronize();
        tokens.poll(hostCount.segment(), hostTokens.segment(), maxSequence);
    }

    private GraphExec graph(DecodeMode mode, int batch) {
        return graphs.computeIfAbsent(mode, m -> new HashMap<>()).computeIfAbsent(batch, b -> {
            try (CudaGraph step = captureStep(b)) {
                if (mode == DecodeMode.GRAPH_PER_STEP) {
                    return step.instantiate();
                }
                try (CudaGraph loop = CudaGraph.create()) {
                    ConditionalHandle condition = loop.conditionalHandle(0, true);
                    GraphNode start = loop.addKernel(conditionals.set(condition, active));
                    ConditionalNode whileActive = loop.whileLoop(condition, start);
                    CudaGraph body = whileActive.body();
                    GraphNode stepNode = body.addChildGraph(step);
                    body.addKernel(conditionals.set(condition, active), stepNode);
                    return loop.instantiate();
                }
            }
        });
    }

    private CudaGraph captureStep(int batch) {
        List<KernelLaunch> launches = decodeStep(batch);
        try (StreamCapture capture = StreamCapture.begin(stream, CaptureMode.THREAD_LOCAL)) {
            for (KernelLaunch launch : launches) {
                launch.launch(stream);
            }
            return capture.end();
        }
    }

    private DeviceBuffer field(int f) {
        return controlInts.slice((long) f * maxBatch, maxBatch);
    }

    private DeviceBuffer upload(LlamaCheckpoint.Tensor tensor) {
        DeviceBuffer buffer = allocate(ElementType.BFLOAT16, tensor.elementCount());
        buffer.copyFrom(tensor.data());
        return buffer;
    }

    private DeviceBuffer allocate(ElementType type, long length) {
        return own(device.allocate(type, length));
    }

    private <T extends AutoCloseable> T own(T resource) {
        owned.add(resource);
        return resource;
    }

    /** (cos, sin) of {@code p * invFreq[i]} at {@code (p * D/2 + i) * 2}, computed in double. */
    private static float[] ropeTable(double[] inverseFrequencies, int positions) {
        int half = inverseFrequencies.length;
        float[] table = new float[positions * half * 2];
        for (int p = 0; p < positions; p++) {
            for (int i = 0; i < half; i++) {
                double angle = p * inverseFrequencies[i];
                table[(p * half + i) * 2] = (float) Math.cos(angle);
                table[(p * half + i) * 2 + 1] = (float) Math.sin(angle);
            }
        }
        return table;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the decoder is closed");
        }
        if (engine != null) {
            throw new IllegalStateException("the decoder is serving " + engine + "; submit to the engine instead");
        }
    }

    // Continuous batching: GenerationEngine's scheduler thread drives the rows one at a time, while the
    // stream is idle between steps. Each decode row is its own cache slot.

    synchronized void attach(GenerationEngine owner, int[] stops) {
        checkOpen();
        stream.synchronize();
        engine = owner;
        int[] ints = new int[INT_FIELDS * maxBatch];
        for (int i = 0; i < maxBatch; i++) {
            ints[SLOT * maxBatch + i] = i;
            ints[DONE * maxBatch + i] = 1;
            ints[TOP_K * maxBatch + i] = 1;
            ints[MAX_NEW * maxBatch + i] = 1;
        }
        controlInts.copyFrom(ints);
        controlFloats.copyFrom(new float[2 * maxBatch]);
        seeds.copyFrom(new long[maxBatch]);
        int[] stopValues = new int[MAX_STOP_TOKENS];
        Arrays.fill(stopValues, -1);
        System.arraycopy(stops, 0, stopValues, 0, stops.length);
        stopIds.copyFrom(stopValues);
        hostCount.segment().fill((byte) 0);
    }

    synchronized void detach() {
        engine = null;
    }

    /** Starts row {@code row} on a prompt: its state, its prefill, and its first token sampled. */
    synchronized void admit(int row, int[] prompt, int maxNew, Sampling s) {
        checkTokens(prompt, "prompt");
        int[] values = {0, prompt.length - 1, row, 0, maxNew, 0, s.isGreedy() ? 1 : s.topK()};
        for (int f = 0; f < INT_FIELDS; f++) {
            controlInts.slice((long) f * maxBatch + row, 1).copyFrom(new int[] {values[f]});
        }
        controlFloats.slice(row, 1).copyFrom(new float[] {s.isGreedy() ? 0 : s.temperature()});
        controlFloats.slice(maxBatch + row, 1).copyFrom(new float[] {s.topP()});
        seeds.slice(row, 1).copyFrom(new long[] {s.seed()});
        hostCount.segment().setAtIndex(ValueLayout.JAVA_INT, row, 0);
        writePrefillMeta(row, prompt);
        queuePrefill(row, prompt.length);
    }

    /** Ends row {@code row} (a cancelled request), so that steps skip it. */
    synchronized void retire(int row) {
        field(DONE).slice(row, 1).copyFrom(new int[] {1});
    }

    /** One decode step of every row (ended rows are skipped), then waits for it. */
    synchronized void stepAllRows() {
        graph(DecodeMode.GRAPH_PER_STEP, maxBatch).launch(stream);
        stream.synchronize();
    }

    /** Waits for the work queued by {@link #admit}. */
    synchronized void synchronizeStream() {
        stream.synchronize();
    }

    /** How many tokens row {@code row} has published. */
    int published(int row) {
        return (int) INT_ACQUIRE.getAcquire(hostCount.segment(), 4L * row);
    }

    /** Token {@code index} of row {@code row}; valid below {@link #published}. */
    int token(int row, int index) {
        return hostTokens.segment().getAtIndex(ValueLayout.JAVA_INT, (long) row * maxSequence + index);
    }

    /**
     * Frees the graphs, the weights, the cache and the kernels. Idempotent.
     *
     * @throws IllegalStateException if a {@link GenerationEngine} still serves the decoder
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (engine != null) {
            throw new IllegalStateException("the decoder is serving " + engine + "; close the engine first");
        }
        closed = true;
        stream.synchronize();
        for (Map<Integer, GraphExec> byBatch : graphs.values()) {
            for (GraphExec exec : byBatch.values()) {
                exec.close();
            }
        }
        IllegalStateException failure = new IllegalStateException("closing the decoder failed");
        closeAll(owned, failure);
        if (failure.getSuppressed().length > 0) {
            throw failure;
        }
    }

    /** Closes {@code resources} in reverse order, adding each failure to {@code failures}. */
    private static void closeAll(List<AutoCloseable> resources, Throwable failures) {
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                failures.addSuppressed(e);
            }
        }
    }

    @Override
    public String toString() {
        return "LlamaDecoder[" + config.layers() + " layers, hidden " + config.hiddenSize() + ", vocab "
                + config.vocabSize() + ", maxBatch " + maxBatch + ", maxSequence " + maxSequence + ", " + device + "]";
    }

    /** The host's view of the tokens the device has written: what is delivered, and which rows ended. */
    private static final class TokenStream {
        private final int[][] tokens;
        private final int[] count;
        private final boolean[] done;
        private final int maxNew;
        private final int[] stops;
        private final TokenListener listener;

        TokenStream(int batch, int maxNew, int[] stops, TokenListener listener) {
            this.tokens = new int[batch][maxNew];
            this.count = new int[batch];
            this.done = new boolean[batch];
            this.maxNew = maxNew;
            this.stops = stops.clone();
            this.listener = listener;
        }

        /** Reads each row's published count (acquire), then the tokens up to it. */
        void poll(MemorySegment counts, MemorySegment values, int stride) {
            for (int row = 0; row < tokens.length; row++) {
                int published = (int) INT_ACQUIRE.getAcquire(counts, 4L * row);
                while (count[row] < published && count[row] < maxNew) {
                    int token = values.getAtIndex(ValueLayout.JAVA_INT, (long) row * stride + count[row]);
                    tokens[row][count[row]++] = token;
                    if (listener != null) {
                        listener.onToken(row, token);
                    }
                    if (count[row] >= maxNew || contains(stops, token)) {
                        done[row] = true;
                    }
                }
            }
        }

        boolean allDone() {
            for (boolean d : done) {
                if (!d) {
                    return false;
                }
            }
            return true;
        }

        int remainingSteps() {
            int least = maxNew;
            for (int c : count) {
                least = Math.min(least, c);
            }
            return maxNew - least;
        }

        List<int[]> results() {
            List<int[]> out = new ArrayList<>(tokens.length);
            for (int row = 0; row < tokens.length; row++) {
                out.add(Arrays.copyOf(tokens[row], count[row]));
            }
            return out;
        }

        private static boolean contains(int[] values, int value) {
            for (int v : values) {
                if (v == value) {
                    return true;
                }
            }
            return false;
        }
    }
}
