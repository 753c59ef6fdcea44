package org.cudagraph4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.cudagraph4j.graph.CaptureMode;
import org.cudagraph4j.graph.GraphNodeType;
import org.cudagraph4j.graph.InstantiateFlag;
import org.cudagraph4j.graph.InstantiateResult;
import org.cudagraph4j.graph.UpdateResult;
import org.junit.jupiter.api.Test;

class CudaEnumTest {
    private static final List<Class<? extends CudaEnum>> ENUMS = List.of(CaptureMode.class, CaptureStatus.class,
            DeviceAttribute.class, GraphNodeType.class, InstantiateFlag.class, InstantiateResult.class,
            UpdateResult.class);

    @Test
    void everyConstantIsFoundByItsValueAndValuesAreUnique() {
        for (Class<? extends CudaEnum> type : ENUMS) {
            for (CudaEnum constant : type.getEnumConstants()) {
                assertEquals(Optional.of(constant), find(type, constant.value()), type.getSimpleName());
            }
            assertEquals(type.getEnumConstants().length,
                    java.util.Arrays.stream(type.getEnumConstants()).mapToInt(CudaEnum::value).distinct().count(),
                    type.getSimpleName() + " values are unique");
        }
    }

    @Test
    void anUnknownValueIsEmptyAndEachEnumSaysWhatThatMeans() {
        assertTrue(CudaEnum.find(GraphNodeType.class, 0x7fff).isEmpty());
        assertEquals(UpdateResult.ERROR, UpdateResult.fromValue(0x7fff), "an unknown update result is an error");
        assertEquals(InstantiateResult.ERROR, InstantiateResult.fromValue(0x7fff));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GraphNodeType.fromValue(-1));
        assertEquals("unknown cudaGraphNodeType -1", e.getMessage());
        assertEquals(CaptureStatus.INVALIDATED, CaptureStatus.fromValue(2));
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Optional<CudaEnum> find(Class<? extends CudaEnum> type, int value) {
        return CudaEnum.find((Class) type, value);
    }
}
