package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.cudagraph4j.CaptureStatus;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.cudart.cudart_h;
import org.junit.jupiter.api.Test;

/** The public enums carry CUDA's values; these checks keep them equal to the generated constants. */
class GraphEnumsTest {
    @Test
    void captureModes() {
        assertEquals(cudart_h.cudaStreamCaptureModeGlobal(), CaptureMode.GLOBAL.value());
        assertEquals(cudart_h.cudaStreamCaptureModeThreadLocal(), CaptureMode.THREAD_LOCAL.value());
        assertEquals(cudart_h.cudaStreamCaptureModeRelaxed(), CaptureMode.RELAXED.value());
        assertEquals(cudart_h.cudaStreamCaptureStatusInvalidated(), CaptureStatus.INVALIDATED.value());
    }

    @Test
    void nodeTypes() throws Exception {
        for (GraphNodeType type : GraphNodeType.values()) {
            String name = "cudaGraphNodeType" + switch (type) {
                case KERNEL -> "Kernel";
                case MEMCPY -> "Memcpy";
                case MEMSET -> "Memset";
                case HOST -> "Host";
                case GRAPH -> "Graph";
                case EMPTY -> "Empty";
                case WAIT_EVENT -> "WaitEvent";
                case EVENT_RECORD -> "EventRecord";
                case EXT_SEMAPHORE_SIGNAL -> "ExtSemaphoreSignal";
                case EXT_SEMAPHORE_WAIT -> "ExtSemaphoreWait";
                case MEM_ALLOC -> "MemAlloc";
                case MEM_FREE -> "MemFree";
                case CONDITIONAL -> "Conditional";
            };
            assertEquals(cudart_h.class.getMethod(name).invoke(null), type.value(), name);
        }
    }

    @Test
    void updateAndInstantiateResultsByCudaName() throws Exception {
        for (UpdateResult result : UpdateResult.values()) {
            assertEquals(cudart_h.class.getMethod(result.cudaName()).invoke(null), result.value(), result.cudaName());
        }
        for (InstantiateResult result : InstantiateResult.values()) {
            assertEquals(cudart_h.class.getMethod(result.cudaName()).invoke(null), result.value(), result.cudaName());
        }
    }

    @Test
    void conditionalTypes() {
        assertEquals(cudart_h.cudaGraphCondTypeIf(), ConditionalType.IF.value());
        assertEquals(cudart_h.cudaGraphCondTypeWhile(), ConditionalType.WHILE.value());
        assertEquals(cudart_h.cudaGraphCondTypeSwitch(), ConditionalType.SWITCH.value());
        for (ConditionalType type : ConditionalType.values()) {
            assertEquals(type, ConditionalType.fromValue(type.value()));
        }
        assertEquals("unknown cudaGraphConditionalNodeType 7",
                assertThrows(IllegalArgumentException.class, () -> ConditionalType.fromValue(7)).getMessage());
    }

    @Test
    void flags() {
        assertEquals(cudart_h.cudaGraphInstantiateFlagAutoFreeOnLaunch(), InstantiateFlag.AUTO_FREE_ON_LAUNCH.value());
        assertEquals(cudart_h.cudaGraphInstantiateFlagUpload(), InstantiateFlag.UPLOAD.value());
        assertEquals(cudart_h.cudaGraphInstantiateFlagDeviceLaunch(), InstantiateFlag.DEVICE_LAUNCH.value());
        assertEquals(cudart_h.cudaGraphInstantiateFlagUseNodePriority(), InstantiateFlag.USE_NODE_PRIORITY.value());
        assertEquals(cudart_h.cudaEventDisableTiming(), CudaEvent.Option.DISABLE_TIMING.flag());
        assertEquals(cudart_h.cudaEventBlockingSync(), CudaEvent.Option.BLOCKING_SYNC.flag());
    }
}
