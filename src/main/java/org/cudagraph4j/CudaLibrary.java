package org.cudagraph4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.cudagraph4j.internal.Libraries;
import org.cudagraph4j.internal.Lifetime;

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
public final class CudaLibrary implements AutoCloseable {
    private final String source;
    private final MemorySegment handle;
    private final Arena imageArena;
    private final Lifetime lifetime;
    private final Map<String, CudaKernel> kernels = new ConcurrentHashMap<>();

    private CudaLibrary(String source, byte[] image) {
        this.source = source;
        this.imageArena = Arena.ofShared();
        // PTX must be NUL-terminated; a trailing zero after a cubin or fatbin is harmless.
        MemorySegment nativeImage = imageArena.allocate(image.length + 1L, 16);
        MemorySegment.copy(MemorySegment.ofArray(image), 0, nativeImage, 0, image.length);
        MemorySegment loaded;
        try {
            loaded = Libraries.load(nativeImage, source);
        } catch (RuntimeException e) {
            imageArena.close();
            throw e;
        }
        this.handle = loaded;
        this.lifetime = new Lifetime("CudaLibrary " + source, () -> {
            try {
                Libraries.unload(loaded);
            } finally {
                imageArena.close();
            }
        });
    }

    /**
     * Loads a cubin, fatbin or PTX image. With lazy loading (the CUDA 13 default) the runtime may
     * report a corrupt image only at the first kernel lookup, as a {@link CudaException} then.
     *
     * @param name names the library in errors and in {@link #toString()}
     */
    public static CudaLibrary load(String name, byte[] image) {
        Objects.requireNonNull(image, "image");
        if (image.length == 0) {
            throw new IllegalArgumentException("library image " + name + " is empty");
        }
        return new CudaLibrary(name, image);
    }

    /**
     * Loads an image from a resource, resolved as {@link Class#getResourceAsStream} does from
     * {@code anchor} (so it works for resources in the caller's own module).
     *
     * @throws IllegalArgumentException if there is no such resource
     */
    public static CudaLibrary loadResource(Class<?> anchor, String resource) {
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("no resource " + resource + " next to " + anchor.getName());
            }
            return load(resource, in.readAllBytes());
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + resource, e);
        }
    }

    /**
     * The kernel with this (unmangled, for {@code extern "C"}) name.
     *
     * @throws CudaException with {@code cudaErrorSymbolNotFound} if there is none
     */
    public CudaKernel kernel(String name) {
        lifetime.ensureOpen();
        return kernels.computeIfAbsent(name, n -> new CudaKernel(this, Libraries.kernel(handle, n), n));
    }

    /** Every kernel in the library, by its compiled name. */
    public List<String> kernelNames() {
        lifetime.ensureOpen();
        List<String> names = new ArrayList<>();
        for (MemorySegment kernel : Libraries.kernels(handle)) {
            names.add(Libraries.name(kernel));
        }
        return List.copyOf(names);
    }

    /** Where the image came from, as given at load. */
    public String source() {
        return source;
    }

    /** The {@code cudaLibrary_t}, for interop; valid until closed. */
    public MemorySegment handle() {
        lifetime.ensureOpen();
        return handle;
    }

    public boolean isOpen() {
        return lifetime.isOpen();
    }

    Lifetime lifetime() {
        return lifetime;
    }

    /** Unloads the library once no executable graph needs it. Idempotent. */
    @Override
    public void close() {
        lifetime.close();
    }

    @Override
    public String toString() {
        return lifetime.toString();
    }
}
