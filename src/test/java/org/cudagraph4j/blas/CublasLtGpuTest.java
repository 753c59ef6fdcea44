package org.cudagraph4j.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaStream;
import org.cudagraph4j.DeviceBuffer;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.GpuTest;
import org.cudagraph4j.TestData;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Products on cuBLASLt against float64 on fresh random data, with outputs poisoned before each run:
 * every order and transpose of the operands, each compute type, BF16 and FP16 with each epilogue,
 * scaling and accumulation into C; and the refusals of operands that do not fit the plan.
 *
 * <p>Each element is checked against a bound derived from the formats: the output's rounding
 * ({@code u·|d|}: u = 2⁻²⁴, 2⁻¹¹ and 2⁻⁸ for FP32, FP16 and BF16), plus the inputs' rounding by the
 * compute type and an FP32 accumulation in any order ({@code (r + k·2⁻²⁴)·Σ|a·b|}, r = 2⁻¹⁰ for TF32
 * and FP16, 2⁻⁷ for BF16, 2⁻²¹ for three BF16 terms per input, 0 for exact products), plus for GELU a
 * fast tanh's 2⁻¹¹ of the argument.
 */
@GpuTest
class CublasLtGpuTest {
    private static CublasLt lt;
    private static CudaStream stream;

    @BeforeAll
    static void open() {
        lt = CublasLt.create(TestData.device());
        stream = TestData.device().createStream();
    }

    @AfterAll
    static void close() {
        if (stream != null) {
            stream.close();
        }
        if (lt != null) {
            lt.close();
        }
    }

    @Test
    void everyOrderAndTransposeOfAnFp32ProductMatchesFloat64() {
        int m = 37;
        int n = 29;
        int k = 45;
        for (MatrixLayout.Order orderA : MatrixLayout.Order.values()) {
            for (MatrixLayout.Order orderB : MatrixLayout.Order.values()) {
                for (MatrixLayout.Order orderD : MatrixLayout.Order.values()) {
                    for (Matmul.Op opA : Matmul.Op.values()) {
                        for (Matmul.Op opB : Matmul.Op.values()) {
                            // Padded leading dimensions: cuBLASLt must skip the NaN gaps.
                            MatrixLayout a = padded(ElementType.FLOAT32, opA == Matmul.Op.NONE ? m : k,
                                    opA == Matmul.Op.NONE ? k : m, orderA, 3);
                            MatrixLayout b = padded(ElementType.FLOAT32, opB == Matmul.Op.NONE ? k : n,
                                    opB == Matmul.Op.NONE ? n : k, orderB, 5);
                            MatrixLayout d = padded(ElementType.FLOAT32, m, n, orderD, 2);
                            check(Matmul.of(a, opA, b, opB, d), 1f, 0f);
                        }
                    }
                }
            }
        }
    }

    @Test
    void halfPrecisionProductsWithEachEpilogueMatchFloat64WithinTheirRounding() {
        for (ElementType input : new ElementType[] {ElementType.BFLOAT16, ElementType.FLOAT16}) {
            for (ElementType output : new ElementType[] {input, ElementType.FLOAT32}) {
                for (MatmulEpilogue epilogue : MatmulEpilogue.values()) {
                    // A Linear layer, y = x Wᵀ (+ b), row-major as PyTorch lays it out.
                    check(Matmul.of(MatrixLayout.rowMajor(input, 64, 256), Matmul.Op.NONE,
                            MatrixLayout.rowMajor(input, 96, 256), Matmul.Op.TRANSPOSE,
                            MatrixLayout.rowMajor(output, 64, 96)).withEpilogue(epilogue), 1f, 0f);
                }
                // Column-major D: the bias runs along its rows.
                check(Matmul.of(MatrixLayout.columnMajor(input, 40, 72), MatrixLayout.columnMajor(input, 72, 24),
                        MatrixLayout.columnMajor(output, 40, 24)).withEpilogue(MatmulEpilogue.RELU_BIAS), 1f, 0f);
            }
        }
    }

    @Test
    void fp32ComputeTypesRoundTheirInputsNoFurtherThanTheirFormats() {
        for (MatmulCompute compute : new MatmulCompute[] {MatmulCompute.FP32, MatmulCompute.FP32_FAST_TF32,
                MatmulCompute.FP32_FAST_BF16, MatmulCompute.FP32_FAST_FP16}) {
            check(Matmul.of(MatrixLayout.rowMajor(ElementType.FLOAT32, 128, 512),
                    MatrixLayout.rowMajor(ElementType.FLOAT32, 512, 192),
                    MatrixLayout.rowMajor(ElementType.FLOAT32, 128, 192)).withCompute(compute)
                    .withEpilogue(MatmulEpilogue.BIAS), 1f, 0f);
        }
    }

    @Test
    void fp32EmulatedOnBf16TensorCoresKeepsFp32sAccuracy() {
        check(Matmul.of(MatrixLayout.rowMajor(ElementType.FLOAT32, 64, 256),
                MatrixLayout.rowMajor(ElementType.FLOAT32, 256, 64),
                MatrixLayout.rowMajor(ElementType.FLOAT32, 64, 64)).withCompute(MatmulCompute.FP32_EMULATED_BF16X9)
                .withEpilogue(MatmulEpilogue.RELU_BIAS), 1f, 0f);
    }

    @Test
    void alphaAndBetaScaleAndCIsReadFromItsOwnBufferOrFromDInPlace() {
        MatrixLayout layout = MatrixLayout.rowMajor(ElementType.FLOAT32, 48, 40);
        Matmul matmul = Matmul.of(MatrixLayout.rowMajor(ElementType.FLOAT32, 48, 64),
                MatrixLayout.rowMajor(ElementType.FLOAT32, 64, 40), layout);
        check(matmul, 0.5f, 2f);
        check(matmul.withEpilogue(MatmulEpilogue.RELU_BIAS), -1.5f, 0.25f);
    }

    @Test
    void operandsThatDoNotFitThePlanAreRefusedByName() {
        CudaDevice device = TestData.device();
        Matmul matmul = Matmul.of(MatrixLayout.rowMajor(ElementType.BFLOAT16, 8, 64),
                MatrixLayout.rowMajor(ElementType.BFLOAT16, 64, 32), MatrixLayout.rowMajor(ElementType.BFLOAT16, 8, 32))
                .withEpilogue(MatmulEpilogue.RELU_BIAS);
        try (MatmulPlan plan = lt.plan(matmul);
                DeviceBuffer a = device.allocate(ElementType.BFLOAT16, 8 * 64 + 8);
                DeviceBuffer b = device.allocate(ElementType.BFLOAT16, 64 * 32);
                DeviceBuffer d = device.allocate(ElementType.BFLOAT16, 8 * 32);
                DeviceBuffer bias = device.allocate(ElementType.BFLOAT16, 32);
                DeviceBuffer floats = device.allocateFloats(64 * 32)) {
            long seed = TestData.newSeed();
            for (DeviceBuffer operand : List.of(a, b, bias)) { // the one run below reads them: never uninitialized
                MatrixData.write(operand, MatrixData.randomVector(Math.toIntExact(operand.length()), ElementType.BFLOAT16,
                        seed++));
            }
            assertEquals("B must hold BFLOAT16, not FLOAT32 (" + matmul + ")", assertThrows(IllegalArgumentException.class,
                    () -> plan.run(stream, a, floats, d, bias)).getMessage());
            assertTrue(assertThrows(IllegalArgumentException.class, () -> plan.run(stream, a, b.slice(0, 100), d, bias))
                    .getMessage().startsWith("B needs 2048 elements but "));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> plan.run(stream, a.slice(8, 512), b, d, bias))
                    .getMessage().contains("is not aligned to the 256 bytes the plan was chosen for"));
            assertEquals("RELU_BIAS reads a bias, and none was given",
                    assertThrows(IllegalArgumentException.class, () -> plan.run(stream, a, b, d)).getMessage());
            assertTrue(assertThrows(IllegalArgumentException.class, () -> plan.run(stream, a, b, a.slice(0, 256), bias))
                    .getMessage().startsWith("D overlaps A"));
            assertEquals("beta is 1.0, so C must be given", assertThrows(IllegalArgumentException.class,
                    () -> plan.run(stream, 1f, a, b, 1f, null, d, bias)).getMessage());
            try (MatmulPlan plain = lt.plan(matmul.withEpilogue(MatmulEpilogue.NONE))) {
                assertTrue(assertThrows(IllegalArgumentException.class, () -> plain.run(stream, a, b, d, bias))
                        .getMessage().startsWith("a bias was given, but the epilogue NONE reads none"));
            }
            // A view at a 16-byte offset runs on a plan chosen for 16-byte alignment.
            try (MatmulPlan aligned16 = lt.plan(matmul.withAlignment(16))) {
                aligned16.run(stream, a.slice(8, 512), b, d, bias);
                stream.synchronize();
            }
            // The handle's workspace serves one stream: another would race it.
            try (CudaStream other = device.createStream()) {
                assertTrue(assertThrows(IllegalStateException.class, () -> plan.run(other, a, b, d, bias)).getMessage()
                        .contains("give each stream a CublasLt of its own"));
            }
            plan.close();
            assertThrows(IllegalStateException.class, () -> plan.run(stream, a, b, d, bias));
        }
        assertThrows(IllegalArgumentException.class, () -> Matmul.of(MatrixLayout.rowMajor(ElementType.FLOAT32, 8, 64),
                MatrixLayout.rowMajor(ElementType.FLOAT32, 32, 64), MatrixLayout.rowMajor(ElementType.FLOAT32, 8, 32)));
    }

    @Test
    void aClosedHandleRefusesAndItsWorkspaceOutlivesItOnlyInGraphs() {
        CublasLt handle = CublasLt.create(TestData.device(), 1 << 20);
        Matmul matmul = Matmul.of(MatrixLayout.rowMajor(ElementType.FLOAT32, 4, 4),
                MatrixLayout.rowMajor(ElementType.FLOAT32, 4, 4), MatrixLayout.rowMajor(ElementType.FLOAT32, 4, 4));
        MatmulPlan plan = handle.plan(matmul);
        handle.close();
        handle.close();
        assertFalse(handle.isOpen());
        assertThrows(IllegalStateException.class, () -> handle.plan(matmul));
        try (DeviceBuffer x = TestData.device().allocateFloats(16)) {
            assertTrue(assertThrows(IllegalStateException.class, () -> plan.run(stream, x, x, x)).getMessage()
                    .contains("closed"));
        }
    }

    private static MatrixLayout padded(ElementType type, int rows, int columns, MatrixLayout.Order order, int pad) {
        return new MatrixLayout(type, rows, columns, order, (order == MatrixLayout.Order.ROW_MAJOR ? columns : rows) + pad);
    }

    /** Runs {@code matmul} once on fresh random operands, D poisoned with NaN, and checks every element. */
    static void check(Matmul matmul, float alpha, float beta) {
        CudaDevice device = TestData.device();
        long seed = TestData.newSeed();
        MatrixData a = MatrixData.random(matmul.a(), seed);
        MatrixData b = MatrixData.random(matmul.b(), seed + 1);
        MatrixData c = MatrixData.random(matmul.d(), seed + 2);
        float[] bias = MatrixData.randomVector(Math.toIntExact(matmul.biasLength()), matmul.d().type(), seed + 3);
        List<DeviceBuffer> buffers = new ArrayList<>();
        try (MatmulPlan plan = lt.plan(matmul)) {
            DeviceBuffer aBuffer = keep(buffers, a.upload(device));
            DeviceBuffer bBuffer = keep(buffers, b.upload(device));
            DeviceBuffer dBuffer = keep(buffers, device.allocate(matmul.d().type(), matmul.d().span()));
            DeviceBuffer biasBuffer = null;
            if (matmul.epilogue().hasBias()) {
                biasBuffer = keep(buffers, device.allocate(matmul.d().type(), bias.length));
                MatrixData.write(biasBuffer, bias);
            }
            // beta != 0 reads C: from D itself (in place) when C's values are written there.
            MatrixData.write(dBuffer, beta == 0 ? TestData.nans(c.values.length) : c.values);
            plan.run(stream, alpha, aBuffer, bBuffer, beta, beta == 0 ? null : dBuffer, dBuffer, biasBuffer);
            stream.synchronize();
            float[] got = dBuffer.toFloatArray();
            double[][] reference = MatrixData.product(matmul, a, b, alpha, beta, c);
            assertWithinBound(matmul, reference, bias, got, c, beta, TestData.seedDescription(seed));
        } finally {
            buffers.forEach(DeviceBuffer::close);
        }
    }

    private static DeviceBuffer keep(List<DeviceBuffer> buffers, DeviceBuffer buffer) {
        buffers.add(buffer);
        return buffer;
    }

    private static void assertWithinBound(Matmul matmul, double[][] reference, float[] bias, float[] got, MatrixData c,
            double beta, String seed) {
        int n = Math.toIntExact(matmul.n());
        double unit = switch (matmul.d().type()) {
            case BFLOAT16 -> 0x1p-8;
            case FLOAT16 -> 0x1p-11;
            default -> 0x1p-24;
        };
        double inputRounding = switch (matmul.compute()) {
            case FP32_FAST_TF32, FP32_FAST_FP16 -> 0x1p-10;
            case FP32_FAST_BF16 -> 0x1p-7;
            case FP32_EMULATED_BF16X9 -> 0x1p-21;
            default -> 0;
        };
        double accumulation = inputRounding + (matmul.k() + 2) * 0x1p-24;
        boolean rowMajor = matmul.d().order() == MatrixLayout.Order.ROW_MAJOR;
        for (int i = 0; i < matmul.m(); i++) {
            for (int j = 0; j < n; j++) {
                double pre = reference[0][i * n + j] + (matmul.epilogue().hasBias() ? bias[rowMajor ? j : i] : 0);
                double expected = switch (matmul.epilogue()) {
                    case RELU, RELU_BIAS -> Math.max(pre, 0);
                    case GELU, GELU_BIAS -> gelu(pre);
                    default -> pre;
                };
                boolean gelu = matmul.epilogue() == MatmulEpilogue.GELU || matmul.epilogue() == MatmulEpilogue.GELU_BIAS;
                double bound = unit * Math.abs(expected) + (gelu ? 1.13 : 1) * accumulation * reference[1][i * n + j]
                        + (gelu ? 0x1p-11 * Math.abs(pre) : 0) + 1e-30;
                double actual = got[MatrixData.index(matmul.d(), i, j)];
                if (!(Math.abs(actual - expected) <= bound)) {
                    fail(matmul + " at (" + i + ", " + j + "): " + actual + ", float64 gives " + expected + ", bound "
                            + bound + " (" + seed + ")");
                }
            }
        }
        if (matmul.d().leadingDimension() > (rowMajor ? matmul.n() : matmul.m()) && beta == 0) {
            int gap = MatrixData.index(matmul.d(), 0, 0) + Math.toIntExact(rowMajor ? matmul.n() : matmul.m());
            assertTrue(Float.isNaN(got[gap]), "the gap after D's first " + (rowMajor ? "row" : "column") + " is not written");
        }
    }

    /** GELU's tanh form, as cuBLASLt computes it. */
    static double gelu(double x) {
        return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
    }
}
