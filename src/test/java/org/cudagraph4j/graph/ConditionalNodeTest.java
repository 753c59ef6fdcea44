package org.cudagraph4j.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.Dim3;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuFixture;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.KernelLaunch;
import org.cudagraph4j.LaunchConfig;
import org.cudagraph4j.LiveResources;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Conditional nodes, built and captured: each kind runs what the same logic run from the host
 * would, from one executable whose decisions are made on the device; and the rules CUDA sets for
 * them are refused in Java with a message that names the rule.
 */
@GpuTest
class ConditionalNodeTest {
    private static final int N = 4099;
    private static final Dim3 GRID = Dim3.of(17);
    private static final Dim3 BLOCK = Dim3.of(256);

    @RegisterExtension
    final GpuFixture gpu = new GpuFixture();
    private ConditionalKernels kernels;

    @BeforeEach
    void loadConditionalKernels() {
        kernels = ConditionalKernels.load();
    }

    @AfterEach
    void closeConditionalKernels() {
        kernels.close();
    }

    /** out[i] = i * scale + offset. */
    private KernelLaunch pattern(DeviceBuffer out, float scale, float offset) {
        return KernelLaunch.of(gpu.writePattern(), LaunchConfig.of(GRID, BLOCK), out, N, scale, offset);
    }

    /** y += a * x. */
    private KernelLaunch axpy(float a, DeviceBuffer x, DeviceBuffer y) {
        return KernelLaunch.of(gpu.saxpy(), LaunchConfig.of(GRID, BLOCK), N, a, x, y);
    }

    private static float[] expectedPattern(float scale, float offset) {
        float[] expected = new float[N];
        for (int i = 0; i < N; i++) {
            expected[i] = i * scale + offset;
        }
        return expected;
    }

    private DeviceBuffer ints(int... values) {
        DeviceBuffer buffer = gpu.device().allocate(ElementType.INT32, values.length);
        buffer.copyFrom(values);
        return buffer;
    }

    private void run(GraphExec exec) {
        exec.launch(gpu.stream());
        gpu.stream().synchronize();
    }

    @Test
    void ifThenRunsItsBodyOnlyWhenTheValueTheDeviceReadIsNonZero() {
        try (DeviceBuffer flag = ints(0); DeviceBuffer out = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            GraphNode set = graph.addKernel(kernels.set(condition, flag));
            ConditionalNode branch = graph.ifThen(condition, set);
            assertEquals(ConditionalType.IF, branch.type());
            assertEquals(1, branch.bodies().size());
            assertTrue(branch.body().isConditionalBody());
            branch.body().addKernel(pattern(out, 2f, 1f));
            assertEquals(List.of(set), branch.node().dependencies());
            assertEquals(GraphNodeType.CONDITIONAL, branch.node().type());

            try (GraphExec exec = graph.instantiate()) {
                // The same executable; only the value in device memory changes between launches.
                runsItsBodyExactlyWhenTheFlagIsSet(exec, flag, out, 0, 1, 0, 7);
            }
        }
    }

    @Test
    void handlesWithCudasDefaultsAreNotResetAndFollowTheKernelThatSetsThemAtEachLaunch() {
        try (DeviceBuffer flag = ints(0); DeviceBuffer out = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            ConditionalHandle condition = graph.conditionalHandle();
            assertFalse(condition.resetsEachLaunch());
            assertEquals(0, condition.defaultValue());
            ConditionalNode branch = graph.ifThen(condition, graph.addKernel(kernels.set(condition, flag)));
            branch.body().addKernel(pattern(out, 2f, 1f));
            try (GraphExec exec = graph.instantiate()) {
                runsItsBodyExactlyWhenTheFlagIsSet(exec, flag, out, 1, 0, 5, 0);
            }
        }
        try (DeviceBuffer flag = ints(1); DeviceBuffer out = gpu.device().allocateFloats(N)) {
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                ConditionalHandle condition = capture.conditionalHandle();
                assertFalse(condition.resetsEachLaunch());
                kernels.set(condition, flag).launch(gpu.stream());
                capture.ifThen(condition).body().addKernel(pattern(out, -1f, 4f));
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                out.memset(0xFF);
                run(exec);
                assertArrayEquals(expectedPattern(-1f, 4f), out.toFloatArray());
                flag.copyFrom(new int[] {0});
                out.memset(0xFF);
                run(exec);
                assertTrue(Float.isNaN(out.toFloatArray()[N - 1]), "flag 0 must leave the poisoned output alone");
            }
        }
    }

    /**
     * Launches {@code exec} once per flag value, the output poisoned before each: an IF body writing
     * {@code pattern(out, 2, 1)} runs exactly for the non-zero values.
     */
    private void runsItsBodyExactlyWhenTheFlagIsSet(GraphExec exec, DeviceBuffer flag, DeviceBuffer out,
            int... values) {
        for (int value : values) {
            flag.copyFrom(new int[] {value});
            out.memset(0xFF);
            run(exec);
            float[] result = out.toFloatArray();
            if (value != 0) {
                assertArrayEquals(expectedPattern(2f, 1f), result, "flag " + value);
            } else {
                assertTrue(Float.isNaN(result[N - 1]), "flag 0 must leave the poisoned output alone");
            }
        }
    }

    @Test
    void ifThenElseRunsExactlyOneOfItsBodies() {
        try (DeviceBuffer flag = ints(0); DeviceBuffer out = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            ConditionalNode branch = graph.ifThenElse(condition, graph.addKernel(kernels.set(condition, flag)));
            branch.body().addKernel(pattern(out, 1f, 100f));
            branch.elseBody().addKernel(pattern(out, -1f, -100f));
            try (GraphExec exec = graph.instantiate()) {
                for (int value : new int[] {1, 0, 3, 0}) {
                    flag.copyFrom(new int[] {value});
                    out.memset(0xFF);
                    run(exec);
                    float[] expected = value != 0 ? expectedPattern(1f, 100f) : expectedPattern(-1f, -100f);
                    assertArrayEquals(expected, out.toFloatArray(), "flag " + value);
                }
            }
        }
    }

    @Test
    void switchRunsTheBodyTheValueNamesAndNoneOutsideItsCases() {
        int cases = 3;
        try (DeviceBuffer index = ints(0); DeviceBuffer out = gpu.device().allocateFloats(N);
                CudaGraph graph = CudaGraph.create()) {
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            ConditionalNode choice = graph.switchOf(condition, cases, graph.addKernel(kernels.set(condition, index)));
            for (int c = 0; c < cases; c++) {
                choice.caseBody(c).addKernel(pattern(out, c + 1f, 10f * c));
            }
            try (GraphExec exec = graph.instantiate()) {
                for (int value : new int[] {2, 0, 1, 3, 1000}) {
                    index.copyFrom(new int[] {value});
                    out.memset(0xFF);
                    run(exec);
                    float[] result = out.toFloatArray();
                    if (value < cases) {
                        assertArrayEquals(expectedPattern(value + 1f, 10f * value), result, "case " + value);
                    } else {
                        assertTrue(Float.isNaN(result[0]), "value " + value + " is past the last case: no body runs");
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 5, 37})
    void aCountedWhileLoopRunsItsBodyAsOftenAsTheCountSays(int count) {
        try (DeviceBuffer remaining = ints(count); DeviceBuffer ones = gpu.device().allocateFloats(N);
                DeviceBuffer sum = gpu.device().allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            ones.copyFrom(filled(1f));
            sum.copyFrom(filled(0f));
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            ConditionalNode loop = graph.whileLoop(condition, graph.addKernel(kernels.set(condition, remaining)));
            GraphNode add = loop.body().addKernel(axpy(0.5f, ones, sum));
            loop.body().addKernel(kernels.countDown(condition, remaining), add);
            try (GraphExec exec = graph.instantiate()) {
                run(exec);
                assertArrayEquals(filled(0.5f * count), sum.toFloatArray(), "count " + count);
                int[] left = new int[1];
                remaining.copyTo(left);
                assertEquals(0, left[0]);
                // Relaunched with a new count: the decision is the device's each time.
                remaining.copyFrom(new int[] {3});
                run(exec);
                assertArrayEquals(filled(0.5f * (count + 3)), sum.toFloatArray(), "count " + count + " then 3");
            }
        }
    }

    @Test
    void aWhileLoopRunsUntilADeviceComputedValueFallsToTheThreshold() {
        float start = 1000f + TestData.randomFloats(1, TestData.newSeed())[0] * 100f;
        float threshold = 0.37f;
        float host = start;
        int hostIterations = 0;
        while (host > threshold) {
            host = -0.5f * host + host;
            hostIterations++;
        }
        try (DeviceBuffer value = gpu.device().allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            value.copyFrom(filled(start));
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            ConditionalNode loop = graph.whileLoop(condition,
                    graph.addKernel(kernels.setIfGreater(condition, value, threshold)));
            GraphNode halve = loop.body().addKernel(axpy(-0.5f, value, value));
            loop.body().addKernel(kernels.setIfGreater(condition, value, threshold), halve);
            try (GraphExec exec = graph.instantiate()) {
                run(exec);
            }
            assertTrue(hostIterations > 5, "the loop must iterate: " + hostIterations);
            assertArrayEquals(filled(host), value.toFloatArray(),
                    "start " + start + ": the host needed " + hostIterations + " halvings");
        }
    }

    @Test
    void conditionalNodesNestAndTheirBodiesKeepWhatTheyUseAlive() {
        LiveResources before = Cuda.liveResources();
        try (DeviceBuffer flag = ints(1); DeviceBuffer index = ints(1);
                DeviceBuffer out = gpu.device().allocateFloats(N); CudaGraph graph = CudaGraph.create()) {
            ConditionalHandle outer = graph.conditionalHandle(0, true);
            ConditionalNode branch = graph.ifThen(outer, graph.addKernel(kernels.set(outer, flag)));
            CudaGraph body = branch.body();
            ConditionalHandle inner = body.conditionalHandle(0, true);
            ConditionalNode choice = body.switchOf(inner, 2, body.addKernel(kernels.set(inner, index)));
            DeviceBuffer scratch = gpu.device().allocateFloats(N);
            // Poisoned: initcheck checks a graph's memcpy source at launch, before the kernel that
            // writes it has run, and would call a fresh buffer uninitialized.
            scratch.memset(0xFF);
            GraphNode write = choice.caseBody(1).addKernel(pattern(scratch, 3f, -2f));
            choice.caseBody(1).addMemcpy(out, scratch, write);
            scratch.close(); // the body holds it, so the graph and its executable do
            try (GraphExec exec = graph.instantiate()) {
                graph.close();
                assertFalse(body.isOpen(), "a body closes with the graph that holds its node");
                out.memset(0xFF);
                run(exec);
                assertArrayEquals(expectedPattern(3f, -2f), out.toFloatArray());
            }
        }
        assertEquals(before, Cuda.liveResources());
    }

    @Test
    void capturedConditionalNodesRunLikeBuiltOnes() {
        try (DeviceBuffer flag = ints(0); DeviceBuffer out = gpu.device().allocateFloats(N);
                DeviceBuffer after = gpu.device().allocateFloats(N);
                DeviceBuffer ones = gpu.device().allocateFloats(N)) {
            ones.copyFrom(filled(1f));
            CudaGraph graph;
            ConditionalNode branch;
            ConditionalNode choice;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                ConditionalHandle condition = capture.conditionalHandle(0, true);
                kernels.set(condition, flag).launch(gpu.stream());
                branch = capture.ifThen(condition);
                branch.body().addKernel(pattern(out, 1f, 5f));
                ConditionalHandle which = capture.conditionalHandle(1, true);
                choice = capture.switchOf(which, 2);
                choice.caseBody(0).addKernel(axpy(-1f, ones, out));
                choice.caseBody(1).addKernel(axpy(1f, ones, out));
                gpu.writePattern().launch(gpu.stream(), LaunchConfig.of(GRID, BLOCK), after, N, 0f, 9f);
                IllegalStateException early = assertThrows(IllegalStateException.class, branch::node);
                assertTrue(early.getMessage().contains("once the capture has ended"), early.getMessage());
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(GraphNodeType.CONDITIONAL, branch.node().type());
                assertEquals(List.of(branch.node()), choice.node().dependencies(),
                        "the SWITCH was captured after the IF");
                // Launch 1: flag 0 skips the IF; the SWITCH's handle defaults to 1: out += 1.
                out.copyFrom(filled(0f));
                after.memset(0xFF);
                run(exec);
                assertArrayEquals(filled(1f), out.toFloatArray());
                assertArrayEquals(filled(9f), after.toFloatArray());
                // Launch 2: flag 1 writes the pattern, then case 1 again (the default each launch).
                flag.copyFrom(new int[] {1});
                run(exec);
                float[] expected = expectedPattern(1f, 5f);
                for (int i = 0; i < N; i++) {
                    expected[i] += 1f;
                }
                assertArrayEquals(expected, out.toFloatArray());
            }
        }
    }

    @Test
    void ifElseAndWhileCanBeCapturedToo() {
        try (DeviceBuffer flag = ints(1); DeviceBuffer count = ints(3);
                DeviceBuffer out = gpu.device().allocateFloats(N); DeviceBuffer ones = gpu.device().allocateFloats(N);
                DeviceBuffer sum = gpu.device().allocateFloats(N)) {
            ones.copyFrom(filled(1f));
            sum.copyFrom(filled(0f));
            CudaGraph graph;
            try (StreamCapture capture = StreamCapture.begin(gpu.stream(), CaptureMode.GLOBAL)) {
                ConditionalHandle which = capture.conditionalHandle(0, true);
                kernels.set(which, flag).launch(gpu.stream());
                ConditionalNode branch = capture.ifThenElse(which);
                branch.body().addKernel(pattern(out, 1f, 0f));
                branch.elseBody().addKernel(pattern(out, -1f, 0f));
                ConditionalHandle more = capture.conditionalHandle(0, true);
                kernels.set(more, count).launch(gpu.stream());
                ConditionalNode loop = capture.whileLoop(more);
                loop.body().addKernel(kernels.countDown(more, count), loop.body().addKernel(axpy(1f, ones, sum)));
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                out.memset(0xFF);
                run(exec);
                assertArrayEquals(expectedPattern(1f, 0f), out.toFloatArray());
                assertArrayEquals(filled(3f), sum.toFloatArray());
                flag.copyFrom(new int[] {0});
                count.copyFrom(new int[] {5});
                run(exec);
                assertArrayEquals(expectedPattern(-1f, 0f), out.toFloatArray());
                assertArrayEquals(filled(8f), sum.toFloatArray());
            }
        }
    }

    @Test
    void bodiesRefuseTheNodeKindsCudaForbidsThereNamingTheRule() {
        try (CudaGraph graph = CudaGraph.create(); CudaEvent event = gpu.device().createEvent();
                CudaGraph withEvent = CudaGraph.create(); DeviceBuffer flag = ints(1)) {
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            CudaGraph body = graph.ifThen(condition).body();
            IllegalStateException record = assertThrows(IllegalStateException.class, () -> body.addEventRecord(event));
            assertTrue(record.getMessage().endsWith("is a conditional node's body, where CUDA allows only kernel, "
                    + "empty, child graph, memset, memcpy and conditional nodes, not a EVENT_RECORD node"),
                    record.getMessage());
            assertThrows(IllegalStateException.class, () -> body.addEventWait(event));

            withEvent.addEventRecord(event, withEvent.addEmpty());
            IllegalArgumentException nested = assertThrows(IllegalArgumentException.class,
                    () -> body.addChildGraph(withEvent));
            assertTrue(nested.getMessage().startsWith(withEvent + " holds a EVENT_RECORD node: "), nested.getMessage());

            IllegalArgumentException child = assertThrows(IllegalArgumentException.class,
                    () -> withEvent.addChildGraph(graph));
            assertEquals(graph + " holds a conditional node, and CUDA does not allow a graph with conditional nodes "
                    + "as a child graph", child.getMessage());

            IllegalStateException alone = assertThrows(IllegalStateException.class, body::instantiate);
            assertTrue(alone.getMessage().endsWith("runs as part of its conditional node: instantiate the graph that "
                    + "holds the node"), alone.getMessage());
            body.close(); // does nothing: the body closes with its graph
            assertTrue(body.isOpen());

            assertEquals(0, body.nodes().size(), "refused nodes were not added");
        }
    }

    @Test
    void misuseOfHandlesAndNodesIsNamed() {
        try (CudaGraph graph = CudaGraph.create(); CudaGraph other = CudaGraph.create()) {
            ConditionalHandle foreign = other.conditionalHandle(0, true);
            IllegalArgumentException wrongGraph = assertThrows(IllegalArgumentException.class,
                    () -> graph.ifThen(foreign));
            assertTrue(wrongGraph.getMessage().endsWith("was made for another graph: a conditional node takes a handle "
                    + "made by the graph that holds it"), wrongGraph.getMessage());
            ConditionalHandle condition = graph.conditionalHandle(4, false);
            assertEquals(4, condition.defaultValue());
            assertFalse(condition.resetsEachLaunch());
            IllegalArgumentException noCases = assertThrows(IllegalArgumentException.class,
                    () -> graph.switchOf(condition, 0));
            assertEquals("a SWITCH node needs at least 1 case, got 0", noCases.getMessage());
            ConditionalNode branch = graph.ifThen(condition);
            IllegalStateException noElse = assertThrows(IllegalStateException.class, branch::elseBody);
            assertEquals("only an IF/ELSE node has an ELSE body; this is IF", noElse.getMessage());
            assertThrows(IllegalStateException.class, () -> branch.caseBody(0));
            // Driver 580 answers a second node on one handle with cudaErrorInvalidValue.
            IllegalArgumentException reused = assertThrows(IllegalArgumentException.class,
                    () -> graph.whileLoop(condition));
            assertEquals(condition + " already drives a conditional node, and CUDA allows one node per handle: make "
                    + "another handle", reused.getMessage());
            ConditionalNode loop = graph.whileLoop(graph.conditionalHandle(0, true));
            assertThrows(IllegalStateException.class, () -> graph.switchOf(graph.conditionalHandle(0, true), 2).body());
            assertEquals(ConditionalType.WHILE, loop.type());
            assertEquals(List.of(ConditionalType.IF, ConditionalType.WHILE, ConditionalType.SWITCH),
                    graph.nodes().stream().map(n -> n.conditional().orElseThrow().type()).toList());
            try (CudaGraph lonely = CudaGraph.create()) {
                lonely.conditionalHandle(0, true);
                lonely.addEmpty();
                GraphInstantiateException unused = assertThrows(GraphInstantiateException.class, lonely::instantiate);
                assertEquals(InstantiateResult.CONDITIONAL_HANDLE_UNUSED, unused.result(), unused.getMessage());
            }
            try (DeviceBuffer tiny = gpu.device().allocate(ElementType.INT8, 2)) {
                IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                        () -> kernels.set(condition, tiny));
                assertTrue(small.getMessage().startsWith("value must hold at least 4 bytes"), small.getMessage());
            }
        }
    }

    @Test
    void aGraphWithConditionalNodesHasOneExecutableAtATime() {
        try (CudaGraph graph = CudaGraph.create(); DeviceBuffer flag = ints(1);
                DeviceBuffer out = gpu.device().allocateFloats(N)) {
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            graph.ifThen(condition, graph.addKernel(kernels.set(condition, flag))).body()
                    .addKernel(pattern(out, 1f, 0f));
            GraphExec first = graph.instantiate();
            IllegalStateException second = assertThrows(IllegalStateException.class, graph::instantiate);
            assertTrue(second.getMessage().endsWith("holds conditional nodes, and CUDA allows one executable of such a "
                    + "graph at a time: close the other one first"), second.getMessage());
            first.close();
            try (GraphExec again = graph.instantiate()) {
                out.memset(0xFF);
                run(again);
                assertArrayEquals(expectedPattern(1f, 0f), out.toFloatArray());
            }
        }
    }

    @Test
    void describeAndDotShowConditionalNodesAndTheirBodies() {
        try (CudaGraph graph = CudaGraph.create(); DeviceBuffer flag = ints(1);
                DeviceBuffer out = gpu.device().allocateFloats(N)) {
            ConditionalHandle condition = graph.conditionalHandle(0, true);
            ConditionalNode branch = graph.ifThenElse(condition, graph.addKernel(kernels.set(condition, flag)));
            branch.body().addKernel(pattern(out, 1f, 0f));
            branch.elseBody().addMemset(out, 0);
            String drawing = graph.describe();
            assertTrue(drawing.contains("NODE 1: CONDITIONAL"), drawing);
            assertTrue(Pattern.compile("Condition:\\s+IF/ELSE").matcher(drawing).find(), drawing);
            assertTrue(Pattern.compile("Bodies:\\s+1, 1 nodes").matcher(drawing).find(), drawing);
            assertTrue(drawing.contains("NODE 1, body 0:") && drawing.contains("NODE 1, body 1:"), drawing);
            assertTrue(drawing.contains("write_pattern") && drawing.contains("NODE 0: MEMSET"), drawing);
            String dot = graph.toDot();
            assertTrue(dot.contains("subgraph cluster_n1_b0 {") && dot.contains("subgraph cluster_n1_b1 {"), dot);
            assertTrue(dot.contains("n1 -> n1_b0_n0 [style=dashed];"), dot);
        }
    }

    private static float[] filled(float value) {
        float[] values = new float[N];
        Arrays.fill(values, value);
        return values;
    }
}
