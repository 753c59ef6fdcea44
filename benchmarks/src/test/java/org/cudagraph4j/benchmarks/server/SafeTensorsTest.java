package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.cudagraph4j.ElementType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class SafeTensorsTest {
    private static byte[] file(String header, int dataBytes) {
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(8 + json.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(json.length).put(json);
        return out.array();
    }

    private static String problem(byte[] bytes) {
        return assertThrows(IllegalArgumentException.class, () -> SafeTensors.parse("f", bytes)).getMessage();
    }

    @Test
    void tensorsRoundTripInFileOrderWithTheirShapes(@TempDir Path dir) throws Exception {
        Map<String, SafeTensors.Tensor> tensors = new LinkedHashMap<>();
        tensors.put("0.weight", new SafeTensors.Tensor(List.of(2, 3), new float[] {1, -2, 3.5f, 4, 5, Float.MIN_VALUE}));
        tensors.put("0.bias", new SafeTensors.Tensor(List.of(2), new float[] {0.25f, -0.75f}));
        tensors.put("empty", new SafeTensors.Tensor(List.of(0, 4), new float[0]));
        Path file = dir.resolve("t.safetensors");
        SafeTensors.write(file, tensors, Map.of("format", "pt"));
        Map<String, SafeTensors.Tensor> back = SafeTensors.read(file);
        assertEquals(List.copyOf(tensors.keySet()), List.copyOf(back.keySet()));
        for (String name : tensors.keySet()) {
            assertEquals(tensors.get(name).shape(), back.get(name).shape());
            assertArrayEquals(tensors.get(name).data(), back.get(name).data());
        }
        long headerLength = ByteBuffer.wrap(java.nio.file.Files.readAllBytes(file), 0, 8)
                .order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertEquals(0, headerLength % 8, "the header is padded to 8 bytes, as the reference writer does");
    }

    @Test
    void halfPrecisionFilesHoldTheFormatsLittleEndianBitsAndWidenExactly() {
        // 1, -2, the smallest subnormal (2^-24), 65504 (the largest finite) and -0 in F16.
        byte[] f16 = file("{\"t\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]}}", 10);
        ByteBuffer.wrap(f16, f16.length - 10, 10).order(ByteOrder.LITTLE_ENDIAN)
                .putShort((short) 0x3C00).putShort((short) 0xC000).putShort((short) 0x0001).putShort((short) 0x7BFF)
                .putShort((short) 0x8000);
        SafeTensors.Tensor half = SafeTensors.parse("f", f16).get("t");
        assertEquals(ElementType.FLOAT16, half.type());
        assertArrayEquals(new float[] {1, -2, 0x1p-24f, 65504, -0f}, half.data());
        // 1, -2, 1 + 2^-7 (the last fraction bit) and the largest finite BF16 in BF16.
        byte[] bf16 = file("{\"t\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", 8);
        ByteBuffer.wrap(bf16, bf16.length - 8, 8).order(ByteOrder.LITTLE_ENDIAN)
                .putShort((short) 0x3F80).putShort((short) 0xC000).putShort((short) 0x3F81).putShort((short) 0x7F7F);
        SafeTensors.Tensor brain = SafeTensors.parse("f", bf16).get("t");
        assertEquals(ElementType.BFLOAT16, brain.type());
        assertEquals(List.of(2, 2), brain.shape());
        assertArrayEquals(new float[] {1, -2, 1 + 0x1p-7f, Float.intBitsToFloat(0x7F7F0000)}, brain.data());
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void halfPrecisionTensorsRoundTripAsTwoBytesAnElement(ElementType type, @TempDir Path dir) throws Exception {
        Map<String, SafeTensors.Tensor> tensors = new LinkedHashMap<>();
        tensors.put("0.weight", new SafeTensors.Tensor(List.of(2, 3), type, new float[] {1, -2, 3.5f, 0.25f, -0f, 96}));
        tensors.put("0.bias", new SafeTensors.Tensor(List.of(2), type, new float[] {0.5f, -0.75f}));
        Path file = dir.resolve("t.safetensors");
        SafeTensors.write(file, tensors, Map.of());
        Map<String, SafeTensors.Tensor> back = SafeTensors.read(file);
        for (String name : tensors.keySet()) {
            assertEquals(type, back.get(name).type());
            assertEquals(tensors.get(name).shape(), back.get(name).shape());
            assertArrayEquals(tensors.get(name).data(), back.get(name).data());
        }
        byte[] bytes = Files.readAllBytes(file);
        long headerLength = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertEquals(8 * Short.BYTES, bytes.length - 8 - headerLength, "8 elements of 2 bytes");
        String dtype = type == ElementType.FLOAT16 ? "F16" : "BF16";
        assertTrue(new String(bytes, 8, (int) headerLength, StandardCharsets.UTF_8)
                .contains("\"0.weight\":{\"dtype\":\"" + dtype + "\""));
        short one = ByteBuffer.wrap(bytes, 8 + (int) headerLength, 2).order(ByteOrder.LITTLE_ENDIAN).getShort();
        assertEquals(type == ElementType.FLOAT16 ? 0x3C00 : 0x3F80, one, "1 as the format's little-endian bits");
    }

    @Test
    void aHalfPrecisionTensorMustHoldValuesOfItsFormat() {
        Map<String, SafeTensors.Tensor> tensors = Map.of("w", new SafeTensors.Tensor(List.of(2), ElementType.FLOAT16,
                new float[] {1, 0.1f}));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SafeTensors.encode(tensors, Map.of()));
        assertEquals("tensor w holds 0.1 at element 1, which F16 cannot represent exactly (round it to the format "
                + "first)", e.getMessage());
        IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
                () -> new SafeTensors.Tensor(List.of(1), ElementType.FLOAT64, new float[1]));
        assertEquals("a model file holds F32, F16 or BF16 tensors, not FLOAT64", type.getMessage());
    }

    @Test
    void aFileOfMixedDtypesIsRefusedBothWays() {
        assertEquals("not a valid safetensors file: f: tensor b is BF16 but tensor a is F32; a model file holds one "
                + "dtype", problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]}}", 8)));
        Map<String, SafeTensors.Tensor> tensors = new LinkedHashMap<>();
        tensors.put("a", new SafeTensors.Tensor(List.of(1), ElementType.FLOAT16, new float[] {1}));
        tensors.put("b", new SafeTensors.Tensor(List.of(1), new float[] {1}));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SafeTensors.encode(tensors, Map.of()));
        assertEquals("tensor b is F32 but the first is F16; a model file holds one dtype", e.getMessage());
    }

    @Test
    void everyMalformationIsNamed() {
        assertTrue(problem(new byte[5]).contains("fewer than the 8 of its header length"));
        byte[] huge = new byte[16];
        ByteBuffer.wrap(huge).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
        assertTrue(problem(huge).contains("does not fit"));
        assertTrue(problem(file("{oops", 0)).contains("its header is not JSON"));
        assertTrue(problem(file("[1,2]", 0)).contains("not a JSON object"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8))
                .contains("tensor a is F64; only F32, F16 and BF16 are supported"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4))
                .contains("tensor a is I32; only F32, F16 and BF16 are supported"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8))
                .contains("needs 4 bytes but has 8"), "two bytes per F16 element");
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4))
                .contains("needs 8 bytes but has 4"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 4))
                .contains("outside the 4 bytes of data"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8))
                .contains("without holes"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8))
                .contains("cover 4 of its 8 bytes"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4))
                .contains("bad dimension -1"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4))
                .contains("unknown key x"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4)).contains("without holes"),
                "overlapping tensors");
    }

    @Test
    void aModelFileLoadsAsTheMlpItWasSavedFrom(@TempDir Path dir) throws Exception {
        MlpWeights model = MlpWeights.random(6, 3, 7);
        Path file = dir.resolve("mlp.safetensors");
        model.save(file);
        MlpWeights back = MlpWeights.load(file);
        assertEquals(ElementType.FLOAT32, back.elementType());
        assertEquals(model.widths(), back.widths());
        float[] rows = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
        assertArrayEquals(model.forward(rows), back.forward(rows));
        assertEquals(List.of("0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"),
                List.copyOf(SafeTensors.read(file).keySet()), "PyTorch's Sequential(Linear, ReLU, ...) names");
    }

    @ParameterizedTest
    @EnumSource(value = ElementType.class, names = {"FLOAT16", "BFLOAT16"})
    void aHalfPrecisionModelFileLoadsInItsDtype(ElementType type, @TempDir Path dir) throws Exception {
        MlpWeights model = MlpWeights.random(6, 3, 7).withElementType(type);
        Path file = dir.resolve("mlp.safetensors");
        model.save(file);
        MlpWeights back = MlpWeights.load(file);
        assertEquals(type, back.elementType());
        assertEquals(model.widths(), back.widths());
        for (int l = 0; l < 3; l++) {
            assertArrayEquals(model.weights().get(l), back.weights().get(l));
            assertArrayEquals(model.biases().get(l), back.biases().get(l));
        }
        float[] rows = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
        assertArrayEquals(model.forward(rows), back.forward(rows));
    }

    @Test
    void aFileThatIsNotAChainedMlpIsRefused(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("bad.safetensors");
        Map<String, SafeTensors.Tensor> tensors = new LinkedHashMap<>();
        tensors.put("0.weight", new SafeTensors.Tensor(List.of(4, 3), new float[12]));
        tensors.put("0.bias", new SafeTensors.Tensor(List.of(4), new float[4]));
        tensors.put("2.weight", new SafeTensors.Tensor(List.of(2, 5), new float[10]));
        tensors.put("2.bias", new SafeTensors.Tensor(List.of(2), new float[2]));
        SafeTensors.write(file, tensors, Map.of());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MlpWeights.load(file));
        assertTrue(e.getMessage().contains("layer 2 takes 5 features but the layer before gives 4"), e.getMessage());
    }
}
