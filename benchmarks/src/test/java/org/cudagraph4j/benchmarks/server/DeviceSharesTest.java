package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each GPU's share, read from the server's metrics endpoint. */
class DeviceSharesTest {
    private static DeviceShares.Result sharesOf(InferenceBackend backend) throws Exception {
        try (InferenceServer server = new InferenceServer("mlp", backend, 0, ServerLimits.defaults().withMaxBodyBytes(4096))) {
            return DeviceShares.read(URI.create("http://127.0.0.1:" + server.port()), "mlp");
        }
    }

    @Test
    void everyGpuWithBatchesPasses() throws Exception {
        DeviceShares.Result result = sharesOf(InferenceServerTest.withMetrics(InferenceServerTest.metrics(30, 10)));
        assertEquals(List.of(new DeviceShares.Share(0, 30, 300, 0.75, 0.75), new DeviceShares.Share(1, 10, 100, 0.25,
                0.25)), result.shares());
        assertTrue(result.everyDeviceWorked());
        String table = DeviceShares.table(result);
        assertTrue(table.contains("    1         10    25.0%          100    25.0%\n"), table);
        assertTrue(table.endsWith("PASS: every GPU ran batches\n"), table);
    }

    @Test
    void anIdleGpuFails() throws Exception {
        DeviceShares.Result result = sharesOf(InferenceServerTest.withMetrics(InferenceServerTest.metrics(40, 0)));
        assertFalse(result.everyDeviceWorked());
        String table = DeviceShares.table(result);
        assertTrue(table.contains("    1          0     0.0%            0     0.0%  ran no batch\n"), table);
        assertTrue(table.endsWith("FAIL: a GPU of the engine ran no batch\n"), table);
    }

    @Test
    void aServerWithoutAnEngineCannotBeAsked() {
        IOException e = assertThrows(IOException.class,
                () -> sharesOf(new CpuBackend(MlpWeights.random(4, 2, 11))));
        assertTrue(e.getMessage().contains("answered 404: {\"error\":\"this server's backend has no serving engine"),
                e.getMessage());
    }
}
