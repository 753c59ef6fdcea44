// cudagraph4j kernels: the SIMT sgemm composition used by every shipped instance.
#pragma once

#include "cg4j.cuh"
#include "entry_points.cuh"
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
