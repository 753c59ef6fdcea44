/**
 * The CUDA kernels shipped in the cudagraph4j jar: a CUTLASS-style single-precision GEMM with
 * fused epilogues ({@link org.cudagraph4j.kernels.Sgemm}) on CUDA cores and on the TF32 tensor
 * cores (3xTF32, FP32-accurate, and plain TF32; see {@link org.cudagraph4j.kernels.MathMode}), a
 * standalone bias+ReLU epilogue
 * ({@link org.cudagraph4j.kernels.BiasRelu}), and the two put together as {@code torch.nn.Linear}
 * followed by ReLU ({@link org.cudagraph4j.kernels.Linear}).
 *
 * <pre>{@code
 * try (ShippedKernels kernels = ShippedKernels.load(device)) {
 *     Linear layer = new Linear(kernels, weight, bias, 512, 640);
 *     layer.forward(stream, 2048, x, y, Linear.Mode.FUSED);
 * }
 * }</pre>
 *
 * <p>The GEMM runs FP32 FFMA on CUDA cores (no tensor cores, no TF32) on row-major matrices, with B
 * either [k, n] or stored transposed as [n, k], the way {@code torch.nn.Linear} stores its weight.
 * Its epilogue is a linear combination, {@code C = alpha * A * B + beta * C} (with {@code beta == 0}
 * C is not read), or bias+ReLU, {@code D = max(A * B + bias[column], 0)}; ReLU keeps NaN, as
 * {@code torch.relu} does. Instances are named the CUTLASS way, e.g.
 * {@code cg4j_simt_sgemm_f32_128x128x16_3_tnt_align1_bias_f32_relu}: threadblock tile, pipeline
 * stages, layouts of A, B and C ({@code t} row-major, {@code n} column-major), elements per access
 * of B, epilogue. {@link org.cudagraph4j.kernels.GemmConfig} describes each one, and
 * {@link org.cudagraph4j.kernels.Sgemm#choose Sgemm.choose} picks the 128x128 tile when its grid
 * fills every multiprocessor, the seed's 64x32 tile below that, and the instance with 16-byte loads
 * of B whenever B's leading dimension and address allow them (for B stored [n, k]: K a multiple of 4
 * and B 16-byte aligned), else the same tile with 4-byte loads.
 *
 * <p>{@code kernels/build.sh} compiles every instance into one cubin per major architecture (sm_80,
 * which also runs on 8.6 and 8.9, sm_90, sm_100 and sm_120) plus PTX for compute_120, all packed in the jar with a manifest.
 * {@link org.cudagraph4j.kernels.ShippedKernels#load ShippedKernels.load(device)} picks the cubin of
 * the device's major version with the highest minor not above the device's; failing that, the PTX,
 * which the driver compiles when it is loaded and which needs compute capability 12.0 or newer. A
 * device that nothing fits (below 8.0, or 11.x) gets an {@link java.lang.IllegalStateException}
 * naming what is shipped.
 *
 * <p>Performance, measured on one H200 (sm_90) against cuBLAS SGEMM without TF32 (see
 * {@code kernels/PERFORMANCE.md}): at 4096³ the large tile reaches 92.7% of cuBLAS with 16-byte
 * loads of B, 87.7% without them, and 83.6% with B transposed (its 16-byte loader, staged through
 * registers, measured 78.1%, so the large tile keeps the 4-byte one). The fused Linear is slower
 * than cuBLAS followed by the separate epilogue: 0.85x at 2048 x 640 x 512, on the seed tile with
 * B read 16 bytes at a time. Only sm_90 was run; the other cubins are built from the same source.
 *
 * <p>Thread safety: {@link org.cudagraph4j.kernels.ShippedKernels} may be shared and used from
 * several threads; {@link org.cudagraph4j.kernels.Sgemm}, {@link org.cudagraph4j.kernels.BiasRelu}
 * and {@link org.cudagraph4j.kernels.Linear} are immutable and safe to share. Every call only queues
 * work on the stream it is given, so launches are ordered per stream as usual, and the caller orders
 * streams that share buffers. A {@link org.cudagraph4j.kernels.Linear} refers to its weight and bias
 * but does not own them. Closing the {@code ShippedKernels} unloads the image once no executable
 * graph still uses it.
 */
package org.cudagraph4j.kernels;
