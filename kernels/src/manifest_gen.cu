// cudagraph4j kernels: prints the instance part of build/manifest.properties (host-only program,
// run by build.sh; needs no GPU). Launch metadata comes from the same types the kernels use, so the
// manifest cannot drift from the cubins.
#include <cstdio>

#include "cg4j/instances.cuh"

#define CG4J_FAMILY_LINCOMB "sgemm_lincomb"
#define CG4J_FAMILY_BIAS_RELU "sgemm_bias_relu"
#define CG4J_GEMV_FAMILY_LINCOMB "gemv_lincomb"
#define CG4J_GEMV_FAMILY_BIAS_RELU "gemv_bias_relu"

static void print_sgemm(const char *name, const char *family, bool split_k, int tbm, int tbn, int tbk, int wm, int wn,
                        int tm, int tn, char layout_b, int align_b, int stages, int threads, int smem_bytes,
                        int reduction_batch, const char *math = "fp32", int align_a = 1) {
  std::printf("kernel.%s.family=%s%s\n", name, family, split_k ? "_splitk" : "");
  std::printf("kernel.%s.math=%s\n", name, math);
  std::printf("kernel.%s.threads=%d\n", name, threads);
  std::printf("kernel.%s.block=%d,1,1\n", name, threads);
  std::printf("kernel.%s.sharedMemBytes=%d\n", name, smem_bytes);
  std::printf("kernel.%s.grid=ceil(M/%d),ceil(N/%d),%s\n", name, tbm, tbn, split_k ? "slices" : "1");
  std::printf("kernel.%s.tileM=%d\n", name, tbm);
  std::printf("kernel.%s.tileN=%d\n", name, tbn);
  std::printf("kernel.%s.tileK=%d\n", name, tbk);
  std::printf("kernel.%s.warpShape=%dx%d\n", name, wm, wn);
  std::printf("kernel.%s.threadShape=%dx%d\n", name, tm, tn);
  std::printf("kernel.%s.stages=%d\n", name, stages);
  std::printf("kernel.%s.layout=t%ct\n", name, layout_b);
  std::printf("kernel.%s.alignment=%d\n", name, align_b);
  std::printf("kernel.%s.alignmentA=%d\n", name, align_a);
  if (split_k) std::printf("kernel.%s.reductionBatch=%d\n", name, reduction_batch);
}

/// A GEMV instance in the sgemm keys, so that the library reads both alike: B transposed only, 16-byte
/// loads of A and B (alignment 4), no pipeline and no shared memory.
static void print_gemv(const char *name, const char *family, int tile_m, int tile_n, int tile_k, int warps,
                       int threads) {
  std::printf("kernel.%s.family=%s\n", name, family);
  std::printf("kernel.%s.threads=%d\n", name, threads);
  std::printf("kernel.%s.block=%d,1,1\n", name, threads);
  std::printf("kernel.%s.sharedMemBytes=0\n", name);
  std::printf("kernel.%s.grid=ceil(M/%d),ceil(N/%d),1\n", name, tile_m, tile_n);
  std::printf("kernel.%s.tileM=%d\n", name, tile_m);
  std::printf("kernel.%s.tileN=%d\n", name, tile_n);
  std::printf("kernel.%s.tileK=%d\n", name, tile_k);
  std::printf("kernel.%s.warps=%d\n", name, warps);
  std::printf("kernel.%s.stages=1\n", name);
  std::printf("kernel.%s.layout=tnt\n", name);
  std::printf("kernel.%s.alignment=4\n", name);
}

int main() {
  std::printf("kernels=");
  const char *sep = "";
#define CG4J_SGEMM(NAME, ...)    \
  std::printf("%s%s", sep, #NAME); \
  sep = ",";
#define CG4J_SGEMM_SPLITK CG4J_SGEMM
#define CG4J_GEMV CG4J_SGEMM
#define CG4J_TENSOROP_SGEMM CG4J_SGEMM
#define CG4J_TENSOROP_SGEMM_SPLITK CG4J_SGEMM
#define CG4J_WGMMA_SGEMM CG4J_SGEMM
#define CG4J_WGMMA_SGEMM_SPLITK CG4J_SGEMM
#include "instances.def"
#undef CG4J_SGEMM
#undef CG4J_SGEMM_SPLITK
#undef CG4J_GEMV
#undef CG4J_TENSOROP_SGEMM
#undef CG4J_TENSOROP_SGEMM_SPLITK
#undef CG4J_WGMMA_SGEMM
#undef CG4J_WGMMA_SGEMM_SPLITK
  std::printf("%scg4j_epilogue_f32_bias_f32_relu,cg4j_epilogue_f16_bias_f16_relu,cg4j_epilogue_bf16_bias_bf16_relu,"
              "cg4j_gemv_f16_1x4_bias_f16_relu,cg4j_gemv_bf16_1x4_bias_bf16_relu,"
              "cg4j_gemv_f16_8x4_bias_f16_relu,cg4j_gemv_bf16_8x4_bias_bf16_relu\n",
              sep);

#define CG4J_SGEMM(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LAYOUT_B, ALIGN_B, STAGES, PAD_BN, MIN_BLOCKS)       \
  {                                                                                                        \
    using G = cg4j::SimtSgemm<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, ThreadShape<TM, TN>, LAYOUT_B, \
                              ALIGN_B, STAGES, CG4J_OUTPUT_OP_##EPI, PAD_BN>;                                      \
    print_sgemm(#NAME, CG4J_FAMILY_##EPI, false, TBM, TBN, TBK, WM, WN, TM, TN, LAYOUT_B::kLetter, ALIGN_B,      \
                STAGES, G::kThreads, G::kSharedStorageBytes, 0);                                           \
  }
#define CG4J_SGEMM_SPLITK(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LAYOUT_B, ALIGN_B, STAGES, PAD_BN, MIN_BLOCKS, \
                          REDUCTION_BATCH)                                                                      \
  {                                                                                                          \
    using G = cg4j::SimtSgemmSplitK<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, ThreadShape<TM, TN>,       \
                                    LAYOUT_B, ALIGN_B, STAGES, CG4J_OUTPUT_OP_##EPI, PAD_BN,                     \
                                    cg4j::gemm::threadblock::GemmIdentityThreadblockSwizzle, REDUCTION_BATCH>;   \
    print_sgemm(#NAME, CG4J_FAMILY_##EPI, true, TBM, TBN, TBK, WM, WN, TM, TN, LAYOUT_B::kLetter, ALIGN_B,       \
                STAGES, G::kThreads, G::kSharedStorageBytes, REDUCTION_BATCH);                               \
  }
#define CG4J_GEMV(NAME, EPI, ROWS, COLUMNS_PER_WARP, WARPS, WARPS_PER_COLUMN)                                 \
  {                                                                                                          \
    using G = cg4j::gemv::kernel::GemvSimt<ROWS, COLUMNS_PER_WARP, WARPS, WARPS_PER_COLUMN, CG4J_OUTPUT_OP_##EPI>; \
    print_gemv(#NAME, CG4J_GEMV_FAMILY_##EPI, G::kTileM, G::kTileN, G::kTileK, WARPS, G::kThreads);           \
  }
#define CG4J_TENSOROP_GEMM_INFO(NAME, G, EPI, SPLIT, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH)           \
  print_sgemm(#NAME, CG4J_FAMILY_##EPI, SPLIT, TBM, TBN, TBK, WM, WN, 16, 8, LAYOUT_B::kLetter, ALIGN, STAGES,        \
              G::kThreads, G::kSharedStorageBytes, 0,                                                           \
              cg4j::arch::TensorMath::MATH == cg4j::arch::TensorMath::kFastF32 ? "3xtf32" : "tf32", ALIGN);
#define CG4J_TENSOROP_SGEMM(NAME, EPI, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH, GROUP, MIN_BLOCKS)    \
  {                                                                                                          \
    using G = cg4j::TensorOpSgemm<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, LAYOUT_B, ALIGN, ALIGN, STAGES, \
                                  cg4j::arch::TensorMath::MATH, CG4J_OUTPUT_OP_##EPI, GROUP>;                    \
    CG4J_TENSOROP_GEMM_INFO(NAME, G, EPI, false, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH)            \
  }
#define CG4J_TENSOROP_SGEMM_SPLITK(NAME, EPI, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH, GROUP,           \
                                   MIN_BLOCKS)                                                                    \
  {                                                                                                            \
    using G = cg4j::TensorOpSgemmSplitK<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, LAYOUT_B, ALIGN, ALIGN,     \
                                        STAGES, cg4j::arch::TensorMath::MATH, CG4J_OUTPUT_OP_##EPI, GROUP>;        \
    CG4J_TENSOROP_GEMM_INFO(NAME, G, EPI, true, TBM, TBN, TBK, WM, WN, LAYOUT_B, ALIGN, STAGES, MATH)              \
  }
// wgmma instances: one warpgroup per 64 rows, in the sm_90 cubin only (built for sm_90a).
#define CG4J_WGMMA_GEMM_INFO(NAME, G, EPI, SPLIT, TBM, TBN, ALIGN, STAGES, MATH)                                  \
  CG4J_TENSOROP_GEMM_INFO(NAME, G, EPI, SPLIT, TBM, TBN, 32, 64, TBN, ColumnMajor, ALIGN, STAGES, MATH)          \
  std::printf("kernel.%s.mainloop=wgmma\n", #NAME);                                                            \
  std::printf("kernel.%s.images=cg4j_kernels.sm_90.cubin\n", #NAME);
#define CG4J_WGMMA_SGEMM(NAME, EPI, TBM, TBN, ALIGN, STAGES, MATH)                                                 \
  {                                                                                                            \
    using G = cg4j::WgmmaSgemm<GemmShape<TBM, TBN, 32>, ALIGN, ALIGN, STAGES, cg4j::arch::TensorMath::MATH,      \
                               CG4J_OUTPUT_OP_##EPI>;                                                          \
    CG4J_WGMMA_GEMM_INFO(NAME, G, EPI, false, TBM, TBN, ALIGN, STAGES, MATH)                                     \
  }
#define CG4J_WGMMA_SGEMM_SPLITK(NAME, EPI, TBM, TBN, ALIGN, STAGES, MATH)                                          \
  {                                                                                                            \
    using G = cg4j::WgmmaSgemmSplitK<GemmShape<TBM, TBN, 32>, ALIGN, ALIGN, STAGES,                              \
                                     cg4j::arch::TensorMath::MATH, CG4J_OUTPUT_OP_##EPI>;                      \
    CG4J_WGMMA_GEMM_INFO(NAME, G, EPI, true, TBM, TBN, ALIGN, STAGES, MATH)                                      \
  }
#include "instances.def"
#undef CG4J_SGEMM
#undef CG4J_SGEMM_SPLITK
#undef CG4J_GEMV
#undef CG4J_TENSOROP_SGEMM
#undef CG4J_TENSOROP_SGEMM_SPLITK
#undef CG4J_TENSOROP_GEMM_INFO
#undef CG4J_WGMMA_GEMM_INFO
#undef CG4J_WGMMA_SGEMM
#undef CG4J_WGMMA_SGEMM_SPLITK

  const char *epilogues[][2] = {{"cg4j_epilogue_f32_bias_f32_relu", "f32"},
                                 {"cg4j_epilogue_f16_bias_f16_relu", "f16"},
                                 {"cg4j_epilogue_bf16_bias_bf16_relu", "bf16"}};
  for (const auto &epilogue : epilogues) {
    const char *e = epilogue[0];
    std::printf("kernel.%s.family=epilogue_bias_relu\n", e);
    std::printf("kernel.%s.element=%s\n", e, epilogue[1]);
    std::printf("kernel.%s.threads=256\n", e);
    std::printf("kernel.%s.block=8,32,1\n", e);
    std::printf("kernel.%s.sharedMemBytes=0\n", e);
    std::printf("kernel.%s.grid=any (grid-stride); suggested (the seed at M=2048): ceil(M/8),2,1\n", e);
  }
  struct HalfGemv {
    const char *name;
    const char *element;
    int max_batch;
    int unroll;
  };
  const HalfGemv half_gemvs[] = {{"cg4j_gemv_f16_1x4_bias_f16_relu", "f16", 1, 8},
                                 {"cg4j_gemv_bf16_1x4_bias_bf16_relu", "bf16", 1, 8},
                                 {"cg4j_gemv_f16_8x4_bias_f16_relu", "f16", 8, 2},
                                 {"cg4j_gemv_bf16_8x4_bias_bf16_relu", "bf16", 8, 2}};
  for (const HalfGemv &gemv : half_gemvs) {
    using G = cg4j::gemv::kernel::GemvHalfBiasRelu<float, 1, 1>;  // the launch shape is the same for every instance
    const char *g = gemv.name;
    std::printf("kernel.%s.family=half_gemv_bias_relu\n", g);
    std::printf("kernel.%s.element=%s\n", g, gemv.element);
    std::printf("kernel.%s.maxBatch=%d\n", g, gemv.max_batch);
    std::printf("kernel.%s.unroll=%d\n", g, gemv.unroll);
    std::printf("kernel.%s.threads=%d\n", g, G::kThreads);
    std::printf("kernel.%s.block=%d,1,1\n", g, G::kThreads);
    std::printf("kernel.%s.sharedMemBytes=0\n", g);
    std::printf("kernel.%s.grid=ceil(N/%d),1,1\n", g, G::kWarps);
    std::printf("kernel.%s.alignment=%d\n", g, G::kVector);
  }
  return 0;
}
