package org.cudagraph4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.cudagraph4j.cudart.cudart_h.*;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.cudagraph4j.cudart.cudaDeviceProp;

/** Device and version queries. The current device is per OS thread, as in the runtime. */
public final class Devices {
    /** The (device, peer) pairs with peer access enabled; access lasts as long as the process. */
    private static final Set<Long> PEERS_ENABLED = ConcurrentHashMap.newKeySet();

    private Devices() {}

    /**
     * The number of CUDA devices the runtime can use.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaGetDeviceCount</a>
     */
    public static int count() {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaGetDeviceCount", null, (arena, count) -> cudaGetDeviceCount(count));
    }

    /**
     * What the runtime can use: the devices it sees, or none and why.
     *
     * @param count the devices, 0 when none can be used
     * @param unavailableReason why none can be used, in words; null when {@code count} is above 0
     */
    public record Visible(int count, String unavailableReason) {}

    /**
     * The devices the runtime can use, with no exception for a machine that has none: a missing
     * driver, a driver older than the runtime and a machine without a GPU are each 0 devices and
     * their reason. Any other failure of {@code cudaGetDeviceCount} is thrown.
     */
    public static Visible visible() {
        CudartLoader.ensureLoaded();
        int status;
        int count;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            status = cudaGetDeviceCount(out);
            count = out.get(JAVA_INT, 0);
        }
        if (status == Status.SUCCESS) {
            return count > 0 ? new Visible(count, null) : new Visible(0, "the NVIDIA driver sees no CUDA device");
        }
        if (status == cudaErrorNoDevice()) {
            return new Visible(0, "no CUDA-capable device is present (cudaErrorNoDevice)");
        }
        if (status == cudaErrorInsufficientDriver()) {
            int driver = driverVersion();
            return new Visible(0, driver == 0 ? "no NVIDIA driver is installed (libcuda.so.1 not found)"
                    : "the NVIDIA driver supports CUDA " + version(driver) + ", older than this runtime's "
                            + version(runtimeVersion()) + " (cudaErrorInsufficientDriver): update the driver");
        }
        Status.check(status, "cudaGetDeviceCount");
        throw new AssertionError("unreachable: the status was not success");
    }

    private static String version(int encoded) {
        return encoded / 1000 + "." + encoded % 1000 / 10;
    }

    /** Per-thread out-parameter of the {@code cudaGetDevice} that {@link #use} asks first. */
    private static final ThreadLocal<MemorySegment> CURRENT = ThreadLocal.withInitial(
            () -> Arena.ofAuto().allocate(JAVA_INT));
    /** The devices the runtime enumerated, which it does once per process; 0 until asked. */
    private static volatile int visibleDevices;

    /**
     * Makes {@code ordinal} current on the calling OS thread. Every call on a stream or graph of a
     * device makes it current, and {@code cudaSetDevice} of the device already current took 45% of
     * a single-node update's Java samples on the H200 (JFR: the downcall with one int argument). So
     * with one device, which is then always current, this does nothing; with several it asks
     * {@code cudaGetDevice}, which only reads the thread's state, and sets only if another device is
     * current, which also catches a library that changed the device behind this one's back.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaSetDevice</a>
     */
    public static void use(int ordinal) {
        HostFunctions.refuseInCallback(ordinal);
        CudartLoader.ensureLoaded();
        if (ordinal == 0 && visibleDevices() == 1) {
            return;
        }
        MemorySegment current = CURRENT.get();
        if (cudaGetDevice(current) == Status.SUCCESS && current.get(JAVA_INT, 0) == ordinal) {
            return;
        }
        Status.check(cudaSetDevice(ordinal), "cudaSetDevice", "device " + ordinal);
    }

    private static int visibleDevices() {
        int devices = visibleDevices;
        if (devices == 0) {
            devices = count(); // throws without a device, and then asks again next time
            visibleDevices = devices;
        }
        return devices;
    }

    /**
     * The device current on the calling OS thread.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaGetDevice</a>
     */
    public static int current() {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaGetDevice", null, (arena, device) -> cudaGetDevice(device));
    }

    /**
     * The loaded runtime's version, as {@code 1000 * major + 10 * minor}.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART____VERSION.html">cudaRuntimeGetVersion</a>
     */
    public static int runtimeVersion() {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaRuntimeGetVersion", null, (arena, version) -> cudaRuntimeGetVersion(version));
    }

    /**
     * The newest runtime the installed driver supports; 0 when no driver is installed.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART____VERSION.html">cudaDriverGetVersion</a>
     */
    public static int driverVersion() {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaDriverGetVersion", null, (arena, version) -> cudaDriverGetVersion(version));
    }

    /** The fields of {@code cudaDeviceProp} the library reports; the root's {@code DeviceProperties} copies them. */
    public record Properties(String name, int major, int minor, int multiprocessorCount, long totalMemoryBytes,
            long sharedMemPerBlockOptinBytes, int l2CacheBytes, int maxThreadsPerBlock, int warpSize) {}

    /**
     * The properties of device {@code ordinal} that the library reports.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaGetDeviceProperties</a>
     */
    public static Properties properties(int ordinal) {
        CudartLoader.ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment prop = cudaDeviceProp.allocate(arena);
            Status.check(cudaGetDeviceProperties(prop, ordinal), "cudaGetDeviceProperties", "device " + ordinal);
            return new Properties(
                    cudaDeviceProp.name(prop).getString(0),
                    cudaDeviceProp.major(prop),
                    cudaDeviceProp.minor(prop),
                    cudaDeviceProp.multiProcessorCount(prop),
                    cudaDeviceProp.totalGlobalMem(prop),
                    cudaDeviceProp.sharedMemPerBlockOptin(prop),
                    cudaDeviceProp.l2CacheSize(prop),
                    cudaDeviceProp.maxThreadsPerBlock(prop),
                    cudaDeviceProp.warpSize(prop));
        }
    }

    /**
     * Whether {@code device} supports cooperative launch ({@code cudaDevAttrCooperativeLaunch}).
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceGetAttribute</a>
     */
    public static boolean supportsCooperativeLaunch(int device) {
        return attribute(device, cudaDevAttrCooperativeLaunch(), "cudaDevAttrCooperativeLaunch") != 0;
    }

    /** Whether {@code device} supports thread-block clusters ({@code cudaDevAttrClusterLaunch}). */
    public static boolean supportsClusterLaunch(int device) {
        return attribute(device, cudaDevAttrClusterLaunch(), "cudaDevAttrClusterLaunch") != 0;
    }

    /**
     * The value of {@code cudaDeviceAttr} {@code attribute}, named {@code name} in errors, for
     * {@code device}; the device need not be current.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceGetAttribute</a>
     */
    public static int attribute(int device, int attribute, String name) {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaDeviceGetAttribute", name + ", device " + device,
                (arena, value) -> cudaDeviceGetAttribute(value, attribute, device));
    }

    /**
     * Whether {@code device} can read and write {@code peer}'s memory directly ({@code cudaDeviceCanAccessPeer}).
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__PEER.html">cudaDeviceCanAccessPeer</a>
     */
    public static boolean canAccessPeer(int device, int peer) {
        CudartLoader.ensureLoaded();
        return Out.intValue("cudaDeviceCanAccessPeer", "device " + device + ", peer " + peer,
                (arena, can) -> cudaDeviceCanAccessPeer(can, device, peer)) != 0;
    }

    /**
     * Lets {@code device} access {@code peer}'s memory ({@code cudaDeviceEnablePeerAccess}, made
     * from {@code device}); already enabled is not an error.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__PEER.html">cudaDeviceEnablePeerAccess</a>
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">cudaGetLastError</a>
     */
    public static void enablePeerAccess(int device, int peer) {
        use(device);
        int status = cudaDeviceEnablePeerAccess(peer, 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled()) {
            cudaGetLastError(); // the runtime also records it as the last error
        } else {
            Status.check(status, "cudaDeviceEnablePeerAccess", "device " + device + ", peer " + peer);
        }
        PEERS_ENABLED.add(peerPair(device, peer));
    }

    /**
     * Whether work on {@code device} may touch memory of {@code memoryDevice}: its own, or a peer's
     * once {@link #enablePeerAccess} allowed it. The runtime cannot be asked; peer access enabled by
     * other code in the process, outside this library, is not seen.
     */
    public static boolean reaches(int device, int memoryDevice) {
        return device == memoryDevice || PEERS_ENABLED.contains(peerPair(device, memoryDevice));
    }

    private static long peerPair(int device, int peer) {
        return (long) device << 32 | peer;
    }

    /**
     * Blocks until all work on the current device is done.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceSynchronize</a>
     */
    public static void synchronize() {
        Status.check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }

    /** Free and total memory of the current device, in bytes. */
    public record MemoryInfo(long freeBytes, long totalBytes) {}

    /**
     * Free and total memory of the current device.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html">cudaMemGetInfo</a>
     */
    public static MemoryInfo memoryInfo() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            Status.check(cudaMemGetInfo(free, total), "cudaMemGetInfo");
            return new MemoryInfo(free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0));
        }
    }

    /** The current device's stream priorities; a greater priority is a lower number. */
    public record PriorityRange(int least, int greatest) {}

    /**
     * The current device's least and greatest stream priorities.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html">cudaDeviceGetStreamPriorityRange</a>
     */
    public static PriorityRange streamPriorityRange() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment least = arena.allocate(JAVA_INT);
            MemorySegment greatest = arena.allocate(JAVA_INT);
            Status.check(cudaDeviceGetStreamPriorityRange(least, greatest), "cudaDeviceGetStreamPriorityRange");
            return new PriorityRange(least.get(JAVA_INT, 0), greatest.get(JAVA_INT, 0));
        }
    }

    /**
     * Reads and clears the calling thread's last launch error.
     *
     * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html">cudaGetLastError</a>
     */
    public static void checkLastError() {
        CudartLoader.ensureLoaded();
        Status.check(cudaGetLastError(), "cudaGetLastError");
    }
}
