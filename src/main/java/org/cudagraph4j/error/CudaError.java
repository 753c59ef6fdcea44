package org.cudagraph4j.error;

import java.util.HashMap;
import java.util.Map;

/**
 * Every {@code cudaError_t} value of the CUDA 13 runtime, by its Java name, its CUDA name and its
 * code.
 *
 * <p>A test checks each entry against the constants jextract generated from {@code driver_types.h},
 * so this list cannot drift from the headers the bindings were made from. Codes a newer runtime
 * adds map to {@link #UNRECOGNIZED}; {@link CudaException#code()} still carries the raw value.
 *
 * @see <a href="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html">cudaError</a>
 */
public enum CudaError {
    /** The call succeeded; for a query, the queried work has also completed. */
    SUCCESS("cudaSuccess", 0),
    /** An argument was outside the range of values the call accepts. */
    INVALID_VALUE("cudaErrorInvalidValue", 1),
    /** Not enough memory or other resources could be allocated for the call. */
    MEMORY_ALLOCATION("cudaErrorMemoryAllocation", 2),
    /** The CUDA driver and runtime could not be initialized. */
    INITIALIZATION_ERROR("cudaErrorInitializationError", 3),
    /** The call came during process shutdown, after the CUDA driver was unloaded. */
    CUDART_UNLOADING("cudaErrorCudartUnloading", 4),
    /** The profiler is not initialized for this run, e.g. because an external profiling tool is attached. */
    PROFILER_DISABLED("cudaErrorProfilerDisabled", 5),
    /** Deprecated since CUDA 5.0: starting or stopping an uninitialized profiler is no longer an error. */
    PROFILER_NOT_INITIALIZED("cudaErrorProfilerNotInitialized", 6),
    /** Deprecated since CUDA 5.0: starting a running profiler is no longer an error. */
    PROFILER_ALREADY_STARTED("cudaErrorProfilerAlreadyStarted", 7),
    /** Deprecated since CUDA 5.0: stopping a stopped profiler is no longer an error. */
    PROFILER_ALREADY_STOPPED("cudaErrorProfilerAlreadyStopped", 8),
    /** The launch asks for more than the device can ever give: shared memory, threads or blocks. */
    INVALID_CONFIGURATION("cudaErrorInvalidConfiguration", 9),
    /** A pitch argument was outside the range the call accepts. */
    INVALID_PITCH_VALUE("cudaErrorInvalidPitchValue", 12),
    /** The symbol name or identifier passed to the call is not valid. */
    INVALID_SYMBOL("cudaErrorInvalidSymbol", 13),
    /** A host pointer passed to the call is not valid; deprecated since CUDA 10.1. */
    INVALID_HOST_POINTER("cudaErrorInvalidHostPointer", 16),
    /** A device pointer passed to the call is not valid; deprecated since CUDA 10.1. */
    INVALID_DEVICE_POINTER("cudaErrorInvalidDevicePointer", 17),
    /** The texture passed to the call is not valid. */
    INVALID_TEXTURE("cudaErrorInvalidTexture", 18),
    /** The texture binding is not valid, e.g. the texture is not bound. */
    INVALID_TEXTURE_BINDING("cudaErrorInvalidTextureBinding", 19),
    /** The channel descriptor has an unknown format or an invalid dimension. */
    INVALID_CHANNEL_DESCRIPTOR("cudaErrorInvalidChannelDescriptor", 20),
    /** The copy direction is not a {@code cudaMemcpyKind}. */
    INVALID_MEMCPY_DIRECTION("cudaErrorInvalidMemcpyDirection", 21),
    /** Deprecated since CUDA 3.1, which allows taking the address of a constant variable. */
    ADDRESS_OF_CONSTANT("cudaErrorAddressOfConstant", 22),
    /** Deprecated since CUDA 3.1: a texture fetch failed in the removed device emulation mode. */
    TEXTURE_FETCH_FAILED("cudaErrorTextureFetchFailed", 23),
    /** Deprecated since CUDA 3.1: a texture was not bound, in the removed device emulation mode. */
    TEXTURE_NOT_BOUND("cudaErrorTextureNotBound", 24),
    /** Deprecated since CUDA 3.1: a synchronization failed, in the removed device emulation mode. */
    SYNCHRONIZATION_ERROR("cudaErrorSynchronizationError", 25),
    /** A texture not holding floats was read with linear filtering, which CUDA does not support. */
    INVALID_FILTER_SETTING("cudaErrorInvalidFilterSetting", 26),
    /** A data type that CUDA cannot read as a normalized float was read as one. */
    INVALID_NORM_SETTING("cudaErrorInvalidNormSetting", 27),
    /** Deprecated since CUDA 3.1: device code and the removed device emulation code were mixed. */
    MIXED_DEVICE_EXECUTION("cudaErrorMixedDeviceExecution", 28),
    /** Deprecated since CUDA 4.1: the call is not implemented; release builds never report it. */
    NOT_YET_IMPLEMENTED("cudaErrorNotYetImplemented", 31),
    /** Deprecated since CUDA 3.1: an emulated device pointer went past 32 bits. */
    MEMORY_VALUE_TOO_LARGE("cudaErrorMemoryValueTooLarge", 32),
    /** The CUDA driver loaded is a stub library, not a real driver. */
    STUB_LIBRARY("cudaErrorStubLibrary", 34),
    /** The installed driver is older than the runtime, which is not supported; update the driver. */
    INSUFFICIENT_DRIVER("cudaErrorInsufficientDriver", 35),
    /** The call needs a newer driver than the one installed. */
    CALL_REQUIRES_NEWER_DRIVER("cudaErrorCallRequiresNewerDriver", 36),
    /** The surface passed to the call is not valid. */
    INVALID_SURFACE("cudaErrorInvalidSurface", 37),
    /** Global or constant variables in separate CUDA source files share a name. */
    DUPLICATE_VARIABLE_NAME("cudaErrorDuplicateVariableName", 43),
    /** Textures in separate CUDA source files share a name. */
    DUPLICATE_TEXTURE_NAME("cudaErrorDuplicateTextureName", 44),
    /** Surfaces in separate CUDA source files share a name. */
    DUPLICATE_SURFACE_NAME("cudaErrorDuplicateSurfaceName", 45),
    /** Every device is busy or unavailable now: by compute mode, long-running kernels or lack of memory. */
    DEVICES_UNAVAILABLE("cudaErrorDevicesUnavailable", 46),
    /** The current driver-API context is unusable by the runtime: too old, not primary, or destroyed. */
    INCOMPATIBLE_DRIVER_CONTEXT("cudaErrorIncompatibleDriverContext", 49),
    /** The device function was launched without a prior {@code cudaConfigureCall}. */
    MISSING_CONFIGURATION("cudaErrorMissingConfiguration", 52),
    /** Deprecated since CUDA 3.1: an earlier launch failed, in the removed device emulation mode. */
    PRIOR_LAUNCH_FAILURE("cudaErrorPriorLaunchFailure", 53),
    /** A device-side launch would nest grids deeper than supported. */
    LAUNCH_MAX_DEPTH_EXCEEDED("cudaErrorLaunchMaxDepthExceeded", 65),
    /** A device-side launch failed: the kernel uses file-scoped textures instead of texture objects. */
    LAUNCH_FILE_SCOPED_TEX("cudaErrorLaunchFileScopedTex", 66),
    /** A device-side launch failed: the kernel uses file-scoped surfaces instead of surface objects. */
    LAUNCH_FILE_SCOPED_SURF("cudaErrorLaunchFileScopedSurf", 67),
    /** A device-side {@code cudaDeviceSynchronize} ran deeper than {@code cudaLimitDevRuntimeSyncDepth}. */
    SYNC_DEPTH_EXCEEDED("cudaErrorSyncDepthExceeded", 68),
    /** A device-side launch would exceed {@code cudaLimitDevRuntimePendingLaunchCount}. */
    LAUNCH_PENDING_COUNT_EXCEEDED("cudaErrorLaunchPendingCountExceeded", 69),
    /** The device function does not exist or was not compiled for this device's architecture. */
    INVALID_DEVICE_FUNCTION("cudaErrorInvalidDeviceFunction", 98),
    /** The driver found no CUDA-capable device. */
    NO_DEVICE("cudaErrorNoDevice", 100),
    /** The device ordinal names no device, or the action is not valid on that device. */
    INVALID_DEVICE("cudaErrorInvalidDevice", 101),
    /** The device has no valid GRID license. */
    DEVICE_NOT_LICENSED("cudaErrorDeviceNotLicensed", 102),
    /** A self-test of the runtime or the driver failed, so their validity is not established. */
    SOFTWARE_VALIDITY_NOT_ESTABLISHED("cudaErrorSoftwareValidityNotEstablished", 103),
    /** The runtime failed internally while starting up. */
    STARTUP_FAILURE("cudaErrorStartupFailure", 127),
    /** The kernel image is not valid. */
    INVALID_KERNEL_IMAGE("cudaErrorInvalidKernelImage", 200),
    /** No context is bound to the calling thread, or the context passed is not valid. */
    DEVICE_UNINITIALIZED("cudaErrorDeviceUninitialized", 201),
    /** A buffer object could not be mapped. */
    MAP_BUFFER_OBJECT_FAILED("cudaErrorMapBufferObjectFailed", 205),
    /** A buffer object could not be unmapped. */
    UNMAP_BUFFER_OBJECT_FAILED("cudaErrorUnmapBufferObjectFailed", 206),
    /** The array is mapped, so it cannot be destroyed. */
    ARRAY_IS_MAPPED("cudaErrorArrayIsMapped", 207),
    /** The resource is mapped already. */
    ALREADY_MAPPED("cudaErrorAlreadyMapped", 208),
    /** No kernel image suits this device: the code was not compiled for its architecture. */
    NO_KERNEL_IMAGE_FOR_DEVICE("cudaErrorNoKernelImageForDevice", 209),
    /** The resource has been acquired already. */
    ALREADY_ACQUIRED("cudaErrorAlreadyAcquired", 210),
    /** The resource is not mapped. */
    NOT_MAPPED("cudaErrorNotMapped", 211),
    /** The mapped resource cannot be accessed as an array. */
    NOT_MAPPED_AS_ARRAY("cudaErrorNotMappedAsArray", 212),
    /** The mapped resource cannot be accessed as a pointer. */
    NOT_MAPPED_AS_POINTER("cudaErrorNotMappedAsPointer", 213),
    /** An uncorrectable ECC error was detected during execution. */
    ECC_UNCORRECTABLE("cudaErrorECCUncorrectable", 214),
    /** The active device does not support the {@code cudaLimit} passed. */
    UNSUPPORTED_LIMIT("cudaErrorUnsupportedLimit", 215),
    /** The device is in exclusive-thread mode and another thread uses it already. */
    DEVICE_ALREADY_IN_USE("cudaErrorDeviceAlreadyInUse", 216),
    /** Peer-to-peer access is not supported between these devices. */
    PEER_ACCESS_UNSUPPORTED("cudaErrorPeerAccessUnsupported", 217),
    /** Compiling PTX failed. */
    INVALID_PTX("cudaErrorInvalidPtx", 218),
    /** The OpenGL or DirectX context is in error. */
    INVALID_GRAPHICS_CONTEXT("cudaErrorInvalidGraphicsContext", 219),
    /** An uncorrectable NVLink error was detected during execution. */
    NVLINK_UNCORRECTABLE("cudaErrorNvlinkUncorrectable", 220),
    /** The PTX JIT compiler library could not be found. */
    JIT_COMPILER_NOT_FOUND("cudaErrorJitCompilerNotFound", 221),
    /** The PTX comes from a toolchain the driver does not support, usually a newer compiler. */
    UNSUPPORTED_PTX_VERSION("cudaErrorUnsupportedPtxVersion", 222),
    /** PTX JIT compilation is disabled. */
    JIT_COMPILATION_DISABLED("cudaErrorJitCompilationDisabled", 223),
    /** The device does not support the execution affinity asked for. */
    UNSUPPORTED_EXEC_AFFINITY("cudaErrorUnsupportedExecAffinity", 224),
    /** The PTX to JIT-compile calls {@code cudaDeviceSynchronize}, which is not supported there. */
    UNSUPPORTED_DEV_SIDE_SYNC("cudaErrorUnsupportedDevSideSync", 225),
    /** The GPU contained an exception on the device, e.g. a bad NVLink peer access; sticky: see {@link #isSticky()}. */
    CONTAINED("cudaErrorContained", 226),
    /** The kernel source is not valid. */
    INVALID_SOURCE("cudaErrorInvalidSource", 300),
    /** The file was not found. */
    FILE_NOT_FOUND("cudaErrorFileNotFound", 301),
    /** A link to a shared object could not be resolved. */
    SHARED_OBJECT_SYMBOL_NOT_FOUND("cudaErrorSharedObjectSymbolNotFound", 302),
    /** A shared object failed to initialize. */
    SHARED_OBJECT_INIT_FAILED("cudaErrorSharedObjectInitFailed", 303),
    /** An operating system call failed. */
    OPERATING_SYSTEM("cudaErrorOperatingSystem", 304),
    /** A handle passed to the call, such as a {@code cudaStream_t} or {@code cudaEvent_t}, is not valid. */
    INVALID_RESOURCE_HANDLE("cudaErrorInvalidResourceHandle", 400),
    /** A resource the call needs is not in a state that allows the operation. */
    ILLEGAL_STATE("cudaErrorIllegalState", 401),
    /** Inspecting the object this way would drop information that matters, e.g. newer features. */
    LOSSY_QUERY("cudaErrorLossyQuery", 402),
    /** No symbol has that name, e.g. no kernel in a library. */
    SYMBOL_NOT_FOUND("cudaErrorSymbolNotFound", 500),
    /** Work queued earlier has not completed yet; the answer of a query, not a failure. */
    NOT_READY("cudaErrorNotReady", 600),
    /** A kernel loaded or stored through an invalid address; sticky: see {@link #isSticky()}. */
    ILLEGAL_ADDRESS("cudaErrorIllegalAddress", 700),
    /** The launch lacked resources: usually too many threads for the kernel's registers. */
    LAUNCH_OUT_OF_RESOURCES("cudaErrorLaunchOutOfResources", 701),
    /** A kernel ran past the device's execution timeout; sticky: see {@link #isSticky()}. */
    LAUNCH_TIMEOUT("cudaErrorLaunchTimeout", 702),
    /** A kernel launch used an incompatible texturing mode. */
    LAUNCH_INCOMPATIBLE_TEXTURING("cudaErrorLaunchIncompatibleTexturing", 703),
    /** Peer access was enabled again from a context that already has it. */
    PEER_ACCESS_ALREADY_ENABLED("cudaErrorPeerAccessAlreadyEnabled", 704),
    /** Peer access was disabled without having been enabled. */
    PEER_ACCESS_NOT_ENABLED("cudaErrorPeerAccessNotEnabled", 705),
    /** A device setup call, such as {@code cudaSetDeviceFlags}, came after the runtime was initialized. */
    SET_ON_ACTIVE_PROCESS("cudaErrorSetOnActiveProcess", 708),
    /** The calling thread's context was destroyed, or is a primary context not yet initialized. */
    CONTEXT_IS_DESTROYED("cudaErrorContextIsDestroyed", 709),
    /** A device-side assert failed in a kernel; sticky: see {@link #isSticky()}. */
    ASSERT("cudaErrorAssert", 710),
    /** The hardware resources for peer access are exhausted on one of the devices. */
    TOO_MANY_PEERS("cudaErrorTooManyPeers", 711),
    /** The host memory range is registered already. */
    HOST_MEMORY_ALREADY_REGISTERED("cudaErrorHostMemoryAlreadyRegistered", 712),
    /** The pointer is in no registered host memory range. */
    HOST_MEMORY_NOT_REGISTERED("cudaErrorHostMemoryNotRegistered", 713),
    /** A kernel's call stack failed, by corruption or overflow; sticky: see {@link #isSticky()}. */
    HARDWARE_STACK_ERROR("cudaErrorHardwareStackError", 714),
    /** A kernel executed an illegal instruction; sticky: see {@link #isSticky()}. */
    ILLEGAL_INSTRUCTION("cudaErrorIllegalInstruction", 715),
    /** A kernel loaded or stored through a misaligned address; sticky: see {@link #isSticky()}. */
    MISALIGNED_ADDRESS("cudaErrorMisalignedAddress", 716),
    /** A kernel instruction got an address outside the spaces it works on; sticky: see {@link #isSticky()}. */
    INVALID_ADDRESS_SPACE("cudaErrorInvalidAddressSpace", 717),
    /** A kernel reached an invalid program counter; sticky: see {@link #isSticky()}. */
    INVALID_PC("cudaErrorInvalidPc", 718),
    /** A kernel raised an exception, e.g. through an invalid pointer; sticky: see {@link #isSticky()}. */
    LAUNCH_FAILURE("cudaErrorLaunchFailure", 719),
    /** A cooperative launch asked for more blocks than the device can run at once. */
    COOPERATIVE_LAUNCH_TOO_LARGE("cudaErrorCooperativeLaunchTooLarge", 720),
    /** A kernel exited without freeing all its tensor memory; sticky: see {@link #isSticky()}. */
    TENSOR_MEMORY_LEAK("cudaErrorTensorMemoryLeak", 721),
    /** The operation is not permitted. */
    NOT_PERMITTED("cudaErrorNotPermitted", 800),
    /** The operation is not supported on this system or device. */
    NOT_SUPPORTED("cudaErrorNotSupported", 801),
    /** The system cannot start CUDA work yet; check its configuration and that the driver daemons run. */
    SYSTEM_NOT_READY("cudaErrorSystemNotReady", 802),
    /** The display driver and the CUDA driver versions do not match. */
    SYSTEM_DRIVER_MISMATCH("cudaErrorSystemDriverMismatch", 803),
    /** The system runs with forward compatibility, which the visible hardware does not support. */
    COMPAT_NOT_SUPPORTED_ON_DEVICE("cudaErrorCompatNotSupportedOnDevice", 804),
    /** The MPS client could not connect to the MPS control daemon or server. */
    MPS_CONNECTION_FAILED("cudaErrorMpsConnectionFailed", 805),
    /** A remote procedure call between the MPS server and client failed. */
    MPS_RPC_FAILURE("cudaErrorMpsRpcFailure", 806),
    /** The MPS server takes no new clients now, e.g. while it recovers from a fatal failure. */
    MPS_SERVER_NOT_READY("cudaErrorMpsServerNotReady", 807),
    /** The hardware resources for another MPS client are exhausted. */
    MPS_MAX_CLIENTS_REACHED("cudaErrorMpsMaxClientsReached", 808),
    /** The hardware resources for device connections are exhausted. */
    MPS_MAX_CONNECTIONS_REACHED("cudaErrorMpsMaxConnectionsReached", 809),
    /** The MPS server terminated this client; sticky: see {@link #isSticky()}. */
    MPS_CLIENT_TERMINATED("cudaErrorMpsClientTerminated", 810),
    /** The program uses CUDA Dynamic Parallelism, which this configuration (MPS, for one) does not support. */
    CDP_NOT_SUPPORTED("cudaErrorCdpNotSupported", 811),
    /** The program mixes CUDA Dynamic Parallelism versions in an unsupported way. */
    CDP_VERSION_MISMATCH("cudaErrorCdpVersionMismatch", 812),
    /** The operation is not allowed while the stream is capturing. */
    STREAM_CAPTURE_UNSUPPORTED("cudaErrorStreamCaptureUnsupported", 900),
    /** An earlier error invalidated the stream's capture. */
    STREAM_CAPTURE_INVALIDATED("cudaErrorStreamCaptureInvalidated", 901),
    /** The operation would merge two independent captures. */
    STREAM_CAPTURE_MERGE("cudaErrorStreamCaptureMerge", 902),
    /** The capture was not begun on this stream. */
    STREAM_CAPTURE_UNMATCHED("cudaErrorStreamCaptureUnmatched", 903),
    /** The capture forked into another stream that was not joined back to the origin stream. */
    STREAM_CAPTURE_UNJOINED("cudaErrorStreamCaptureUnjoined", 904),
    /** A dependency would cross the capture boundary, which only in-stream ordering may cross. */
    STREAM_CAPTURE_ISOLATION("cudaErrorStreamCaptureIsolation", 905),
    /** The operation would make {@code cudaStreamLegacy} depend implicitly on a capture. */
    STREAM_CAPTURE_IMPLICIT("cudaErrorStreamCaptureImplicit", 906),
    /** The operation is not allowed on an event last recorded in a capturing stream. */
    CAPTURED_EVENT("cudaErrorCapturedEvent", 907),
    /** A capture not in relaxed mode was ended on a thread other than the one that began it. */
    STREAM_CAPTURE_WRONG_THREAD("cudaErrorStreamCaptureWrongThread", 908),
    /** A wait timed out. */
    TIMEOUT("cudaErrorTimeout", 909),
    /** The executable graph was not updated: the changes break the rules for updates. */
    GRAPH_EXEC_UPDATE_FAILURE("cudaErrorGraphExecUpdateFailure", 910),
    /** A device outside CUDA signalled an error for data CUDA was waiting on; sticky: see {@link #isSticky()}. */
    EXTERNAL_DEVICE("cudaErrorExternalDevice", 911),
    /** A kernel launch failed because its cluster is misconfigured. */
    INVALID_CLUSTER_SIZE("cudaErrorInvalidClusterSize", 912),
    /** The function is not loaded, but the call needs a loaded one. */
    FUNCTION_NOT_LOADED("cudaErrorFunctionNotLoaded", 913),
    /** A resource passed in is of a type the operation does not accept. */
    INVALID_RESOURCE_TYPE("cudaErrorInvalidResourceType", 914),
    /** A resource passed in is insufficient for, or does not apply to, the operation. */
    INVALID_RESOURCE_CONFIGURATION("cudaErrorInvalidResourceConfiguration", 915),
    /** An unknown internal error occurred. */
    UNKNOWN("cudaErrorUnknown", 999),
    /** Deprecated since CUDA 4.1: the base to which unhandled driver errors were added. */
    API_FAILURE_BASE("cudaErrorApiFailureBase", 10000),
    /** A code this version of the library does not know; see {@link CudaException#code()}. */
    UNRECOGNIZED("unrecognized", -1);

    private static final Map<Integer, CudaError> BY_CODE = new HashMap<>();

    static {
        for (CudaError e : values()) {
            if (e != UNRECOGNIZED) {
                BY_CODE.putIfAbsent(e.code, e);
            }
        }
    }

    private final String cudaName;
    private final int code;

    CudaError(String cudaName, int code) {
        this.cudaName = cudaName;
        this.code = code;
    }

    /**
     * {@return the name in the CUDA headers, e.g. {@code cudaErrorMemoryAllocation}; {@code unrecognized}
     * for {@link #UNRECOGNIZED}}
     */
    public String cudaName() {
        return cudaName;
    }

    /** {@return the numeric {@code cudaError_t} value; -1 for {@link #UNRECOGNIZED}} */
    public int code() {
        return code;
    }

    /** {@return whether this code reports a stream-capture violation (the 900 to 908 range)} */
    public boolean isCaptureError() {
        return code >= 900 && code <= 908;
    }

    /**
     * {@return whether this error poisons the CUDA context of the process} The runtime documents that every
     * later CUDA call then fails with it, and that only a new process can use CUDA again (an
     * illegal address or instruction in a kernel, a device-side assert, a launch failure…).
     */
    public boolean isSticky() {
        return switch (code) {
            case 226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810, 911 -> true;
            default -> false;
        };
    }

    /**
     * Looks up the entry for a raw {@code cudaError_t} value.
     *
     * @param code the raw value, as a runtime call returned it
     * @return the entry, or {@link #UNRECOGNIZED} when this version does not know {@code code}
     */
    public static CudaError fromCode(int code) {
        return BY_CODE.getOrDefault(code, UNRECOGNIZED);
    }
}
