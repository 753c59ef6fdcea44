// cudagraph4j kernels: a standalone epilogue, Y = op(X), elementwise over an M x N row-major
// matrix. The unfused Linear's second graph node (the seed's "cublasLt epilogue"). X and Y hold
// float, __half or __nv_bfloat16 (Element); op computes in float, and a half result is rounded to
// nearest even once, on the store.
//
// A block of (bx, by) threads covers a tile of bx rows x by columns: blockIdx.x picks the rows
// (grid-stride by gridDim.x * bx), blockIdx.y the columns (grid-stride by gridDim.y * by). Inside
// the block the flattened thread index is laid out column-fastest, so consecutive lanes touch
// consecutive columns of one row (coalesced for row-major data) whatever the block shape. Any grid
// and block is correct. The seed's <<<{256,2},{8,32}>>> at M = 2048, N = 640: each block owns 8
// rows, each warp one row, each thread one row and every 64th column (10 columns). Each element is
// read and written by the same thread, so Y may alias X (in place).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../arch/grid_dependency.cuh"

namespace cg4j {
namespace epilogue {
namespace kernel {

/// Widening to and rounding from float, for the element types an epilogue reads and writes.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename Element>
__device__ __forceinline__ Element from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename OutputOp_, typename Element = float, int Unroll = 4>
struct ElementwiseEpilogue {
  using OutputOp = OutputOp_;
  static constexpr int kUnroll = Unroll;  ///< loads in flight per thread before the stores

  __device__ __forceinline__ static void run(int M, int N, const Element *X, int ldx,
                                             typename OutputOp::Params const &params, Element *Y, int ldy) {
    // Extra z blocks/threads would apply op twice to an in-place buffer.
    if (blockIdx.z != 0 || threadIdx.z != 0) return;
    // Launched with programmatic dependent launch, the kernel that writes X may still be running.
    arch::wait_for_prerequisite_grids();
    OutputOp op(params);
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    const int local_row = t / blockDim.y;
    const int local_col = t % blockDim.y;
    const long long row_stride = (long long)gridDim.x * blockDim.x;
    const long long col_stride = (long long)gridDim.y * blockDim.y;
    const long long col_start = (long long)blockIdx.y * blockDim.y + local_col;
    for (long long m = (long long)blockIdx.x * blockDim.x + local_row; m < M; m += row_stride) {
      const Element *x_row = X + m * ldx;
      Element *y_row = Y + m * ldy;
      for (long long n0 = col_start; n0 < N; n0 += kUnroll * col_stride) {
        float v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const long long n = n0 + u * col_stride;
          if (n < N) v[u] = to_float(x_row[n]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const long long n = n0 + u * col_stride;
          if (n < N) y_row[n] = from_float<Element>(op(v[u], (int)n));
        }
      }
    }
    arch::allow_dependent_launch();
  }
};

}  // namespace kernel
}  // namespace epilogue
}  // namespace cg4j
