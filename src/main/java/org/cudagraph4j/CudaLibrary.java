package org.cudagraph4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.internal.Libraries;
import org.cudagraph4j.internal.image.ImageValidator;
import org.cudagraph4j.internal.lifetime.Lifetime;
import org.cudagraph4j.internal.lifetime.LiveCounters;

/**
 * Device code loaded with {@code cudaLibraryLoadData}: a cubin, a fatbin or PTX. A library is not
 * tied to a device or context; the runtime loads it into each device's context on first use.
 *
 * <p>Kernels keep their library alive: closing the library makes {@link #kernel} unusable, but the
 * image stays loaded while an executable graph still needs one of its kernels.
 *
 * <p>Thread safety: safe to use from several threads; {@link #close()} must not race with other
 * calls.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__LIBRARY.html">Library management</a>
 */
public final class CudaLibrary extends NativeResource {
    private final String source;
    private final MemorySegment handle;
    private final Map<String, CudaKernel> kernels = new ConcurrentHashMap<>();
    /** The image as loaded, without the NUL the library appends; alive while the library is. */
    private final MemorySegment image;
    private volatile String contentHash;

    private CudaLibrary(String source, Loaded loaded) {
        super(loaded.lifetime());
        this.source = source;
        this.handle = loaded.handle();
        this.image = loaded.image();
    }

    /** A library the runtime loaded, with its image and the lifetime that unloads it. */
    private record Loaded(MemorySegment handle, MemorySegment image, Lifetime lifetime) {}

    private static Loaded loadImage(String source, byte[] image) {
        Arena imageMemory = Arena.ofShared();
        // PTX must be NUL-terminated; a trailing zero after a cubin or fatbin is harmless.
        MemorySegment nativeImage = imageMemory.allocate(image.length + 1L, 16);
        MemorySegment.copy(MemorySegment.ofArray(image), 0, nativeImage, 0, image.length);
        MemorySegment loaded;
        try {
            loaded = Libraries.load(nativeImage, source);
        } catch (RuntimeException e) {
            imageMemory.close();
            throw e;
        }
        // The free action must not reach the library object, or the cleaner could never run.
        Lifetime lifetime = new Lifetime(LiveCounters.Kind.LIBRARY, nativeImage.byteSize(), "CudaLibrary " + source,
                () -> {
                    try {
                        Libraries.unload(loaded);
                    } finally {
                        imageMemory.close();
                    }
                });
        return new Loaded(loaded, nativeImage.asSlice(0, image.length), lifetime);
    }

    /**
     * Loads a cubin, fatbin or PTX image. The image is checked first: the runtime takes no length
     * and trusts the image's own headers, so a truncated or corrupt image is refused here, with an
     * {@link IllegalArgumentException} naming what is wrong, before the driver can read past it. A
     * fatbin's compressed entries (nvcc's default: zstd; LZ4 with {@code --compress-mode=speed})
     * are decompressed and checked here too, and the driver gets the fatbin uncompressed.
     * With lazy loading (the CUDA 13 default) the runtime may report other faults only at the
     * first kernel lookup, as a {@link CudaException} then.
     *
     * @param name names the library in errors and in {@link #toString()}
     * @param image the whole cubin, fatbin or PTX file; copied, so it may be reused afterwards
     * @return the loaded library, to be closed when done
     * @throws IllegalArgumentException if the image is empty, truncated or malformed
     * @throws CudaException if the runtime refuses the image, e.g. with {@code cudaErrorInvalidPtx}
     */
    public static CudaLibrary load(String name, byte[] image) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(image, "image");
        return new CudaLibrary(name, loadImage(name, ImageValidator.prepare(name, image)));
    }

    /**
     * Loads an image from a resource next to {@code anchor}, as {@link Class#getResourceAsStream}
     * resolves it. On the class path, or for a resource in a package that {@code anchor}'s module
     * opens, this is all it takes; a resource in a named module's encapsulated package can only be
     * read by that module: use {@link #loadResource(MethodHandles.Lookup, String)} there.
     *
     * @param anchor the class the resource name is resolved against
     * @param resource the resource name: relative to {@code anchor}'s package, or absolute with a leading
     *     {@code /}; it also names the library, as in {@link #load}
     * @return the loaded library, to be closed when done
     * @throws IllegalArgumentException if the resource cannot be found, or is not a valid image
     */
    public static CudaLibrary loadResource(Class<?> anchor, String resource) {
        Objects.requireNonNull(anchor, "anchor");
        return load(resource, read(resource, anchor.getName(), () -> anchor.getResourceAsStream(resource)));
    }

    /**
     * Loads an image from a resource of the caller's own module, read with the caller's rights:
     * {@code CudaLibrary.loadResource(MethodHandles.lookup(), "kernels.cubin")} works from a named
     * module without opening any package. The name resolves as {@link Class#getResourceAsStream}
     * does from the lookup class.
     *
     * @param caller a lookup with full privilege, from {@link MethodHandles#lookup()}
     * @param resource the resource name: relative to the lookup class's package, or absolute with a
     *     leading {@code /}; it also names the library, as in {@link #load}
     * @return the loaded library, to be closed when done
     * @throws IllegalArgumentException if the resource cannot be found, or is not a valid image
     */
    public static CudaLibrary loadResource(MethodHandles.Lookup caller, String resource) {
        Objects.requireNonNull(caller, "caller");
        Objects.requireNonNull(resource, "resource");
        MethodHandle getResource;
        try {
            // Class.getResourceAsStream is caller-sensitive: through the caller's lookup, the caller is
            // the lookup class, so its module's encapsulated resources are readable.
            getResource = caller.findVirtual(Class.class, "getResourceAsStream",
                    MethodType.methodType(InputStream.class, String.class));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot look up Class.getResourceAsStream through " + caller, e);
        }
        Class<?> anchor = caller.lookupClass();
        return load(resource, read(resource, anchor.getName(), () -> {
            try {
                return (InputStream) getResource.invokeExact(anchor, resource);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
        }));
    }

    private static byte[] read(String resource, String anchorName, Supplier<InputStream> open) {
        try (InputStream in = open.get()) {
            if (in == null) {
                throw new IllegalArgumentException("no resource " + resource + " next to " + anchorName
                        + " (in a named module, pass MethodHandles.lookup() instead of a class, or open its package)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + resource, e);
        }
    }

    /**
     * The SHA-256 of the image's bytes, as given to {@link #load}: what identifies the code of this
     * library's kernels, for instance in a {@link org.cudagraph4j.graph.GraphArchive}. Computed on
     * the first call.
     *
     * @return 64 lowercase hexadecimal digits
     * @throws IllegalStateException if this library is closed
     */
    public String contentHash() {
        lifetime().ensureOpen();
        String hash = contentHash;
        if (hash == null) {
            try {
                MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
                sha256.update(image.asByteBuffer());
                hash = HexFormat.of().formatHex(sha256.digest());
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("every Java platform has SHA-256", e);
            }
            contentHash = hash;
        }
        return hash;
    }

    /**
     * Looks up the kernel with this (unmangled, for {@code extern "C"}) name. Each name is looked up
     * once; later calls return the same object.
     *
     * @param name the kernel's symbol
     * @return the kernel, valid while this library is open
     * @throws IllegalStateException if the library is closed
     * @throws CudaException with {@code cudaErrorSymbolNotFound} if there is none
     */
    public CudaKernel kernel(String name) {
        lifetime().ensureOpen();
        return kernels.computeIfAbsent(name, n -> new CudaKernel(this, Libraries.kernel(handle, n), n));
    }

    /**
     * {@return the compiled name of every kernel in the library, mangled for C++ kernels}
     *
     * @throws IllegalStateException if the library is closed
     */
    public List<String> kernelNames() {
        lifetime().ensureOpen();
        List<String> names = new ArrayList<>();
        for (MemorySegment kernel : Libraries.kernels(handle)) {
            names.add(Libraries.name(kernel));
        }
        return List.copyOf(names);
    }

    /** {@return where the image came from, as given at load: the name or resource} */
    public String source() {
        return source;
    }

    /**
     * {@return the {@code cudaLibrary_t}, for interop; valid until closed}
     *
     * @throws IllegalStateException if the library is closed
     */
    public MemorySegment handle() {
        lifetime().ensureOpen();
        return handle;
    }
}
