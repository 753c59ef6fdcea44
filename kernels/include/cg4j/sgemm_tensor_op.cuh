// cudagraph4j kernels: the tensor-core sgemm compositions (TF32 mma.sync, sm_80 and newer).
#pragma once

#include "cg4j.cuh"
#include "entry_points.cuh"
#include "epilogue/threadblock/epilogue_tensor_op.cuh"
#include "gemm/threadblock/mma_multistage_tensor_op.cuh"

namespace cg4j {

/// The tensor-core mainloop both compositions share (gemm/threadblock/mma_multistage_tensor_op.cuh).
template <typename ThreadblockShape, typename WarpShape, typename LayoutB, int AlignmentA, int AlignmentB, int Stages,
          arch::TensorMath Math, int GroupSteps>
using TensorOpMma = gemm::threadblock::MmaMultistageTensorOp<ThreadblockShape, WarpShape, LayoutB, AlignmentA,
                                                             AlignmentB, Stages, Math, GroupSteps>;

/// Row-major A (M x K), B per LayoutB (K x N), row-major D (M x N), on TF32 tensor cores with the
/// given arch::TensorMath. AlignmentA/B: floats per copy (4 needs 16-byte aligned operands and
/// leading dimensions that are multiples of 4). GroupSteps: see MmaMultistageTensorOp.
template <typename ThreadblockShape, typename WarpShape, typename LayoutB, int AlignmentA, int AlignmentB, int Stages,
          arch::TensorMath Math, typename OutputOp, int GroupSteps = 1,
          typename Swizzle = gemm::threadblock::GemmGroupedThreadblockSwizzle<8>,
          typename Mma = TensorOpMma<ThreadblockShape, WarpShape, LayoutB, AlignmentA, AlignmentB, Stages, Math,
                                     GroupSteps>>
using TensorOpSgemm = gemm::kernel::Gemm<Mma, epilogue::threadblock::EpilogueTensorOp<Mma, OutputOp>, Swizzle>;

/// The same with the K loop split over gridDim.z (gemm/kernel/gemm_split_k.cuh).
template <typename ThreadblockShape, typename WarpShape, typename LayoutB, int AlignmentA, int AlignmentB, int Stages,
          arch::TensorMath Math, typename OutputOp, int GroupSteps = 1,
          typename Swizzle = gemm::threadblock::GemmIdentityThreadblockSwizzle,
          typename Mma = TensorOpMma<ThreadblockShape, WarpShape, LayoutB, AlignmentA, AlignmentB, Stages, Math,
                                     GroupSteps>>
using TensorOpSgemmSplitK =
    gemm::kernel::GemmSplitK<Mma, epilogue::threadblock::EpilogueTensorOp<Mma, OutputOp>,
                             epilogue::threadblock::EpilogueTensorOp<Mma, epilogue::thread::Identity>, Swizzle>;

}  // namespace cg4j
