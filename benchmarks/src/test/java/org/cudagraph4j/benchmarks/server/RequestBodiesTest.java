package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The KServe v2 request bodies the load tools send, as Jackson writes them. */
class RequestBodiesTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void aRandomBodyHasItsShapeAndFourDecimals() throws Exception {
        byte[] body = HttpLoad.body(2, 3, new SplittableRandom(7));
        JsonNode input = JSON.readTree(body).path("inputs").path(0);
        assertEquals("input", input.path("name").asText());
        assertEquals("FP32", input.path("datatype").asText());
        assertEquals("[2,3]", input.path("shape").toString());
        assertEquals(6, input.path("data").size());
        for (JsonNode value : input.path("data")) {
            assertTrue(value.asText().matches("-?\\d\\.\\d{4}"), value.asText());
            assertTrue(Math.abs(value.asDouble()) <= 1);
        }
    }

    @Test
    void aJsonRequestCarriesItsIdAndReadsBackAsTheSameFloats() throws Exception {
        float[] values = {0.1f, -1.25f, 3.4028235e38f, 1e-7f};
        JsonNode request = JSON.readTree(HttpLoad.jsonRequest(values, 1, 4, "check-1"));
        assertEquals("check-1", request.path("id").asText());
        JsonNode data = request.path("inputs").path(0).path("data");
        for (int i = 0; i < values.length; i++) {
            assertEquals(values[i], data.get(i).floatValue());
        }
        assertEquals(-1, new String(HttpLoad.jsonRequest(values, 1, 4, null), StandardCharsets.UTF_8).indexOf("\"id\""));
    }

    @Test
    void aBinaryRequestsHeaderIsTheProtocolsJsonFollowedByTheFloats() {
        HttpLoad.Body body = HttpLoad.binaryRequest(new float[] {1, 2}, 1, 2, "b");
        String header = "{\"id\":\"b\",\"inputs\":[{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,2],"
                + "\"parameters\":{\"binary_data_size\":8}}],\"outputs\":[{\"name\":\"output\","
                + "\"parameters\":{\"binary_data\":true}}]}";
        assertEquals(Integer.toString(header.length()), body.headerLength());
        assertEquals(header, new String(body.bytes(), 0, header.length(), StandardCharsets.UTF_8));
        assertEquals(header.length() + 8, body.bytes().length);
    }
}
