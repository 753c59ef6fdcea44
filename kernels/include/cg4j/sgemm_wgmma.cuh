// cudagraph4j kernels: the Hopper tensor-core sgemm composition (TF32 `wgmma`, sm_90a only).
#pragma once

#include "cg4j.cuh"
#include "entry_points.cuh"
#include "epilogue/threadblock/epilogue_tensor_op.cuh"
#include "gemm/threadblock/mma_multistage_wgmma.cuh"

namespace cg4j {

/// Row-major A (M x K), B stored [N,K], row-major D (M x N), on sm_90a TF32 tensor cores through
/// wgmma with the given arch::TensorMath (gemm/threadblock/mma_multistage_wgmma.cuh). AlignmentA/B:
/// floats per copy (4 needs 16-byte aligned operands and leading dimensions that are multiples of 4).
template <typename ThreadblockShape, int AlignmentA, int AlignmentB, int Stages, arch::TensorMath Math,
          typename OutputOp, typename Swizzle = gemm::threadblock::GemmGroupedThreadblockSwizzle<8>,
          typename Mma = gemm::threadblock::MmaMultistageWgmma<ThreadblockShape, AlignmentA, AlignmentB, Stages, Math>>
using WgmmaSgemm = gemm::kernel::Gemm<Mma, epilogue::threadblock::EpilogueTensorOp<Mma, OutputOp>, Swizzle>;

/// The same with the K loop split over gridDim.z (gemm/kernel/gemm_split_k.cuh).
template <typename ThreadblockShape, int AlignmentA, int AlignmentB, int Stages, arch::TensorMath Math,
          typename OutputOp, typename Swizzle = gemm::threadblock::GemmIdentityThreadblockSwizzle,
          typename Mma = gemm::threadblock::MmaMultistageWgmma<ThreadblockShape, AlignmentA, AlignmentB, Stages, Math>>
using WgmmaSgemmSplitK =
    gemm::kernel::GemmSplitK<Mma, epilogue::threadblock::EpilogueTensorOp<Mma, OutputOp>,
                             epilogue::threadblock::EpilogueTensorOp<Mma, epilogue::thread::Identity>, Swizzle>;

}  // namespace cg4j
