package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
    void everyMalformationIsNamed() {
        assertTrue(problem(new byte[5]).contains("fewer than the 8 of its header length"));
        byte[] huge = new byte[16];
        ByteBuffer.wrap(huge).order(ByteOrder.LITTLE_ENDIAN).putLong(1L << 40);
        assertTrue(problem(huge).contains("does not fit"));
        assertTrue(problem(file("{oops", 0)).contains("its header is not JSON"));
        assertTrue(problem(file("[1,2]", 0)).contains("not a JSON object"));
        assertTrue(problem(file("{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2))
                .contains("is F16; only F32 is supported"));
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
        assertEquals(model.widths(), back.widths());
        float[] rows = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
        assertArrayEquals(model.forward(rows), back.forward(rows));
        assertEquals(List.of("0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"),
                List.copyOf(SafeTensors.read(file).keySet()), "PyTorch's Sequential(Linear, ReLU, ...) names");
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
