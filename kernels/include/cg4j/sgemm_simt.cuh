// cudagraph4j kernels: the SIMT sgemm composition used by every shipped instance.
#pragma once

#include "cg4j.cuh"
#include "gemv/kernel/gemv_simt.cuh"

namespace cg4j {

/// Row-major A (M x K), B per LayoutB (K x N), row-major D (M x N). HeldCopiesB: 'n' align4 B only,
/// copies its register-staged loader holds at once (1: the fewest registers).
template <typename ThreadblockShape, typename WarpShape, typename ThreadShape_, typename LayoutB, int AlignmentB,
          int Stages, typename OutputOp, int PaddingBn = 4, int CopySteps = 1,
          typename Swizzle = gemm::threadblock::GemmGroupedThreadblockSwizzle<8>, int HeldCopiesB = 1>
using SimtSgemm = gemm::kernel::Gemm<
    gemm::threadblock::MmaMultistageSimt<ThreadblockShape, WarpShape, ThreadShape_, LayoutB, AlignmentB, Stages,
                                         PaddingBn, CopySteps, HeldCopiesB>,
    epilogue::threadblock::EpilogueSimt<
        gemm::threadblock::MmaMultistageSimt<ThreadblockShape, WarpShape, ThreadShape_, LayoutB, AlignmentB,
                                             Stages, PaddingBn, CopySteps, HeldCopiesB>,
        OutputOp>,
    Swizzle>;

/// The same composition with the K loop split over gridDim.z (gemm/kernel/gemm_split_k.cuh).
template <typename ThreadblockShape, typename WarpShape, typename ThreadShape_, typename LayoutB, int AlignmentB,
          int Stages, typename OutputOp, int PaddingBn = 4,
          typename Swizzle = gemm::threadblock::GemmIdentityThreadblockSwizzle, int ReductionBatch = 0>
using SimtSgemmSplitK = gemm::kernel::GemmSplitK<
    gemm::threadblock::MmaMultistageSimt<ThreadblockShape, WarpShape, ThreadShape_, LayoutB, AlignmentB, Stages,
                                         PaddingBn>,
    epilogue::threadblock::EpilogueSimt<
        gemm::threadblock::MmaMultistageSimt<ThreadblockShape, WarpShape, ThreadShape_, LayoutB, AlignmentB,
                                             Stages, PaddingBn>,
        OutputOp>,
    epilogue::threadblock::EpilogueSimt<
        gemm::threadblock::MmaMultistageSimt<ThreadblockShape, WarpShape, ThreadShape_, LayoutB, AlignmentB,
                                             Stages, PaddingBn>,
        epilogue::thread::Identity>,
    Swizzle, ReductionBatch>;

}  // namespace cg4j

// extern "C" entry points with the uniform parameter lists of kernels/README.md.
#define CG4J_SGEMM_LINCOMB_ENTRY(NAME, GEMM, MIN_BLOCKS)                                                   \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, \
           float *C, int ldc) {                                                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {alpha, beta}, C, ldc, C, ldc);                                     \
  }

#define CG4J_SGEMM_BIAS_RELU_ENTRY(NAME, GEMM, MIN_BLOCKS)                                                 \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, const float *A, int lda, const float *B, int ldb, const float *bias,       \
           float *D, int ldd) {                                                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {bias}, D, ldd, nullptr, 0);                                        \
  }

// Split-K entries: the family's parameters plus the workspace (slices * M * N floats) and one int
// ticket per output tile, both zero before the first launch; gridDim.z is the number of slices.
#define CG4J_SGEMM_LINCOMB_SPLITK_ENTRY(NAME, GEMM, MIN_BLOCKS)                                            \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, \
           float *C, int ldc, float *workspace, int *tickets) {                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {alpha, beta}, C, ldc, C, ldc, workspace, tickets);                 \
  }

#define CG4J_SGEMM_BIAS_RELU_SPLITK_ENTRY(NAME, GEMM, MIN_BLOCKS)                                          \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, const float *A, int lda, const float *B, int ldb, const float *bias,       \
           float *D, int ldd, float *workspace, int *tickets) {                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {bias}, D, ldd, nullptr, 0, workspace, tickets);                    \
  }

// GEMV entries: the non-split families' parameters (kernels/README.md).
#define CG4J_GEMV_LINCOMB_ENTRY(NAME, GEMV)                                                                \
  extern "C" __global__ void __launch_bounds__(GEMV::kThreads)                                             \
      NAME(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, \
           float *C, int ldc) {                                                                            \
    GEMV::run(M, N, K, A, lda, B, ldb, {alpha, beta}, C, ldc, C, ldc);                                     \
  }
#define CG4J_GEMV_BIAS_RELU_ENTRY(NAME, GEMV)                                                              \
  extern "C" __global__ void __launch_bounds__(GEMV::kThreads)                                             \
      NAME(int M, int N, int K, const float *A, int lda, const float *B, int ldb, const float *bias,       \
           float *D, int ldd) {                                                                            \
    GEMV::run(M, N, K, A, lda, B, ldb, {bias}, nullptr, 0, D, ldd);                                        \
  }
