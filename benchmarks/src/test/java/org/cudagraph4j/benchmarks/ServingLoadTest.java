package org.cudagraph4j.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.cudagraph4j.serving.CapturePolicy;
import org.junit.jupiter.api.Test;

/** ServingLoad's options and its scaling table, without a GPU. */
class ServingLoadTest {
    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> ServingLoad.parse(args)).getMessage();
    }

    @Test
    void withoutDevicesItIsTheOneGpuSweepOverRates() {
        ServingLoad.Options options = ServingLoad.parse(new String[] {"--rates", "1000,5000,20000", "--seconds", "5",
                "--json", "serving.json"});
        assertNull(options.devices());
        assertEquals(List.of(1000, 5000, 20000), options.rates());
        assertEquals(List.of(CapturePolicy.EAGER, CapturePolicy.NONE), options.policies());
        assertEquals(1, options.clients());
        assertEquals(4096, options.maxInFlight());
    }

    @Test
    void devicesListsGpuCountsWithRatesPerGpu() {
        ServingLoad.Options options = ServingLoad.parse(new String[] {"--devices", "1, 2,4", "--per-gpu-rate", "3000",
                "--clients", "2", "--rows", "64", "--policies", "EAGER"});
        assertEquals(List.of(1, 2, 4), options.devices());
        assertEquals(3000, options.perGpuRate());
        assertEquals(200_000, options.saturationRate());
        assertEquals(2, options.clients());
        assertEquals(64, options.rows());
        assertEquals(List.of(CapturePolicy.EAGER), options.policies());
    }

    @Test
    void badDeviceCountsAreRefusedWithWhatIsWrong() {
        for (String bad : List.of("", "two", "1,,2", "1.5", "-1", "1;2", "all")) {
            assertEquals("--devices takes GPU counts separated by commas, such as 1,2; got \"" + bad + "\"",
                    refused("--devices", bad), bad);
        }
        assertEquals("--devices counts GPUs, each count at least 1; got 0", refused("--devices", "1,0"));
        assertEquals("--devices lists 2 twice", refused("--devices", "1,2,2"));
    }

    @Test
    void helpExitsZeroAndABadCommandLineExitsTwoBeforeLookingForAGpu() {
        assertEquals(0, Cli.execute(new ServingLoad.Main(), "--help"));
        assertEquals(2, Cli.execute(new ServingLoad.Main(), "--rates", "0"));
        assertEquals(2, Cli.execute(new ServingLoad.Main(), "--no-such-option", "1"));
    }

    @Test
    void optionsThatDoNotGoTogetherOrDoNotExistAreRefused() {
        assertEquals("--rates sweeps one GPU; with --devices, the rates are --per-gpu-rate and --saturation-rate, "
                + "per GPU", refused("--devices", "1,2", "--rates", "1000"));
        assertEquals("--per-gpu-rate and --saturation-rate go with --devices", refused("--saturation-rate", "9"));
        assertEquals("Unknown options: '--device', '2'", refused("--device", "2"));
        assertEquals("--policies takes EAGER, LAZY and NONE; got \"SOMETIMES\"", refused("--policies", "EAGER,SOMETIMES"));
        assertTrue(refused("--devices", "1", "--clients", "0").endsWith("must be positive"));
        assertEquals("Invalid value for option '--per-gpu-rate': 'fast' is not an int",
                refused("--devices", "1", "--per-gpu-rate", "fast"));
        assertTrue(refused("--devices").startsWith("Missing required parameter for option '--devices'"), refused("--devices"));
    }

    @Test
    void aCountAboveTheHostsGpusIsNamed() {
        ServingLoad.checkAvailable(List.of(1, 2), 2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ServingLoad.checkAvailable(List.of(1, 4, 2), 2));
        assertEquals("--devices asks for 4 GPUs; this host has 2", e.getMessage());
    }

    private static ServingLoad.Point point(String load, int gpus, int offered, double submitted, double served,
            long dropped, double p99) {
        return new ServingLoad.Point("EAGER", load, gpus, offered, submitted, served, (long) served, 0, 0, dropped, 1,
                p99, 1, 1, Map.of());
    }

    @Test
    void scalingIsServedPerGpuOverTheSmallestCountsAndAnUnsaturatedPointSaysSo() {
        List<ServingLoad.Point> points = List.of(
                point("per-gpu", 1, 5000, 4999, 4998, 0, 400),
                point("saturation", 1, 200_000, 20_000, 20_000, 900_000, 90_000),
                point("per-gpu", 2, 10_000, 9_990, 9_990, 0, 420),
                point("saturation", 2, 400_000, 38_000, 38_000, 1_800_000, 95_000),
                point("per-gpu", 4, 20_000, 19_000, 19_000, 0, 430),
                point("saturation", 4, 800_000, 70_000, 70_000, 0, 3_000));
        List<ServingLoad.Scaling> rows = ServingLoad.scaling(points);
        assertEquals(List.of(1, 2, 4), rows.stream().map(ServingLoad.Scaling::gpus).toList());
        assertEquals(1.0, rows.get(0).scaling(), 1e-12);
        assertEquals(0.95, rows.get(1).scaling(), 1e-12);
        assertEquals(0.875, rows.get(2).scaling(), 1e-12);
        assertEquals(10_000, rows.get(1).perGpuOfferedPerSecond());
        assertEquals(420, rows.get(1).perGpuP99Micros());
        assertTrue(rows.get(1).saturated());
        assertFalse(rows.get(2).saturated());

        ServingLoad.Options options = ServingLoad.parse(new String[] {"--devices", "1,2,4", "--rows", "64"});
        String table = ServingLoad.table(rows, options, List.of("NVIDIA H200", "NVIDIA H200", "NVIDIA H200",
                "NVIDIA H200"));
        assertTrue(table.startsWith("EAGER scaling on 4 x NVIDIA H200: 16-layer width-512 MLP, 64 row(s) per request; "
                + "per GPU 2 lane(s), 1 client(s)\n"), table);
        assertTrue(table.contains("\n    2        38000.0      19000.0    0.950        10000         9990.0      420.0\n"),
                table);
        assertTrue(table.contains("NOT saturated (nothing dropped): raise --saturation-rate"), table);
        assertEquals(1, table.lines().filter(l -> l.contains("NOT saturated")).count(), table);
    }
}
