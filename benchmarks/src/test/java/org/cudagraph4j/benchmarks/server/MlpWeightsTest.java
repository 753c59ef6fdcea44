package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The model's element types: rounding a model, and the CPU forward pass of each type. */
class MlpWeightsTest {
    /**
     * One layer, y = relu([x0 + x1, x0 - x1]), on the rows [1, u] and [1 + u/2, 0], u being half the
     * format's step above 1: FP32 keeps every bit, and a half-precision model rounds its input
     * (1 + u/2 to 1) and its output (1 + u, a tie, to the even 1) but not 1 - u, one of its values.
     */
    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void aHalfPrecisionModelRoundsItsInputAndEachLayersOutputToItsFormat(ElementType type) {
        float u = type == ElementType.FLOAT16 ? 0x1p-11f : 0x1p-8f;
        float[] rows = {1, u, 1 + u / 2, 0};
        MlpWeights fp32 = new MlpWeights(List.of(new float[] {1, 1, 1, -1}), List.of(new float[2]), List.of(2, 2),
                ElementType.FLOAT32);
        assertArrayEquals(new float[] {1 + u, 1 - u, 1 + u / 2, 1 + u / 2}, fp32.forward(rows));
        MlpWeights half = fp32.withElementType(type);
        assertArrayEquals(new float[] {1, 1 - u, 1, 1}, half.forward(rows));
    }

    @Test
    void aLayersOutputIsRoundedBeforeTheNextLayerTakesIt() {
        // Layer 0 gives 1 + 2^-11, a tie that FP16 rounds to 1; layer 1 doubles it and subtracts 2.
        MlpWeights model = new MlpWeights(List.of(new float[] {1, 1}, new float[] {2}),
                List.of(new float[] {0}, new float[] {-2}), List.of(2, 1, 1), ElementType.FLOAT16);
        assertArrayEquals(new float[] {0}, model.forward(new float[] {1, 0x1p-11f}));
        assertArrayEquals(new float[] {0x1p-10f}, model.withElementType(ElementType.FLOAT32)
                .forward(new float[] {1, 0x1p-11f}), "in FP32 the 2^-11 survives, doubled");
    }

    @Test
    void withElementTypeRoundsEveryWeightAndBiasToNearestEven() {
        MlpWeights model = MlpWeights.random(8, 2, 3);
        for (ElementType type : List.of(ElementType.FLOAT16, ElementType.BFLOAT16)) {
            MlpWeights rounded = model.withElementType(type);
            assertEquals(type, rounded.elementType());
            assertEquals(model.widths(), rounded.widths());
            for (int l = 0; l < 2; l++) {
                assertArrayEquals(HalfFloats.toFloats(HalfFloats.fromFloats(model.weights().get(l), type), type),
                        rounded.weights().get(l));
                assertArrayEquals(HalfFloats.toFloats(HalfFloats.fromFloats(model.biases().get(l), type), type),
                        rounded.biases().get(l));
            }
        }
        MlpWeights same = model.withElementType(ElementType.FLOAT32);
        assertArrayEquals(model.weights().get(0), same.weights().get(0));
        assertEquals("a model file holds F32, F16 or BF16 tensors, not INT8", assertThrows(
                IllegalArgumentException.class, () -> model.withElementType(ElementType.INT8)).getMessage());
    }

    @Test
    void aHalfPrecisionModelMustHoldValuesOfItsFormat() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new MlpWeights(
                List.of(new float[] {0.1f}), List.of(new float[] {0}), List.of(1, 1), ElementType.BFLOAT16));
        assertEquals("layer 0 holds values that BFLOAT16 cannot represent: round the model with withElementType",
                e.getMessage());
    }
}
