package org.cudagraph4j;

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
    SUCCESS("cudaSuccess", 0),
    INVALID_VALUE("cudaErrorInvalidValue", 1),
    MEMORY_ALLOCATION("cudaErrorMemoryAllocation", 2),
    INITIALIZATION_ERROR("cudaErrorInitializationError", 3),
    CUDART_UNLOADING("cudaErrorCudartUnloading", 4),
    PROFILER_DISABLED("cudaErrorProfilerDisabled", 5),
    PROFILER_NOT_INITIALIZED("cudaErrorProfilerNotInitialized", 6),
    PROFILER_ALREADY_STARTED("cudaErrorProfilerAlreadyStarted", 7),
    PROFILER_ALREADY_STOPPED("cudaErrorProfilerAlreadyStopped", 8),
    INVALID_CONFIGURATION("cudaErrorInvalidConfiguration", 9),
    INVALID_PITCH_VALUE("cudaErrorInvalidPitchValue", 12),
    INVALID_SYMBOL("cudaErrorInvalidSymbol", 13),
    INVALID_HOST_POINTER("cudaErrorInvalidHostPointer", 16),
    INVALID_DEVICE_POINTER("cudaErrorInvalidDevicePointer", 17),
    INVALID_TEXTURE("cudaErrorInvalidTexture", 18),
    INVALID_TEXTURE_BINDING("cudaErrorInvalidTextureBinding", 19),
    INVALID_CHANNEL_DESCRIPTOR("cudaErrorInvalidChannelDescriptor", 20),
    INVALID_MEMCPY_DIRECTION("cudaErrorInvalidMemcpyDirection", 21),
    ADDRESS_OF_CONSTANT("cudaErrorAddressOfConstant", 22),
    TEXTURE_FETCH_FAILED("cudaErrorTextureFetchFailed", 23),
    TEXTURE_NOT_BOUND("cudaErrorTextureNotBound", 24),
    SYNCHRONIZATION_ERROR("cudaErrorSynchronizationError", 25),
    INVALID_FILTER_SETTING("cudaErrorInvalidFilterSetting", 26),
    INVALID_NORM_SETTING("cudaErrorInvalidNormSetting", 27),
    MIXED_DEVICE_EXECUTION("cudaErrorMixedDeviceExecution", 28),
    NOT_YET_IMPLEMENTED("cudaErrorNotYetImplemented", 31),
    MEMORY_VALUE_TOO_LARGE("cudaErrorMemoryValueTooLarge", 32),
    STUB_LIBRARY("cudaErrorStubLibrary", 34),
    INSUFFICIENT_DRIVER("cudaErrorInsufficientDriver", 35),
    CALL_REQUIRES_NEWER_DRIVER("cudaErrorCallRequiresNewerDriver", 36),
    INVALID_SURFACE("cudaErrorInvalidSurface", 37),
    DUPLICATE_VARIABLE_NAME("cudaErrorDuplicateVariableName", 43),
    DUPLICATE_TEXTURE_NAME("cudaErrorDuplicateTextureName", 44),
    DUPLICATE_SURFACE_NAME("cudaErrorDuplicateSurfaceName", 45),
    DEVICES_UNAVAILABLE("cudaErrorDevicesUnavailable", 46),
    INCOMPATIBLE_DRIVER_CONTEXT("cudaErrorIncompatibleDriverContext", 49),
    MISSING_CONFIGURATION("cudaErrorMissingConfiguration", 52),
    PRIOR_LAUNCH_FAILURE("cudaErrorPriorLaunchFailure", 53),
    LAUNCH_MAX_DEPTH_EXCEEDED("cudaErrorLaunchMaxDepthExceeded", 65),
    LAUNCH_FILE_SCOPED_TEX("cudaErrorLaunchFileScopedTex", 66),
    LAUNCH_FILE_SCOPED_SURF("cudaErrorLaunchFileScopedSurf", 67),
    SYNC_DEPTH_EXCEEDED("cudaErrorSyncDepthExceeded", 68),
    LAUNCH_PENDING_COUNT_EXCEEDED("cudaErrorLaunchPendingCountExceeded", 69),
    INVALID_DEVICE_FUNCTION("cudaErrorInvalidDeviceFunction", 98),
    NO_DEVICE("cudaErrorNoDevice", 100),
    INVALID_DEVICE("cudaErrorInvalidDevice", 101),
    DEVICE_NOT_LICENSED("cudaErrorDeviceNotLicensed", 102),
    SOFTWARE_VALIDITY_NOT_ESTABLISHED("cudaErrorSoftwareValidityNotEstablished", 103),
    STARTUP_FAILURE("cudaErrorStartupFailure", 127),
    INVALID_KERNEL_IMAGE("cudaErrorInvalidKernelImage", 200),
    DEVICE_UNINITIALIZED("cudaErrorDeviceUninitialized", 201),
    MAP_BUFFER_OBJECT_FAILED("cudaErrorMapBufferObjectFailed", 205),
    UNMAP_BUFFER_OBJECT_FAILED("cudaErrorUnmapBufferObjectFailed", 206),
    ARRAY_IS_MAPPED("cudaErrorArrayIsMapped", 207),
    ALREADY_MAPPED("cudaErrorAlreadyMapped", 208),
    NO_KERNEL_IMAGE_FOR_DEVICE("cudaErrorNoKernelImageForDevice", 209),
    ALREADY_ACQUIRED("cudaErrorAlreadyAcquired", 210),
    NOT_MAPPED("cudaErrorNotMapped", 211),
    NOT_MAPPED_AS_ARRAY("cudaErrorNotMappedAsArray", 212),
    NOT_MAPPED_AS_POINTER("cudaErrorNotMappedAsPointer", 213),
    ECC_UNCORRECTABLE("cudaErrorECCUncorrectable", 214),
    UNSUPPORTED_LIMIT("cudaErrorUnsupportedLimit", 215),
    DEVICE_ALREADY_IN_USE("cudaErrorDeviceAlreadyInUse", 216),
    PEER_ACCESS_UNSUPPORTED("cudaErrorPeerAccessUnsupported", 217),
    INVALID_PTX("cudaErrorInvalidPtx", 218),
    INVALID_GRAPHICS_CONTEXT("cudaErrorInvalidGraphicsContext", 219),
    NVLINK_UNCORRECTABLE("cudaErrorNvlinkUncorrectable", 220),
    JIT_COMPILER_NOT_FOUND("cudaErrorJitCompilerNotFound", 221),
    UNSUPPORTED_PTX_VERSION("cudaErrorUnsupportedPtxVersion", 222),
    JIT_COMPILATION_DISABLED("cudaErrorJitCompilationDisabled", 223),
    UNSUPPORTED_EXEC_AFFINITY("cudaErrorUnsupportedExecAffinity", 224),
    UNSUPPORTED_DEV_SIDE_SYNC("cudaErrorUnsupportedDevSideSync", 225),
    CONTAINED("cudaErrorContained", 226),
    INVALID_SOURCE("cudaErrorInvalidSource", 300),
    FILE_NOT_FOUND("cudaErrorFileNotFound", 301),
    SHARED_OBJECT_SYMBOL_NOT_FOUND("cudaErrorSharedObjectSymbolNotFound", 302),
    SHARED_OBJECT_INIT_FAILED("cudaErrorSharedObjectInitFailed", 303),
    OPERATING_SYSTEM("cudaErrorOperatingSystem", 304),
    INVALID_RESOURCE_HANDLE("cudaErrorInvalidResourceHandle", 400),
    ILLEGAL_STATE("cudaErrorIllegalState", 401),
    LOSSY_QUERY("cudaErrorLossyQuery", 402),
    SYMBOL_NOT_FOUND("cudaErrorSymbolNotFound", 500),
    NOT_READY("cudaErrorNotReady", 600),
    ILLEGAL_ADDRESS("cudaErrorIllegalAddress", 700),
    LAUNCH_OUT_OF_RESOURCES("cudaErrorLaunchOutOfResources", 701),
    LAUNCH_TIMEOUT("cudaErrorLaunchTimeout", 702),
    LAUNCH_INCOMPATIBLE_TEXTURING("cudaErrorLaunchIncompatibleTexturing", 703),
    PEER_ACCESS_ALREADY_ENABLED("cudaErrorPeerAccessAlreadyEnabled", 704),
    PEER_ACCESS_NOT_ENABLED("cudaErrorPeerAccessNotEnabled", 705),
    SET_ON_ACTIVE_PROCESS("cudaErrorSetOnActiveProcess", 708),
    CONTEXT_IS_DESTROYED("cudaErrorContextIsDestroyed", 709),
    ASSERT("cudaErrorAssert", 710),
    TOO_MANY_PEERS("cudaErrorTooManyPeers", 711),
    HOST_MEMORY_ALREADY_REGISTERED("cudaErrorHostMemoryAlreadyRegistered", 712),
    HOST_MEMORY_NOT_REGISTERED("cudaErrorHostMemoryNotRegistered", 713),
    HARDWARE_STACK_ERROR("cudaErrorHardwareStackError", 714),
    ILLEGAL_INSTRUCTION("cudaErrorIllegalInstruction", 715),
    MISALIGNED_ADDRESS("cudaErrorMisalignedAddress", 716),
    INVALID_ADDRESS_SPACE("cudaErrorInvalidAddressSpace", 717),
    INVALID_PC("cudaErrorInvalidPc", 718),
    LAUNCH_FAILURE("cudaErrorLaunchFailure", 719),
    COOPERATIVE_LAUNCH_TOO_LARGE("cudaErrorCooperativeLaunchTooLarge", 720),
    TENSOR_MEMORY_LEAK("cudaErrorTensorMemoryLeak", 721),
    NOT_PERMITTED("cudaErrorNotPermitted", 800),
    NOT_SUPPORTED("cudaErrorNotSupported", 801),
    SYSTEM_NOT_READY("cudaErrorSystemNotReady", 802),
    SYSTEM_DRIVER_MISMATCH("cudaErrorSystemDriverMismatch", 803),
    COMPAT_NOT_SUPPORTED_ON_DEVICE("cudaErrorCompatNotSupportedOnDevice", 804),
    MPS_CONNECTION_FAILED("cudaErrorMpsConnectionFailed", 805),
    MPS_RPC_FAILURE("cudaErrorMpsRpcFailure", 806),
    MPS_SERVER_NOT_READY("cudaErrorMpsServerNotReady", 807),
    MPS_MAX_CLIENTS_REACHED("cudaErrorMpsMaxClientsReached", 808),
    MPS_MAX_CONNECTIONS_REACHED("cudaErrorMpsMaxConnectionsReached", 809),
    MPS_CLIENT_TERMINATED("cudaErrorMpsClientTerminated", 810),
    CDP_NOT_SUPPORTED("cudaErrorCdpNotSupported", 811),
    CDP_VERSION_MISMATCH("cudaErrorCdpVersionMismatch", 812),
    STREAM_CAPTURE_UNSUPPORTED("cudaErrorStreamCaptureUnsupported", 900),
    STREAM_CAPTURE_INVALIDATED("cudaErrorStreamCaptureInvalidated", 901),
    STREAM_CAPTURE_MERGE("cudaErrorStreamCaptureMerge", 902),
    STREAM_CAPTURE_UNMATCHED("cudaErrorStreamCaptureUnmatched", 903),
    STREAM_CAPTURE_UNJOINED("cudaErrorStreamCaptureUnjoined", 904),
    STREAM_CAPTURE_ISOLATION("cudaErrorStreamCaptureIsolation", 905),
    STREAM_CAPTURE_IMPLICIT("cudaErrorStreamCaptureImplicit", 906),
    CAPTURED_EVENT("cudaErrorCapturedEvent", 907),
    STREAM_CAPTURE_WRONG_THREAD("cudaErrorStreamCaptureWrongThread", 908),
    TIMEOUT("cudaErrorTimeout", 909),
    GRAPH_EXEC_UPDATE_FAILURE("cudaErrorGraphExecUpdateFailure", 910),
    EXTERNAL_DEVICE("cudaErrorExternalDevice", 911),
    INVALID_CLUSTER_SIZE("cudaErrorInvalidClusterSize", 912),
    FUNCTION_NOT_LOADED("cudaErrorFunctionNotLoaded", 913),
    INVALID_RESOURCE_TYPE("cudaErrorInvalidResourceType", 914),
    INVALID_RESOURCE_CONFIGURATION("cudaErrorInvalidResourceConfiguration", 915),
    UNKNOWN("cudaErrorUnknown", 999),    API_FAILURE_BASE("cudaErrorApiFailureBase", 10000),
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

    /** The name in the CUDA headers, e.g. {@code cudaErrorMemoryAllocation}. */
    public String cudaName() {
        return cudaName;
    }

    /** The numeric {@code cudaError_t} value. */
    public int code() {
        return code;
    }

    /** Whether this code reports a stream-capture violation (the 900 to 908 range). */
    public boolean isCaptureError() {
        return code >= 900 && code <= 908;
    }

    /**
     * Whether this error poisons the CUDA context of the process: the runtime documents that every
     * later CUDA call then fails with it, and that only a new process can use CUDA again (an
     * illegal address or instruction in a kernel, a device-side assert, a launch failure…).
     */
    public boolean isSticky() {
        return switch (code) {
            case 226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810, 911 -> true;
            default -> false;
        };
    }

    /** The entry for {@code code}, or {@link #UNRECOGNIZED} when this version does not know it. */
    public static CudaError fromCode(int code) {
        return BY_CODE.getOrDefault(code, UNRECOGNIZED);
    }
}
