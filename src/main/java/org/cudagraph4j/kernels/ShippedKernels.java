package org.cudagraph4j.kernels;

import java.util.List;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaLibrary;
import org.cudagraph4j.DeviceProperties;
import org.cudagraph4j.ElementType;

/**
 * The sgemm and bias+ReLU kernels shipped inside the cudagraph4j jar, loaded for one device: the
 * cubin built for its architecture, or the PTX when no cubin fits (the driver compiles it).
 *
 * <pre>{@code
 * try (ShippedKernels kernels = ShippedKernels.load(device)) {
 *     kernels.sgemm().multiply(stream, GemmOperands.linearCombination(m, n, k, 1f, a, b, false, 0f, c), null);
 * }
 * }</pre>
 *
 * <p>Thread safety: safe to share; its operations may be called from several threads.
 */
public final class ShippedKernels implements AutoCloseable {
    /** Dynamic shared memory a kernel may use without opting in. */
    private static final int DEFAULT_SHARED_MEM_BYTES = 48 * 1024;

    private final CudaDevice device;
    private final String image;
    private final CudaLibrary library;
    private final List<GemmConfig> configs;
    private final KernelManifest manifest;
    private final int multiprocessorCount;
    private final SgemmTuning tuning;

    private ShippedKernels(CudaDevice device, DeviceProperties properties, String image, CudaLibrary library,
            KernelManifest manifest) {
        this.device = device;
        this.image = image;
        this.library = library;
        // Instances that need more shared memory than a block of this device may have (the large
        // tensor-core tile on sm_86, sm_89 and sm_120) are left out, so that no choice can take them.
        this.configs = manifest.gemmConfigs(image).stream()
                .filter(c -> c.sharedMemBytes() <= properties.sharedMemPerBlockOptinBytes())
                .toList();
        this.manifest = manifest;
        this.multiprocessorCount = properties.multiprocessorCount();
        this.tuning = SgemmTuning.load();
        for (GemmConfig config : configs) {
            if (config.sharedMemBytes() > DEFAULT_SHARED_MEM_BYTES) {
                library.kernel(config.kernelName()).setMaxDynamicSharedMemory(device, config.sharedMemBytes());
            }
        }
    }

    /**
     * Loads the image that fits {@code device}.
     *
     * @param device the device whose compute capability picks the image
     * @return the loaded kernels, which the caller closes
     * @throws IllegalStateException if no shipped image runs on the device's architecture, or the jar has no
     *     kernels manifest
     */
    public static ShippedKernels load(CudaDevice device) {
        KernelManifest manifest = KernelManifest.load();
        DeviceProperties properties = device.properties();
        String image = manifest.imageFor(properties.major(), properties.minor());
        CudaLibrary library = CudaLibrary.loadResource(ShippedKernels.class, KernelManifest.RESOURCE_DIR + image);
        try {
            return new ShippedKernels(device, properties, image, library, manifest);
        } catch (RuntimeException e) {
            library.close();
            throw e;
        }
    }

    /**
     * The device the kernels were loaded for.
     *
     * @return the device given to {@link #load}
     */
    public CudaDevice device() {
        return device;
    }

    /**
     * The file loaded.
     *
     * @return its name in the jar, e.g. {@code cg4j_kernels.sm_90.cubin} or {@code cg4j_kernels.compute_120.ptx}
     */
    public String image() {
        return image;
    }

    int multiprocessorCount() {
        return multiprocessorCount;
    }

    SgemmTuning tuning() {
        return tuning;
    }

    /**
     * The shipped sgemm instances that run on this device.
     *
     * @return every instance of the loaded image whose shared memory fits a block of the device, unmodifiable
     */
    public List<GemmConfig> gemmConfigs() {
        return configs;
    }

    /**
     * Matrix products on these kernels.
     *
     * @return a new {@link Sgemm}, valid while these kernels are open
     */
    public Sgemm sgemm() {
        return new Sgemm(this, false, MathMode.FP32);
    }

    /**
     * The standalone FP32 bias+ReLU epilogue on these kernels.
     *
     * @return a new {@link BiasRelu}, valid while these kernels are open
     * @throws IllegalStateException if these kernels are closed
     */
    public BiasRelu biasRelu() {
        return biasRelu(ElementType.FLOAT32);
    }

    /**
     * The standalone bias+ReLU epilogue for matrices of {@code type}: FP32, or FP16 and BF16, which
     * it sums in FP32 and rounds once to nearest even.
     *
     * @param type {@link ElementType#FLOAT32}, {@link ElementType#FLOAT16} or {@link ElementType#BFLOAT16}
     * @return a new {@link BiasRelu}, valid while these kernels are open
     * @throws IllegalArgumentException if no shipped epilogue takes {@code type}
     * @throws IllegalStateException if these kernels are closed
     */
    public BiasRelu biasRelu(ElementType type) {
        return new BiasRelu(library.kernel(manifest.epilogueKernel(type)), type);
    }

    /**
     * The half-precision GEMV with bias+ReLU for small batches of a {@link Linear} layer of {@code type}.
     *
     * @throws IllegalArgumentException if {@code type} is not FLOAT16 or BFLOAT16
     * @throws IllegalStateException if these kernels are closed
     */
    HalfGemv halfGemv(ElementType type) {
        return new HalfGemv(manifest.halfGemvKernels(type).stream()
                .map(instance -> new HalfGemv.Instance(library.kernel(instance.name()), instance)).toList(), type);
    }

    /**
     * The library the kernels were loaded into, for direct launches and graph nodes.
     *
     * @return the library, which {@link #close()} closes
     */
    public CudaLibrary library() {
        return library;
    }

    /** Unloads the kernels once no executable graph still uses them. Idempotent. */
    @Override
    public void close() {
        library.close();
    }
}
