package org.cudagraph4j.benchmarks.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.llm.LlamaConfig;
import org.cudagraph4j.llm.LlamaDecoder;
import org.cudagraph4j.serving.ServingOptions;
import jdk.jfr.Recording;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The inference server's command line: serves a model file (FP32, FP16 or BF16, as the file holds
 * it), a Llama checkpoint for text generation ({@code --llama}, on the GPU), or both, until
 * {@code SIGTERM} or {@code SIGINT}, then stops gracefully and exits 0; or writes a random model
 * file ({@code --generate}, in {@code --dtype}).
 *
 * <p>{@code --help} prints the options to stdout and exits 0; an unknown or invalid option is one
 * line on stderr and exit 2; a model file that cannot be read is one line on stderr and exit 1.
 */
@Command(name = "InferenceServer", mixinStandardHelpOptions = true, sortOptions = false,
        versionProvider = ServerCommand.Version.class,
        description = "Serves an MLP (.safetensors, FP32, FP16 or BF16) over the Open Inference Protocol (KServe v2 "
                + "REST), JSON or binary tensor data, on the GPU through cudagraph4j's serving engine or on the CPU; "
                + "and/or a Llama checkpoint on the GPU through the protocol's generate extension.")
public final class ServerCommand implements Callable<Integer> {
    /** Where the model runs. */
    enum Backend { gpu, cpu }

    /** The element type of a generated model, by its protocol name. */
    enum Dtype {
        FP32(ElementType.FLOAT32), FP16(ElementType.FLOAT16), BF16(ElementType.BFLOAT16);

        final ElementType type;

        Dtype(ElementType type) {
            this.type = type;
        }
    }

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Option(names = "--model", paramLabel = "FILE",
            description = "The model to serve (.safetensors), in the dtype the file holds: F32, F16 or BF16.")
    Path model;

    @Option(names = "--generate", paramLabel = "FILE",
            description = "Write a random model of --width and --layers to FILE instead of serving.")
    Path generate;

    @Option(names = "--width", defaultValue = "512", description = "With --generate: values per row (${DEFAULT-VALUE}).")
    int width;

    @Option(names = "--layers", defaultValue = "16", description = "With --generate: Linear+ReLU layers (${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--seed", defaultValue = "42", description = "With --generate: the random seed (${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--dtype", defaultValue = "FP32", paramLabel = "FP32|FP16|BF16",
            description = "With --generate: the weights' type; FP16 and BF16 round the FP32 weights to nearest "
                    + "(${DEFAULT-VALUE}).")
    Dtype dtype;

    @Option(names = "--name", defaultValue = "mlp", description = "The model's name in the URLs (${DEFAULT-VALUE}).")
    String name;

    @Option(names = "--llama", paramLabel = "DIR",
            description = "A Llama checkpoint to serve for text generation (POST /v2/models/NAME/generate and "
                    + "generate_stream): config.json, model.safetensors (BF16) and tokenizer.json. GPU backend only; "
                    + "it runs on the first GPU of --devices.")
    Path llama;

    @Option(names = "--llama-name", paramLabel = "NAME",
            description = "The Llama model's name in the URLs (the checkpoint directory's name).")
    String llamaName;

    @Option(names = "--llama-batch", defaultValue = "8", paramLabel = "N",
            description = "Sequences the Llama model decodes at once (${DEFAULT-VALUE}).")
    int llamaBatch;

    @Option(names = "--llama-max-sequence", defaultValue = "2048", paramLabel = "N",
            description = "Tokens per sequence, prompt and generated together, at most the checkpoint's "
                    + "max_position_embeddings (${DEFAULT-VALUE}).")
    int llamaMaxSequence;

    @Option(names = "--llama-queue", defaultValue = "64", paramLabel = "N",
            description = "Generate requests that wait for a free sequence before a 503 (${DEFAULT-VALUE}).")
    int llamaQueue;

    @Option(names = "--host", defaultValue = "127.0.0.1",
            description = "The address to listen on; 0.0.0.0 for every interface (${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "8000", description = "The TCP port; 0 for any free one (${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--backend", defaultValue = "gpu", description = "gpu or cpu (${DEFAULT-VALUE}).")
    Backend backend;

    @Option(names = "--devices", defaultValue = "all", paramLabel = "all|I,J,...",
            description = "The GPUs: all, or ordinals separated by commas; one number is one GPU's ordinal, not a "
                    + "count (${DEFAULT-VALUE}).")
    String devices;

    @Option(names = "--queue-capacity", paramLabel = "N",
            description = "Request pieces the engine queues before it answers 503 (the engine's default, 4096).")
    Integer queueCapacity;

    @Option(names = "--max-body-bytes", paramLabel = "N", description = "The largest request body; more is a 413.")
    long maxBodyBytes = ServerLimits.defaults().maxBodyBytes();

    @Option(names = "--max-buffered-bytes", paramLabel = "N",
            description = "Memory held at once by all inference requests: bodies as they arrive, then each "
                    + "request's whole footprint (body, parsed values, output, encoded answer) reckoned from its "
                    + "size until its answer is written; past it a 503 (256 MiB, at most half the heap).")
    long maxBufferedBytes = ServerLimits.defaults().maxBufferedBytes();

    @Option(names = "--max-rows", paramLabel = "N", description = "Rows per request; more is a 400.")
    int maxRows = ServerLimits.defaults().maxRows();

    @Option(names = "--max-elements", paramLabel = "N", description = "Values per request; more is a 400.")
    long maxElements = ServerLimits.defaults().maxElements();

    @Option(names = "--max-in-flight", paramLabel = "N",
            description = "Inference requests whose body has arrived, at once; past it a 503 (1024).")
    int maxInFlight = ServerLimits.defaults().maxInFlight();

    @Option(names = "--max-connections", paramLabel = "N",
            description = "TCP connections open at once; past it new ones wait in the listen backlog (10000).")
    int maxConnections = ServerLimits.defaults().maxConnections();

    @Option(names = "--request-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long a request waits for its answer before a 503; its rows leave the engine's "
                    + "queue, and on the CPU its computation stops (60s).")
    Duration requestTimeout = ServerLimits.defaults().requestTimeout();

    @Option(names = "--read-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long a request's body may take to arrive (30s).")
    Duration readTimeout = ServerLimits.defaults().readTimeout();

    @Option(names = "--flight-recording", paramLabel = "FILE",
            description = "Records the engine's and the server's Flight Recorder events (a batch, a queue wait, a "
                    + "request's steps) and writes them to FILE when the server stops.")
    Path flightRecording;

    @Option(names = "--shutdown-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long a stop lets requests in flight finish (10s).")
    Duration shutdownTimeout = ServerLimits.defaults().shutdownTimeout();

    @Option(names = "--header-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long a connection may take to send a whole request head, from when the server "
                    + "waits for it (connection opened, or previous answer written); then it is closed (10s).")
    Duration headerTimeout = ServerLimits.defaults().headerTimeout();

    @Option(names = "--write-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "How long writing an answer may take; a client that does not read it loses its "
                    + "connection, and its slot and memory are freed (30s).")
    Duration writeTimeout = ServerLimits.defaults().writeTimeout();

    @Option(names = "--compute-threads", paramLabel = "N",
            description = "With --backend cpu: the platform threads that run the model, apart from those that "
                    + "serve HTTP (one per processor).")
    int computeThreads = ServerLimits.defaults().computeThreads();

    /** Counted down when the JVM begins to shut down ({@code SIGTERM}, {@code SIGINT}). */
    private final CountDownLatch stop = new CountDownLatch(1);
    /** Counted down once the server has drained and said so. */
    private final CountDownLatch stopped = new CountDownLatch(1);
    /** Whether the server drained and said so, written before {@link #stopped} is counted down. */
    private volatile boolean graceful;

    /**
     * Runs the command line.
     *
     * @param args the arguments
     * @param out where help and the serving line go
     * @param err where errors go
     * @return the exit status
     */
    static int run(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine line = new CommandLine(new ServerCommand());
        line.setOut(out);
        line.setErr(err);
        line.setParameterExceptionHandler((e, ignored) -> {
            err.println("InferenceServer: " + e.getMessage() + " (see --help)");
            err.flush();
            return 2;
        });
        return line.execute(args);
    }

    /**
     * Parses and checks a command line without running it: what the deployment manifests pass.
     *
     * @param args the arguments
     * @return the command, its options set
     * @throws ParameterException for an unknown or invalid option
     */
    static ServerCommand parse(String... args) {
        ServerCommand command = new ServerCommand();
        new CommandLine(command).parseArgs(args);
        command.check();
        return command;
    }

    /** The limits the options give. */
    ServerLimits limits() {
        try {
            return new ServerLimits(maxBodyBytes, maxBufferedBytes, maxRows, maxElements, maxInFlight, maxConnections,
                    requestTimeout, readTimeout, shutdownTimeout, headerTimeout, writeTimeout, computeThreads);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private void check() {
        CommandLine line = spec.commandLine();
        if (generate != null && (model != null || llama != null)) {
            throw new ParameterException(line, "give --generate FILE alone, or --model FILE and/or --llama DIR to serve");
        }
        if (generate == null && model == null && llama == null) {
            throw new ParameterException(line, "give --model FILE or --llama DIR (to serve), or --generate FILE");
        }
        if (llama != null) {
            if (backend != Backend.gpu) {
                throw new ParameterException(line, "--llama needs the GPU backend (--backend gpu); --backend cpu serves"
                        + " only --model");
            }
            if (llamaBatch < 1 || llamaBatch > LlamaDecoder.MAX_BATCH) {
                throw new ParameterException(line, "--llama-batch must be 1 to " + LlamaDecoder.MAX_BATCH + ", got "
                        + llamaBatch);
            }
            if (llamaMaxSequence < 2) {
                throw new ParameterException(line, "--llama-max-sequence must be at least 2, got " + llamaMaxSequence);
            }
            if (llamaQueue < 0) {
                throw new ParameterException(line, "--llama-queue must not be negative, got " + llamaQueue);
            }
            if (model != null && llamaName().equals(name)) {
                throw new ParameterException(line, "--llama-name " + llamaName() + " is also the --model's --name; "
                        + "the two models need different names");
            }
        }
        if (port < 0 || port > 65535) {
            throw new ParameterException(line, "--port must be 0 to 65535, got " + port);
        }
        if (width < 1 || layers < 1) {
            throw new ParameterException(line, "--width and --layers must be at least 1");
        }
        if (queueCapacity != null && queueCapacity < 1) {
            throw new ParameterException(line, "--queue-capacity must be at least 1, got " + queueCapacity);
        }
        limits();
    }

    @Override
    public Integer call() throws Exception {
        check();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (generate != null) {
            MlpWeights.random(width, layers, seed).withElementType(dtype.type).save(generate);
            out.println("wrote " + generate);
            return 0;
        }
        MlpWeights weights = null;
        if (model != null) {
            try {
                weights = MlpWeights.load(model);
            } catch (IOException | IllegalArgumentException e) {
                err.println("InferenceServer: cannot serve " + model + ": " + reason(e));
                return 1;
            }
        }
        List<CudaDevice> chosen = List.of();
        if (backend == Backend.gpu) {
            List<CudaDevice> all = Cuda.devices();
            if (llama != null && all.isEmpty()) {
                throw new ParameterException(spec.commandLine(), "--llama needs a GPU, and this host has none");
            }
            try {
                chosen = deviceOrdinals(devices, all.size()).stream().map(all::get).toList();
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        TextGenerator generator = null;
        String generatorWhere = null;
        if (llama != null) {
            CudaDevice device = chosen.getFirst();
            LlamaDecoder decoder = null;
            int maxSequence;
            try {
                maxSequence = Math.min(llamaMaxSequence, LlamaConfig.read(llama.resolve("config.json"))
                        .maxPositionEmbeddings());
                decoder = LlamaDecoder.load(device, llama, llamaBatch, maxSequence);
                generator = LlamaGenerator.start(llamaName(), decoder, llamaQueue);
            } catch (UncheckedIOException | IllegalArgumentException e) {
                if (decoder != null) {
                    decoder.close();
                }
                err.println("InferenceServer: cannot serve " + llama + ": " + e.getMessage());
                return 1;
            }
            generatorWhere = "GPU " + device.ordinal() + " (" + device.properties().name() + "), text generation of "
                    + llamaBatch + " sequences of up to " + maxSequence + " tokens";
        }
        InferenceBackend served = null;
        String where = null;
        if (weights != null && backend == Backend.cpu) {
            served = new CpuBackend(weights, computeThreads);
            where = "the CPU";
        } else if (weights != null) {
            ServingOptions options = ServingOptions.defaults();
            if (queueCapacity != null) {
                options = options.withQueueCapacity(queueCapacity);
            }
            served = new EngineBackend(chosen, weights, options);
            where = String.join(", ", chosen.stream()
                    .map(d -> "GPU " + d.ordinal() + " (" + d.properties().name() + ")").toList());
        }
        Recording recording = flightRecording == null ? null : record();
        InferenceServer server = new InferenceServer(served == null ? null : name, served, generator, host, port,
                limits());
        // A shutdown hook, not a signal handler: SIGTERM and SIGINT start the JVM's shutdown, which
        // runs the hook; it lets the main thread drain the server, then ends the process.
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("InferenceServer-stop").unstarted(() -> {
            stop.countDown();
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (graceful) {
                // The JVM would otherwise exit 143 (130 for SIGINT); the stop drained the server, so 0.
                Runtime.getRuntime().halt(0);
            }
        }));
        try {
            String url = "http://" + host + ":" + server.port();
            if (served != null) {
                out.println("serving " + name + " on " + url + " on " + where);
            }
            if (generator != null) {
                out.println("serving " + generator.name() + " on " + url + " on " + generatorWhere);
            }
            out.flush();
            stop.await();
            boolean drained = server.shutdown();
            if (recording != null) {
                recording.stop();
                recording.dump(flightRecording);
                recording.close();
            }
            out.println("stopped" + (drained ? "" : "; some requests did not finish within " + shutdownTimeout
                    + " and were answered 503"));
            out.flush();
            graceful = true;
            return 0;
        } finally {
            stopped.countDown(); // the hook ends the process; after a failure, with the failure's status
        }
    }

    /** The Llama model's name: {@code --llama-name}, else the checkpoint directory's name. */
    String llamaName() {
        if (llamaName != null) {
            return llamaName;
        }
        Path directory = llama.toAbsolutePath().normalize().getFileName();
        return directory == null ? "llama" : directory.toString();
    }

    private static final long MAX_RECORDING_BYTES = 256L << 20;

    /** A recording of the engine's and the server's events only, each at every occurrence. */
    private static Recording record() {
        Recording recording = new Recording();
        for (String event : List.of("org.cudagraph4j.serving.Batch", "org.cudagraph4j.serving.QueueWait",
                "org.cudagraph4j.server.Infer")) {
            recording.enable(event).withoutThreshold();
        }
        recording.setToDisk(true);
        recording.setMaxSize(MAX_RECORDING_BYTES); // a ring: a long run keeps its latest requests
        recording.start();
        return recording;
    }

    /**
     * Why a model file could not be read, in words: the file system's exceptions carry only the
     * path as their message, which the line already names.
     */
    static String reason(Exception e) {
        return switch (e) {
            case NoSuchFileException missing -> "no such file";
            case AccessDeniedException denied -> "permission denied";
            case FileSystemException other when other.getReason() != null -> other.getReason();
            default -> e.getMessage();
        };
    }

    /**
     * The GPU ordinals that {@code --devices} names: {@code all}, or ordinals separated by commas.
     *
     * @param spec the option's value
     * @param available how many GPUs the host has
     * @return the ordinals, in the order given
     * @throws IllegalArgumentException saying what is wrong with {@code spec}
     */
    static List<Integer> deviceOrdinals(String spec, int available) {
        if (available < 1) {
            throw new IllegalArgumentException("--devices " + spec + ": this host has no GPU (serve on the CPU with"
                    + " --backend cpu)");
        }
        if (spec.equals("all")) {
            return IntStream.range(0, available).boxed().toList();
        }
        List<Integer> ordinals = new ArrayList<>();
        for (String item : spec.split(",", -1)) {
            if (!item.strip().matches("\\d{1,9}")) {
                throw new IllegalArgumentException("--devices takes all, or GPU ordinals separated by commas such as "
                        + "0 or 0,1; got \"" + spec + "\"");
            }
            int ordinal = Integer.parseInt(item.strip());
            if (ordinal >= available) {
                throw new IllegalArgumentException("--devices names GPU " + ordinal + ", but this host has "
                        + available + " GPU(s), ordinals 0 to " + (available - 1));
            }
            if (ordinals.contains(ordinal)) {
                throw new IllegalArgumentException("--devices names GPU " + ordinal + " twice");
            }
            ordinals.add(ordinal);
        }
        return List.copyOf(ordinals);
    }

    /** Durations as {@code 500ms}, {@code 10s}, {@code 2m}, {@code 1h} or ISO-8601 ({@code PT10S}). */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        private static final Pattern SIMPLE = Pattern.compile("(\\d{1,9})(ms|s|m|h)");

        @Override
        public Duration convert(String value) {
            Matcher simple = SIMPLE.matcher(value.strip());
            if (simple.matches()) {
                long amount = Long.parseLong(simple.group(1));
                return switch (simple.group(2)) {
                    case "ms" -> Duration.ofMillis(amount);
                    case "s" -> Duration.ofSeconds(amount);
                    case "m" -> Duration.ofMinutes(amount);
                    default -> Duration.ofHours(amount);
                };
            }
            try {
                return Duration.parse(value.strip());
            } catch (DateTimeParseException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a duration such as 500ms, 10s, "
                        + "2m or PT10S");
            }
        }
    }

    /** The library's version, for {@code --version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"InferenceServer (cudagraph4j " + Cuda.libraryVersion() + ")"};
        }
    }
}
