package org.cudagraph4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import org.cudagraph4j.error.CudaException;
import org.cudagraph4j.error.CudaRuntimeNotFoundException;
import org.cudagraph4j.internal.CudartLoader;
import org.cudagraph4j.internal.Devices;
import org.cudagraph4j.internal.Memory;

/**
 * Entry point: versions, devices and pinned host memory.
 *
 * <p>The first call opens {@code libcudart.so.13}, looking in turn at the system property
 * {@code org.cudagraph4j.cudart.path} (a file, or a folder holding the library; when set, it must
 * load), {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64}, the dynamic loader's search path
 * ({@code LD_LIBRARY_PATH}, ld.so.cache) and {@code /usr/local/cuda/lib64}; {@link #runtimeLibrary()}
 * says which file it took. If it cannot be found, every method but {@link #isAvailable()} and
 * {@link #unavailableReason()} throws {@link CudaRuntimeNotFoundException}. A machine with the
 * runtime but no driver, a driver older
 * than the runtime, or no GPU has {@linkplain #deviceCount() no devices}, and
 * {@link #unavailableReason()} says which; {@link #isAvailable()} answers whether a GPU can be
 * used at all without throwing, so that an application can fall back to the CPU.
 *
 * <p>Thread safety: all methods may be called from any thread.
 */
public final class Cuda {
    private Cuda() {}

    /** Read once, from the properties file the build writes the project version into. */
    private static final class LibraryVersion {
        static final String VALUE = read();

        private static String read() {
            try (InputStream in = Cuda.class.getResourceAsStream("version.properties")) {
                Properties properties = new Properties();
                properties.load(Objects.requireNonNull(in, "version.properties is missing from the jar"));
                return properties.getProperty("version");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** {@return the runtime version as {@code 1000 * major + 10 * minor}, e.g. 13000 for CUDA 13.0} */
    public static int runtimeVersion() {
        return Devices.runtimeVersion();
    }

    /**
     * Reports which {@code libcudart} was loaded, from where and by which search step; loads it if needed.
     *
     * @return the runtime's file, the search step that found it and its version
     * @throws CudaRuntimeNotFoundException if no runtime can be loaded
     */
    public static RuntimeLibrary runtimeLibrary() {
        int version = Devices.runtimeVersion();
        Path file = CudartLoader.loadedFile().orElseGet(() -> Path.of(CudartLoader.loadedFrom().orElseThrow()));
        return new RuntimeLibrary(file, CudartLoader.foundBy().orElseThrow(), version);
    }

    /**
     * {@return this library's own version, e.g. {@code 0.1.0}; also the jar manifest's
     * {@code Implementation-Version}}
     */
    public static String libraryVersion() {
        return LibraryVersion.VALUE;
    }

    /**
     * {@return the newest CUDA version the installed driver supports, encoded as in {@link #runtimeVersion()};
     * 0 with no driver}
     */
    public static int driverVersion() {
        return Devices.driverVersion();
    }

    /**
     * {@return the number of CUDA devices the runtime can use ({@code cudaGetDeviceCount}); 0 on a
     * machine without a GPU, without an NVIDIA driver, or with a driver older than the runtime
     * ({@link #unavailableReason()} says which)}
     *
     * @throws CudaRuntimeNotFoundException if no runtime can be loaded
     * @throws CudaException if the driver fails in another way
     */
    public static int deviceCount() {
        return Devices.visible().count();
    }

    /**
     * Whether a CUDA device can be used here: the runtime loads and sees at least one device.
     * Never throws, so that an application can choose its CPU path with a plain {@code if}.
     *
     * @return true when {@link #deviceCount()} is above 0
     */
    public static boolean isAvailable() {
        try {
            return Devices.visible().count() > 0;
        } catch (CudaRuntimeNotFoundException | CudaException e) {
            return false;
        }
    }

    /**
     * Why no CUDA device can be used here, in words: no runtime found (and where it was looked
     * for), no NVIDIA driver installed, a driver too old for the runtime, or no GPU.
     *
     * @return the reason, or empty where {@link #isAvailable()} is true
     */
    public static Optional<String> unavailableReason() {
        try {
            return Optional.ofNullable(Devices.visible().unavailableReason());
        } catch (CudaRuntimeNotFoundException | CudaException e) {
            return Optional.of(e.getMessage()); // all of it: a runtime not found lists every place tried
        }
    }

    /**
     * Gets the device with the given ordinal. Nothing is made current.
     *
     * @param ordinal the device's number, from 0 to {@link #deviceCount()} - 1
     * @return the device; equal to every other object for the same ordinal
     * @throws IllegalArgumentException if there is no such device
     */
    public static CudaDevice device(int ordinal) {
        Devices.Visible visible = Devices.visible();
        if (ordinal < 0 || ordinal >= visible.count()) {
            throw new IllegalArgumentException("no CUDA device " + ordinal + ": this machine has " + visible.count()
                    + (visible.unavailableReason() == null ? "" : ": " + visible.unavailableReason()));
        }
        return new CudaDevice(ordinal);
    }

    /** {@return every device, by ordinal, in an unmodifiable list} */
    public static List<CudaDevice> devices() {
        int count = deviceCount();
        List<CudaDevice> devices = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            devices.add(new CudaDevice(i));
        }
        return List.copyOf(devices);
    }

    /**
     * Reads and clears the calling OS thread's last error ({@code cudaGetLastError}), which is
     * how errors inside asynchronous launches surface before a synchronization reports them.
     *
     * @throws CudaException if an error was pending
     */
    public static void checkLastError() {
        Devices.checkLastError();
    }

    /**
     * Counts the streams, events, buffers (and their bytes), libraries, graphs, executable graphs and
     * argument blocks that are alive now, for leak checks and metrics. Cheap: a few atomic reads.
     *
     * @return a snapshot of the counts; compare two with {@link LiveResources#growthSince}
     */
    public static LiveResources liveResources() {
        return LiveResources.now();
    }

    /**
     * Allocates page-locked host memory, usable by every device. Copies between it and device
     * memory can run asynchronously and at full bus speed.
     *
     * @param byteSize the size in bytes; must be positive
     * @return the memory, to be closed when done
     * @throws IllegalArgumentException if {@code byteSize} is not positive
     * @throws CudaException naming {@code cudaErrorMemoryAllocation} if the host cannot lock that much memory
     */
    public static PinnedBuffer allocatePinned(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("byteSize must be positive, got " + byteSize);
        }
        return new PinnedBuffer(Memory.mallocHost(byteSize), byteSize);
    }
}
