package org.cudagraph4j;

import static org.cudagraph4j.FaultChecks.CONFIG;
import static org.cudagraph4j.FaultChecks.N;
import static org.cudagraph4j.FaultChecks.assertAllNaN;
import static org.cudagraph4j.FaultChecks.assertHealthy;
import static org.cudagraph4j.FaultChecks.assertRefused;
import static org.cudagraph4j.FaultChecks.assertPattern;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.cudagraph4j.graph.CudaGraph;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Wrong kernel arguments (their count, sizes and types, a null, a closed buffer, another kernel's
 * arguments) are refused in Java before the GPU sees them, and leave nothing written or allocated.
 * Fault injection as {@link FaultChecks} describes it, on a {@link GpuFixture}.
 */
@GpuTest
class KernelArgumentFaultTest {
    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();

    /** A wrong argument list for write_pattern(float* out, int n, float scale, float offset). */
    record BadArguments(String name, Function<DeviceBuffer, Object[]> arguments, String message) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<BadArguments> badWritePatternArguments() {
        String unsupported = "kernel write_pattern, parameter 1: unsupported argument type java.lang.String; pass a"
                + " DeviceBuffer, Integer, Float, Long, Double, Short, Byte, Boolean or StructArgument";
        return Stream.of(
                new BadArguments("too few arguments", out -> new Object[] {out, N, 1f},
                        "kernel write_pattern takes 4 parameters but 3 arguments were given"),
                new BadArguments("too many arguments", out -> new Object[] {out, N, 1f, 0f, 0f},
                        "kernel write_pattern takes 4 parameters but 5 arguments were given"),
                new BadArguments("no arguments", out -> new Object[] {},
                        "kernel write_pattern takes 4 parameters but 0 arguments were given"),
                new BadArguments("Float for a pointer", out -> new Object[] {1f, N, 1f, 0f},
                        "kernel write_pattern, parameter 0 is 8 bytes but the argument is a Float (4 bytes)"),
                new BadArguments("Long for an int", out -> new Object[] {out, (long) N, 1f, 0f},
                        "kernel write_pattern, parameter 1 is 4 bytes but the argument is a Long (8 bytes)"),
                new BadArguments("Double for a float", out -> new Object[] {out, N, 1.0, 0f},
                        "kernel write_pattern, parameter 2 is 4 bytes but the argument is a Double (8 bytes)"),
                new BadArguments("buffer where an int goes", out -> new Object[] {out, out, 1f, 0f},
                        "kernel write_pattern, parameter 1 is 4 bytes but the argument is a DeviceBuffer (pointer)"
                                + " (8 bytes)"),
                new BadArguments("int and buffer swapped", out -> new Object[] {N, out, 1f, 0f},
                        "kernel write_pattern, parameter 0 is 8 bytes but the argument is a Integer (4 bytes)"),
                new BadArguments("null argument", out -> new Object[] {out, null, 1f, 0f},
                        "kernel write_pattern, parameter 1: argument is null"),
                new BadArguments("String argument", out -> new Object[] {out, "16", 1f, 0f}, unsupported));
    }

    @ParameterizedTest(name = "one-shot launch, {0}")
    @MethodSource("badWritePatternArguments")
    void oneShotLaunchRefusesBadArgumentsBeforeTheGpuSeesThem(BadArguments bad) {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            out.memset(0xFF);
            assertRefused(IllegalArgumentException.class,
                    () -> gpu.writePattern().launch(gpu.stream(), CONFIG, bad.arguments().apply(out)),
                    bad.message());
            gpu.stream().synchronize();
            assertAllNaN(out, "a refused launch");
        }
        assertHealthy(gpu);
    }

    @ParameterizedTest(name = "prepared arguments, {0}")
    @MethodSource("badWritePatternArguments")
    void preparedArgumentsRefuseBadArgumentsAndAllocateNothing(BadArguments bad) {
        try (DeviceBuffer out = gpu.device().allocateFloats(N)) {
            LiveResources before = Cuda.liveResources();
            assertRefused(IllegalArgumentException.class,
                    () -> gpu.writePattern().arguments(bad.arguments().apply(out)).close(),
                    bad.message());
            assertEquals(before, Cuda.liveResources(), "a refused argument block must not stay allocated");
        }
        assertHealthy(gpu);
    }

    @ParameterizedTest(name = "graph kernel node, {0}")
    @MethodSource("badWritePatternArguments")
    void graphKernelNodeRefusesBadArgumentsAndAddsNoNode(BadArguments bad) {
        try (DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            KernelLaunch params = new KernelLaunch(gpu.writePattern(), CONFIG,
                    Arrays.asList(bad.arguments().apply(out)));
            assertRefused(IllegalArgumentException.class, () -> graph.addKernel(params), bad.message());
            assertTrue(graph.nodes().isEmpty(), "a refused node must not be added");
        }
        assertHealthy(gpu);
    }

    @Test
    void refusedSetLeavesPreparedArgumentsUnchanged() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N);
                KernelArguments arguments = gpu.writePattern().arguments(out, N, 0.5f, 2f)) {
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> arguments.set(2, 0.5));
            assertEquals("kernel write_pattern, parameter 2 is 4 bytes but the argument is a Double (8 bytes)",
                    size.getMessage());
            assertRefused(IllegalArgumentException.class, () -> arguments.set(3, null),
                    "kernel write_pattern, parameter 3: argument is null");
            assertEquals(List.of(out, N, 0.5f, 2f), arguments.values());

            out.memset(0xFF);
            gpu.writePattern().launch(gpu.stream(), CONFIG, arguments);
            gpu.stream().synchronize();
            assertPattern(out.toFloatArray(), 0.5f, 2f, "launch after refused sets");
        }
        assertHealthy(gpu);
    }

    @Test
    void argumentsPreparedForAnotherKernelAreRefused() {
        try (DeviceBuffer out = gpu.device().allocateFloats(N);
                KernelArguments arguments = gpu.writePattern().arguments(out, N, 1f, 0f)) {
            out.memset(0xFF);
            assertRefused(IllegalArgumentException.class, () -> gpu.saxpy().launch(gpu.stream(), CONFIG, arguments),
                    "arguments were prepared for kernel write_pattern, not saxpy");
            gpu.stream().synchronize();
            assertAllNaN(out, "a launch with another kernel's arguments");
        }
        assertHealthy(gpu);
    }

    @Test
    void preparedArgumentsWithABufferClosedAfterwardsAreRefusedAndNothingIsWritten() {
        DeviceBuffer doomed = gpu.device().allocateFloats(N);
        String doomedName = doomed.toString();
        try (KernelArguments arguments = gpu.writePattern().arguments(doomed, N, 1f, 0f)) {
            doomed.close();
            // Allocated after the close, this buffer may well reuse the freed address: a launch that
            // reached the GPU would write into it.
            try (DeviceBuffer survivor = gpu.device().allocateFloats(N)) {
                survivor.memset(0xFF);
                assertRefused(IllegalStateException.class,
                        () -> gpu.writePattern().launch(gpu.stream(), CONFIG, arguments),
                        "kernel write_pattern, argument 0: " + doomedName
                                + " is closed; a launch must not touch freed memory");
                gpu.stream().synchronize();
                gpu.device().synchronize();
                assertAllNaN(survivor, "the buffer allocated after the refused launch's buffer was closed");
            }
        }
        assertHealthy(gpu);
    }

    @Test
    void graphKernelNodeWithAClosedBufferIsRefused() {
        DeviceBuffer doomed = gpu.device().allocateFloats(N);
        String doomedName = doomed.toString();
        doomed.close();
        try (CudaGraph graph = CudaGraph.create()) {
            assertRefused(IllegalStateException.class,
                    () -> graph.addKernel( KernelLaunch.of(gpu.writePattern(), CONFIG, doomed, N, 1f, 0f)),
                    doomedName + " is closed");
            assertTrue(graph.nodes().isEmpty());
        }
        assertHealthy(gpu);
    }
}
