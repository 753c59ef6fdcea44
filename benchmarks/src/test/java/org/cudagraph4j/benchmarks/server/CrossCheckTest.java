package org.cudagraph4j.benchmarks.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The answers' cross-check, between two servers on the CPU backend. */
class CrossCheckTest {
    private static final List<Integer> ROWS = List.of(1, 3, 8, 20);

    /** {@code backend} served as {@code name} on a free port, with bodies up to 1 MiB. */
    private static InferenceServer serve(String name, InferenceBackend backend) {
        return new InferenceServer(name, backend, 0, ServerLimits.defaults().withMaxBodyBytes(1 << 20));
    }

    private static URI base(InferenceServer server) {
        return URI.create("http://127.0.0.1:" + server.port());
    }

    @Test
    void theMetricIsTheLargestDifferenceOverTheLargestReferenceMagnitude() {
        assertEquals(0, CrossCheck.relativeError(new float[] {1, 2}, new float[] {1, 2}));
        assertEquals(0.5 / 4, CrossCheck.relativeError(new float[] {1, 3.5f}, new float[] {1, 4}), 1e-12);
        // a near-zero output does not blow it up: the error is relative to the answer's largest value
        assertEquals(1e-6 / 2, CrossCheck.relativeError(new float[] {1e-6f, 2}, new float[] {0, 2}), 1e-9);
        // an all-zero reference: absolute differences over 1e-6
        assertEquals(0.5, CrossCheck.relativeError(new float[] {5e-7f}, new float[] {0}), 1e-6);
        assertEquals(Double.POSITIVE_INFINITY, CrossCheck.relativeError(new float[] {1}, new float[] {1, 2}));
        assertEquals(Double.POSITIVE_INFINITY, CrossCheck.relativeError(new float[] {Float.NaN}, new float[] {1}));
    }

    @Test
    void inputsAreDeterministicAndExactInDecimal() {
        float[] a = CrossCheck.input(3, 16, 7);
        float[] b = CrossCheck.input(3, 16, 7);
        assertEquals(48, a.length);
        for (int i = 0; i < a.length; i++) {
            assertEquals(a[i], b[i]);
            assertTrue(a[i] >= -1 && a[i] < 1);
            assertEquals(a[i], (float) Double.parseDouble(Double.toString(a[i])));
            assertEquals(0, Math.abs(a[i] * 4096 % 1), "a multiple of 1/4096");
        }
    }

    @Test
    void twoServersOfTheSameModelAgreeWithEachOtherAndWithTheCpu() throws Exception {
        MlpWeights model = MlpWeights.random(16, 3, 42);
        try (InferenceServer a = serve("mlp", new CpuBackend(model));
             InferenceServer b = serve("mlp", new CpuBackend(MlpWeights.random(16, 3, 42)))) {
            CrossCheck.Result result = CrossCheck.run(base(a), base(b), "mlp", ROWS, 1e-4, model, 7);
            assertNull(result.problem());
            assertTrue(result.agree(), CrossCheck.table(result));
            assertEquals(ROWS.size() * 2 * 2, result.cases().size(), "json and binary, alone and all at once");
            assertEquals(0, result.worst(), "the same code on the same inputs");
            assertTrue(CrossCheck.table(result).contains("PASS: 16 of 16 answers agree"), CrossCheck.table(result));
        }
    }

    @Test
    void anotherModelDisagreesEverywhere() {
        try (InferenceServer a = serve("mlp", new CpuBackend(MlpWeights.random(16, 3, 42)));
             InferenceServer b = serve("mlp", new CpuBackend(MlpWeights.random(16, 3, 43)))) {
            CrossCheck.Result result = CrossCheck.run(base(a), base(b), "mlp", ROWS, 1e-4, null, 7);
            assertNull(result.problem());
            assertFalse(result.agree());
            assertTrue(result.cases().stream().noneMatch(CrossCheck.Case::agree));
            assertTrue(result.worst() > 0.01, CrossCheck.table(result));
            assertTrue(CrossCheck.table(result).contains("FAIL: 0 of 16"), CrossCheck.table(result));
        }
    }

    @Test
    void aServerThatHandsBackRowsInTheWrongOrderIsCaught() {
        MlpWeights model = MlpWeights.random(8, 2, 5);
        InferenceBackend reversing = new TestBackend(8, rows -> {
            float[] answer = model.forward(rows);
            float[] reversed = new float[answer.length];
            for (int r = 0; r < answer.length / 8; r++) {
                System.arraycopy(answer, r * 8, reversed, answer.length - (r + 1) * 8, 8);
            }
            return CompletableFuture.completedFuture(reversed);
        });
        try (InferenceServer a = serve("mlp", new CpuBackend(model));
             InferenceServer b = serve("mlp", reversing)) {
            CrossCheck.Result result = CrossCheck.run(base(a), base(b), "mlp", List.of(1, 5), 1e-4, model, 7);
            assertFalse(result.agree(), CrossCheck.table(result));
            for (CrossCheck.Case c : result.cases()) {
                assertEquals(c.rows() == 1, c.agree(), "one row cannot be out of order: " + c);
                assertEquals(0, c.errorA());
            }
        }
    }

    @Test
    void aServerThatCannotBeAskedIsAProblemNotAnAgreement() {
        try (InferenceServer a = serve("mlp", new CpuBackend(MlpWeights.random(8, 2, 1)));
             InferenceServer b = serve("other", new CpuBackend(MlpWeights.random(8, 2, 1)))) {
            CrossCheck.Result result = CrossCheck.run(base(a), base(b), "mlp", ROWS, 1e-4, null, 7);
            assertFalse(result.agree());
            assertNotNull(result.problem());
            assertTrue(result.problem().contains("404"), result.problem());
            assertTrue(CrossCheck.table(result).contains("cannot compare"), CrossCheck.table(result));
        }
        try (InferenceServer a = serve("mlp", new CpuBackend(MlpWeights.random(8, 2, 1)));
             InferenceServer b = serve("mlp", new CpuBackend(MlpWeights.random(4, 2, 1)))) {
            CrossCheck.Result result = CrossCheck.run(base(a), base(b), "mlp", ROWS, 1e-4, null, 7);
            assertFalse(result.agree());
            assertTrue(result.problem().contains("differ in shape"), result.problem());
        }
    }
}
