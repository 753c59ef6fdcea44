// cudagraph4j kernels: a GEMV-like kernel for few rows, D = op(A B^T) with B stored [N, K] (as a
// Linear layer stores its weight). Measured against the split-K tiles in kernels/PERFORMANCE.md.
#pragma once

#include "../../arch/grid_dependency.cuh"

namespace cg4j {
namespace gemv {
namespace kernel {

/// Each warp owns `ColumnsPerWarp` output columns and `Rows` rows; its lanes split K in float4
/// steps, so W is read once per row block, 16 bytes a lane, coalesced. Every lane keeps Rows x
/// ColumnsPerWarp partial sums, and a fixed xor butterfly of shuffles adds them: the same order on
/// every run, and the same value in every lane, so the result is deterministic. Lane r then writes
/// row r through `OutputOp`. No shared memory and no reduction across blocks: a layer is one wave
/// of small blocks. Needs K, lda and ldb multiples of 4 and A and B 16-byte aligned (float4 loads);
/// the caller checks.
///
/// Grid: ceil(M / Rows) x ceil(N / (Warps * ColumnsPerWarp)); block: Warps * 32 threads.
template <int Rows, int ColumnsPerWarp, int Warps, typename OutputOp>
struct GemvSimt {
  static_assert(Rows >= 1 && Rows <= 32, "lane r writes row r");
  static constexpr int kThreads = Warps * 32;
  static constexpr int kTileM = Rows;
  static constexpr int kTileN = Warps * ColumnsPerWarp;
  /// K consumed by one step of a warp: 32 lanes of one float4.
  static constexpr int kTileK = 128;
  /// k-steps whose loads a lane has in flight at once.
  static constexpr int kUnroll = 4;
  /// Weights up to this size are prefetched whole, larger ones only their first kUnroll k-steps: a
  /// third of an H100's or H200's L2, so that the lines a kernel asks for are still there when it reads them.
  static constexpr long long kPrefetchAllBytes = 16ll << 20;

  __device__ __forceinline__ static void run(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                                             typename OutputOp::Params const &output_params, const float *C, int ldc,
                                             float *D, int ldd) {
    const int lane = threadIdx.x & 31;
    const int n0 = (blockIdx.y * Warps + (threadIdx.x >> 5)) * ColumnsPerWarp;
    const int m0 = blockIdx.x * Rows;
    const int rows = min(Rows, M - m0);
    if (n0 < N) prefetch_weights(N, K, B, ldb, n0, lane);
    // A is the previous kernel's output: wait for it (PDL), then let the next kernel launch; its
    // own wait holds it until this grid has finished and its writes are visible.
    arch::wait_for_prerequisite_grids();
    arch::allow_dependent_launch();
    if (n0 >= N) return;

    float acc[Rows][ColumnsPerWarp];
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int c = 0; c < ColumnsPerWarp; ++c) acc[r][c] = 0.0f;

    // Four k-steps in flight: their loads are issued before the first is used (K = 512 is four
    // steps a lane, so a whole layer's loads go out at once). sm_90: 60 and 78 registers, no spills.
#pragma unroll kUnroll
    for (int k = lane * 4; k < K; k += kTileK) {
      float4 b[ColumnsPerWarp];
#pragma unroll
      for (int c = 0; c < ColumnsPerWarp; ++c)
        b[c] = n0 + c < N ? *reinterpret_cast<const float4 *>(B + (long long)(n0 + c) * ldb + k)
                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int r = 0; r < Rows; ++r) {
        if (r < rows) {
          const float4 a = *reinterpret_cast<const float4 *>(A + (long long)(m0 + r) * lda + k);
#pragma unroll
          for (int c = 0; c < ColumnsPerWarp; ++c) {
            acc[r][c] = fmaf(a.x, b[c].x, acc[r][c]);
            acc[r][c] = fmaf(a.y, b[c].y, acc[r][c]);
            acc[r][c] = fmaf(a.z, b[c].z, acc[r][c]);
            acc[r][c] = fmaf(a.w, b[c].w, acc[r][c]);
          }
        }
      }
    }

    float out[ColumnsPerWarp];
#pragma unroll
    for (int c = 0; c < ColumnsPerWarp; ++c) out[c] = 0.0f;
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      if (r < rows) {
#pragma unroll
        for (int c = 0; c < ColumnsPerWarp; ++c) {
          float v = acc[r][c];
#pragma unroll
          for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
          if (lane == r) out[c] = v;
        }
      }
    }

    if (lane < rows) {
      const OutputOp op(output_params);
      const long long row = m0 + lane;
#pragma unroll
      for (int c = 0; c < ColumnsPerWarp; ++c) {
        const int col = n0 + c;
        if (col < N) {
          D[row * ldd + col] = op.is_source_needed() ? op(out[c], C[row * ldc + col], col) : op(out[c], col);
        }
      }
    }
  }

  /// Asks L2 for this warp's columns of B, one 128-byte line a lane at a time, before the wait for
  /// the previous kernel (PDL): a layer's weights are read from DRAM while that kernel finishes
  /// instead of after it. Only a hint: L2 is where every multiprocessor's stores land, so a line
  /// that kernel writes later is still read as written.
  __device__ __forceinline__ static void prefetch_weights(int N, int K, const float *B, int ldb, int n0, int lane) {
    constexpr int kFloatsPerLine = 32;
    const bool all = (long long)N * K * sizeof(float) <= kPrefetchAllBytes;
    const int k_span = all ? K : min(K, kUnroll * kTileK);
    for (int c = 0; c < ColumnsPerWarp && n0 + c < N; ++c) {
      const float *column = B + (long long)(n0 + c) * ldb;
      for (int k = lane * kFloatsPerLine; k < k_span; k += 32 * kFloatsPerLine) arch::prefetch_l2(column + k);
    }
  }
};

}  // namespace kernel
}  // namespace gemv
}  // namespace cg4j
