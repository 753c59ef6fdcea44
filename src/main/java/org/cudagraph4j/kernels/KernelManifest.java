package org.cudagraph4j.kernels;

import org.cudagraph4j.ElementType;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;

/**
 * The manifest {@code kernels/build.sh} writes beside the cubins: which image serves which
 * architecture, and each kernel instance's tile, threads and shared memory. Pure data, so that
 * cubin selection and configuration choice can be tested without a GPU.
 */
final class KernelManifest {
    static final String RESOURCE_DIR = "/org/cudagraph4j/kernels/";

    private final Properties properties;

    KernelManifest(Properties properties) {
        this.properties = properties;
    }

    static KernelManifest load() {
        try (InputStream in = KernelManifest.class.getResourceAsStream(RESOURCE_DIR + "manifest.properties")) {
            if (in == null) {
                throw new IllegalStateException("the cudagraph4j jar has no kernels manifest at " + RESOURCE_DIR);
            }
            Properties properties = new Properties();
            properties.load(in);
            return new KernelManifest(properties);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The image for a device of compute capability {@code major.minor}: a cubin of the same major
     * version and the highest minor not above the device's (SASS runs on later minors of its
     * major), else PTX for an architecture not above the device's, which the driver compiles.
     *
     * @throws IllegalStateException naming the device and what is shipped, when nothing fits
     */
    String imageFor(int major, int minor) {
        return imageFor("", major, minor);
    }

    /**
     * The image of one module ({@code ""} for the main kernels, {@code "llm."} for the decoder's) that
     * runs on compute capability {@code major.minor}: the cubin of the newest minor of the same major
     * no newer than the device, else the newest PTX no newer than it.
     */
    String imageFor(String module, int major, int minor) {
        String best = null;
        int bestMinor = -1;
        String ptx = null;
        int ptxArch = -1;
        int device = major * 10 + minor;
        for (String arch : properties.getProperty("archs", "").split(",")) {
            if (arch.startsWith("sm_")) {
                int value = Integer.parseInt(arch.substring(3));
                if (value / 10 == major && value % 10 <= minor && value % 10 > bestMinor) {
                    best = properties.getProperty(module + "cubin." + arch);
                    bestMinor = value % 10;
                }
            } else if (arch.startsWith("compute_")) {
                int value = Integer.parseInt(arch.substring(8));
                if (value <= device && value > ptxArch) {
                    ptx = properties.getProperty(module + "ptx." + arch);
                    ptxArch = value;
                }
            }
        }
        if (best != null) {
            return best;
        }
        if (ptx != null) {
            return ptx;
        }
        throw new IllegalStateException("no shipped cubin or PTX runs on compute capability " + major + "." + minor
                + "; cudagraph4j ships " + properties.getProperty("archs") + " (sm_80 or newer is needed)");
    }

    /**
     * The sgemm instances, tiled and GEMV-like, that {@code image} holds: all but those the manifest
     * gives an {@code images} list without it (the wgmma instances, in the sm_90 cubin only).
     *
     * @param image a file name from {@link #imageFor}
     */
    List<GemmConfig> gemmConfigs(String image) {
        List<GemmConfig> configs = new ArrayList<>();
        for (String name : properties.getProperty("kernels", "").split(",")) {
            String images = properties.getProperty("kernel." + name + ".images");
            if (images != null && !List.of(images.split(",")).contains(image)) {
                continue;
            }
            String family = kernel(name, "family");
            boolean gemv = family.startsWith("gemv_");
            if (!gemv && !family.startsWith("sgemm_")) {
                continue;
            }
            // A GEMV instance is never split-K, and always runs its own mainloop in FP32 on the SIMT cores.
            boolean biasRelu = gemv ? family.equals("gemv_bias_relu") : family.startsWith("sgemm_bias_relu");
            boolean splitK = !gemv && family.endsWith("_splitk");
            configs.add(new GemmConfig(name,
                    biasRelu ? GemmConfig.Epilogue.BIAS_RELU : GemmConfig.Epilogue.LINEAR_COMBINATION,
                    integer(name, "tileM"), integer(name, "tileN"), integer(name, "tileK"),
                    integer(name, "stages"), integer(name, "threads"), integer(name, "sharedMemBytes"),
                    kernel(name, "layout").charAt(1) == 'n', integer(name, "alignment"),
                    splitK, 1, splitK ? integer(name, "reductionBatch") : 0,
                    gemv ? GemmConfig.Mainloop.GEMV : mainloop(name), gemv ? MathMode.SIMT_FP32 : math(name)));
        }
        return List.copyOf(configs);
    }

    /** The standalone FP32 bias+ReLU epilogue kernel's name. */
    String epilogueKernel() {
        return epilogueKernel(ElementType.FLOAT32);
    }

    /**
     * The standalone bias+ReLU epilogue kernel's name for matrices of {@code type}.
     *
     * @throws IllegalArgumentException if no epilogue kernel takes {@code type}
     */
    String epilogueKernel(ElementType type) {
        String element = switch (type) {
            case FLOAT32 -> "f32";
            case FLOAT16 -> "f16";
            case BFLOAT16 -> "bf16";
            default -> throw new IllegalArgumentException("the bias+ReLU epilogue takes FLOAT32, FLOAT16 or BFLOAT16"
                    + " matrices, not " + type);
        };
        for (String name : properties.getProperty("kernels", "").split(",")) {
            if (kernel(name, "family").equals("epilogue_bias_relu")
                    && properties.getProperty("kernel." + name + ".element", "f32").equals(element)) {
                return name;
            }
        }
        throw new IllegalStateException("the kernels manifest lists no " + element + " bias+ReLU epilogue kernel");
    }

    /**
     * The half-precision GEMV instances with bias+ReLU for matrices of {@code type}, fewest rows first.
     *
     * @throws IllegalArgumentException if {@code type} is not FLOAT16 or BFLOAT16
     */
    List<HalfGemvKernel> halfGemvKernels(ElementType type) {
        String element = switch (type) {
            case FLOAT16 -> "f16";
            case BFLOAT16 -> "bf16";
            default -> throw new IllegalArgumentException("the half-precision GEMV takes FLOAT16 or BFLOAT16, not "
                    + type);
        };
        List<HalfGemvKernel> instances = new ArrayList<>();
        for (String name : properties.getProperty("kernels", "").split(",")) {
            if (kernel(name, "family").equals("half_gemv_bias_relu")
                    && properties.getProperty("kernel." + name + ".element", "").equals(element)) {
                instances.add(new HalfGemvKernel(name, integer(name, "maxBatch"), integer(name, "threads"),
                        integer(name, "threads") / 32, integer(name, "alignment")));
            }
        }
        if (instances.isEmpty()) {
            throw new IllegalStateException("the kernels manifest lists no " + element + " half-precision GEMV");
        }
        instances.sort(Comparator.comparingInt(HalfGemvKernel::maxBatch));
        return List.copyOf(instances);
    }

    /**
     * A half-precision GEMV instance as the manifest describes it.
     *
     * @param name the kernel's symbol
     * @param maxBatch the most rows of X it takes
     * @param threads threads per block
     * @param outputsPerBlock output features per block: one per warp
     * @param alignment elements per vector load, which K must be a multiple of
     */
    record HalfGemvKernel(String name, int maxBatch, int threads, int outputsPerBlock, int alignment) {}

    /** The manifest's "mainloop" of a tiled instance: absent for the cp.async tiles, "wgmma" for sm_90's. */
    private GemmConfig.Mainloop mainloop(String name) {
        String mainloop = properties.getProperty("kernel." + name + ".mainloop", "tiled");
        return switch (mainloop) {
            case "tiled" -> GemmConfig.Mainloop.TILED;
            case "wgmma" -> GemmConfig.Mainloop.WGMMA;
            default -> throw new IllegalStateException("kernels manifest: " + name + " has an unknown mainloop "
                    + mainloop);
        };
    }

    /** The manifest's "math" of an instance: fp32 (SIMT), 3xtf32 or tf32 (tensor cores). */
    private MathMode math(String name) {
        String math = kernel(name, "math");
        return switch (math) {
            case "fp32" -> MathMode.SIMT_FP32;
            case "3xtf32" -> MathMode.TF32X3;
            case "tf32" -> MathMode.TF32;
            default -> throw new IllegalStateException("kernels manifest: " + name + " has an unknown math " + math);
        };
    }

    private String kernel(String name, String key) {
        String value = properties.getProperty("kernel." + name + "." + key);
        if (value == null) {
            throw new IllegalStateException("kernels manifest: no " + key + " for " + name);
        }
        return value;
    }

    private int integer(String name, String key) {
        return Integer.parseInt(kernel(name, key));
    }
}
