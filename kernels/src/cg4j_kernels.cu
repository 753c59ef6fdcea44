// cudagraph4j kernels: every extern "C" instance shipped in the cubins.
// Parameter lists, launch shapes and the naming scheme: kernels/README.md.
#include "cg4j/instances.cuh"

#define CG4J_SGEMM(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LAYOUT_B, ALIGN_B, STAGES, PAD_BN, MIN_BLOCKS)       \
  using NAME##_t = cg4j::SimtSgemm<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, ThreadShape<TM, TN>, \
                                   LAYOUT_B, ALIGN_B, STAGES, CG4J_OUTPUT_OP_##EPI, PAD_BN>;                     \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, MIN_BLOCKS)

#define CG4J_SGEMM_SPLITK(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LAYOUT_B, ALIGN_B, STAGES, PAD_BN, MIN_BLOCKS, \
                          REDUCTION_BATCH)                                                                      \
  using NAME##_t =                                                                                              \
      cg4j::SimtSgemmSplitK<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, ThreadShape<TM, TN>, LAYOUT_B,      \
                            ALIGN_B, STAGES, CG4J_OUTPUT_OP_##EPI, PAD_BN,                                      \
                            cg4j::gemm::threadblock::GemmIdentityThreadblockSwizzle, REDUCTION_BATCH>;          \
  CG4J_SGEMM_##EPI##_SPLITK_ENTRY(NAME, NAME##_t, MIN_BLOCKS)

#define CG4J_TENSOROP_SGEMM(NAME, EPI, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH, GROUP, MIN_BLOCKS)  \
  using NAME##_t = cg4j::TensorOpSgemm<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, LAYOUT_B, ALIGN, ALIGN, \
                                       STAGES, cg4j::arch::TensorMath::MATH, CG4J_OUTPUT_OP_##EPI, GROUP>;      \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, MIN_BLOCKS)

#define CG4J_TENSOROP_SGEMM_SPLITK(NAME, EPI, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH, GROUP,         \
                                   MIN_BLOCKS)                                                                  \
  using NAME##_t = cg4j::TensorOpSgemmSplitK<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, LAYOUT_B, ALIGN,   \
                                             ALIGN, STAGES, cg4j::arch::TensorMath::MATH, CG4J_OUTPUT_OP_##EPI, \
                                             GROUP>;                                                            \
  CG4J_SGEMM_##EPI##_SPLITK_ENTRY(NAME, NAME##_t, MIN_BLOCKS)

// wgmma exists on sm_90a alone: its instances are in that cubin only (the manifest says so).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CG4J_WGMMA_SGEMM(NAME, EPI, TBM, TBN, ALIGN, STAGES, MATH)                                                \
  using NAME##_t = cg4j::WgmmaSgemm<GemmShape<TBM, TBN, 32>, ALIGN, ALIGN, STAGES, cg4j::arch::TensorMath::MATH, \
                                    CG4J_OUTPUT_OP_##EPI>;                                                     \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, 1)
#define CG4J_WGMMA_SGEMM_SPLITK(NAME, EPI, TBM, TBN, ALIGN, STAGES, MATH)                                         \
  using NAME##_t = cg4j::WgmmaSgemmSplitK<GemmShape<TBM, TBN, 32>, ALIGN, ALIGN, STAGES,                         \
                                          cg4j::arch::TensorMath::MATH, CG4J_OUTPUT_OP_##EPI>;                 \
  CG4J_SGEMM_##EPI##_SPLITK_ENTRY(NAME, NAME##_t, 1)
#else
#define CG4J_WGMMA_SGEMM(...)
#define CG4J_WGMMA_SGEMM_SPLITK(...)
#endif

#define CG4J_GEMV(NAME, EPI, ROWS, COLUMNS_PER_WARP, WARPS, WARPS_PER_COLUMN)                                       \
  using NAME##_t =                                                                                             \
      cg4j::gemv::kernel::GemvSimt<ROWS, COLUMNS_PER_WARP, WARPS, WARPS_PER_COLUMN, CG4J_OUTPUT_OP_##EPI>;     \
  CG4J_GEMV_##EPI##_ENTRY(NAME, NAME##_t)
#include "instances.def"

// Standalone bias + ReLU epilogue: (int M, int N, const float* X, int ldx, const float* bias,
// float* Y, int ldy); any grid/block; seed launch <<<{256,2},{8,32},0>>>.
extern "C" __global__ void cg4j_epilogue_f32_bias_f32_relu(int M, int N, const float *X, int ldx,
                                                           const float *bias, float *Y, int ldy) {
  cg4j::epilogue::kernel::ElementwiseEpilogue<cg4j::epilogue::thread::LinearCombinationBiasRelu>::run(
      M, N, X, ldx, {bias}, Y, ldy);
}

// The same in half precision: X, bias and Y all __half or all __nv_bfloat16, the sum and ReLU in
// float, the result rounded to nearest even.
#define CG4J_HALF_EPILOGUE(NAME, ELEMENT)                                                                          \
  extern "C" __global__ void NAME(int M, int N, const ELEMENT *X, int ldx, const ELEMENT *bias, ELEMENT *Y,      \
                                  int ldy) {                                                                     \
    cg4j::epilogue::kernel::ElementwiseEpilogue<cg4j::epilogue::thread::LinearCombinationBiasReluOf<ELEMENT>,    \
                                                ELEMENT>::run(M, N, X, ldx, {bias}, Y, ldy);                     \
  }
CG4J_HALF_EPILOGUE(cg4j_epilogue_f16_bias_f16_relu, __half)
CG4J_HALF_EPILOGUE(cg4j_epilogue_bf16_bias_bf16_relu, __nv_bfloat16)

// Half-precision GEMV with bias+ReLU for one row, and for batches of up to 8 rows: (int batch, int N, int K,
// const T* X, const T* W, const T* bias, T* Y), T __half or __nv_bfloat16; grid ceil(N/4), block 128.
#define CG4J_HALF_GEMV(NAME, ELEMENT, MAX_BATCH, UNROLL)                                                           \
  extern "C" __global__ void __launch_bounds__(                                                                  \
      cg4j::gemv::kernel::GemvHalfBiasRelu<ELEMENT, MAX_BATCH, UNROLL>::kThreads)                                 \
      NAME(int batch, int N, int K, const ELEMENT *X, const ELEMENT *W, const ELEMENT *bias, ELEMENT *Y) {       \
    cg4j::gemv::kernel::GemvHalfBiasRelu<ELEMENT, MAX_BATCH, UNROLL>::run(batch, N, K, X, W, bias, Y);           \
  }
CG4J_HALF_GEMV(cg4j_gemv_f16_1x4_bias_f16_relu, __half, 1, 8)
CG4J_HALF_GEMV(cg4j_gemv_bf16_1x4_bias_bf16_relu, __nv_bfloat16, 1, 8)
CG4J_HALF_GEMV(cg4j_gemv_f16_8x4_bias_f16_relu, __half, 8, 2)
CG4J_HALF_GEMV(cg4j_gemv_bf16_8x4_bias_bf16_relu, __nv_bfloat16, 8, 2)
