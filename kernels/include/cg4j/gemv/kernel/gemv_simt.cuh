// cudagraph4j kernels: a GEMV-like kernel for few rows, D = op(A B^T) with B stored [N, K] (as a
// Linear layer stores its weight). Measured against the split-K tiles in kernels/PERFORMANCE.md.
#pragma once

#include "../../arch/grid_dependency.cuh"

namespace cg4j {
namespace gemv {
namespace kernel {

/// Each group of `WarpsPerColumn` warps owns `ColumnsPerWarp` output columns and `Rows` rows; its
/// lanes split K in float4 steps (warp w of a group takes steps w, w + WarpsPerColumn, ...), so W is
/// read once per row block, 16 bytes a lane, coalesced. Every lane keeps Rows x ColumnsPerWarp
/// partial sums, and a fixed xor butterfly of shuffles adds them: the same order on every run, and
/// the same value in every lane. With several warps per column, each warp's sums meet in shared
/// memory and the group's first warp adds them in warp order, so the result is deterministic too.
/// Lane r then writes row r through `OutputOp`. No reduction across blocks: a layer is one wave of
/// small blocks. Needs K, lda and ldb multiples of 4 and A and B 16-byte aligned (float4 loads);
/// the caller checks.
///
/// More warps per column put more of a column's loads in flight at once: where a layer is bound by
/// memory latency rather than bandwidth (batch 1 to 8 at width 512 and 1024 on an H200), a column
/// shared by four warps runs the 16-layer MLP in 0.6-0.75x the time of one warp per column
/// (kernels/PERFORMANCE.md, "Warps sharing a column").
///
/// Grid: ceil(M / Rows) x ceil(N / kTileN); block: Warps * 32 threads.
template <int Rows, int ColumnsPerWarp, int Warps, int WarpsPerColumn, typename OutputOp>
struct GemvSimt {
  static_assert(Rows >= 1 && Rows <= 32, "lane r writes row r");
  static_assert(WarpsPerColumn >= 1 && Warps % WarpsPerColumn == 0, "warps come in whole column groups");
  static constexpr int kThreads = Warps * 32;
  static constexpr int kTileM = Rows;
  static constexpr int kTileN = Warps / WarpsPerColumn * ColumnsPerWarp;
  /// K consumed by one step of a warp: 32 lanes of one float4.
  static constexpr int kTileK = 128;
  /// k-steps whose loads a lane has in flight at once: a group keeps eight steps of its column in
  /// flight (with four, 8 of 9 MLP shapes of batch 1 to 32 ran 1-11% slower on the H200, same bits),
  /// and no more, which keeps a 16-warp block's registers low enough for two blocks a multiprocessor.
  static constexpr int kUnroll = WarpsPerColumn >= 8 ? 1 : 8 / WarpsPerColumn;
  /// Weights up to this size are prefetched whole, larger ones only the eight k-steps in flight: a
  /// third of an H100's or H200's L2, so that the lines a kernel asks for are still there when it reads them.
  static constexpr long long kPrefetchAllBytes = 16ll << 20;

  __device__ __forceinline__ static void run(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                                             typename OutputOp::Params const &output_params, const float *C, int ldc,
                                             float *D, int ldd) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int slice = warp % WarpsPerColumn;  // which of its group's k-steps this warp takes
    const int n0 = (blockIdx.y * (Warps / WarpsPerColumn) + warp / WarpsPerColumn) * ColumnsPerWarp;
    const int m0 = blockIdx.x * Rows;
    const int rows = min(Rows, M - m0);
    if (n0 < N) prefetch_weights(N, K, B, ldb, n0, slice, lane);
    // A is the previous kernel's output: wait for it (PDL), then let the next kernel launch; its
    // own wait holds it until this grid has finished and its writes are visible.
    arch::wait_for_prerequisite_grids();
    arch::allow_dependent_launch();
    // Warps that share a column meet at a barrier below, which every warp of the block must reach.
    const bool has_columns = n0 < N;
    if (WarpsPerColumn == 1 && !has_columns) return;

    float acc[Rows][ColumnsPerWarp];
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int c = 0; c < ColumnsPerWarp; ++c) acc[r][c] = 0.0f;

    // kUnroll k-steps in flight: their loads are issued before the first is used.
    const int k_end = has_columns ? K : 0;
#pragma unroll kUnroll
    for (int k = (slice * 32 + lane) * 4; k < k_end; k += kTileK * WarpsPerColumn) {
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
    if (WarpsPerColumn > 1 && !(add_group_sums(out, warp, slice, lane, rows) && has_columns)) return;

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

  /// The group's first warp adds every warp's sums in warp order (into out, lane r for row r) and
  /// returns true; the others return false. Every warp of the block calls it (a barrier).
  __device__ __forceinline__ static bool add_group_sums(float (&out)[ColumnsPerWarp], int warp, int slice, int lane,
                                                        int rows) {
    __shared__ float sums[Warps][Rows][ColumnsPerWarp];
    if (lane < rows) {
#pragma unroll
      for (int c = 0; c < ColumnsPerWarp; ++c) sums[warp][lane][c] = out[c];
    }
    __syncthreads();
    if (slice != 0) return false;
    if (lane < rows) {
#pragma unroll
      for (int c = 0; c < ColumnsPerWarp; ++c) {
        float v = sums[warp][lane][c];
#pragma unroll
        for (int s = 1; s < WarpsPerColumn; ++s) v += sums[warp + s][lane][c];
        out[c] = v;
      }
    }
    return true;
  }

  /// Asks L2 for this warp's share of its columns of B, one 128-byte line a lane at a time, before
  /// the wait for the previous kernel (PDL): a layer's weights are read from DRAM while that kernel
  /// finishes instead of after it. Only a hint: L2 is where every multiprocessor's stores land, so a
  /// line that kernel writes later is still read as written.
  __device__ __forceinline__ static void prefetch_weights(int N, int K, const float *B, int ldb, int n0, int slice,
                                                          int lane) {
    constexpr int kFloatsPerLine = 32;
    const bool all = (long long)N * K * sizeof(float) <= kPrefetchAllBytes;
    const int k_span = all ? K : min(K, kUnroll * kTileK * WarpsPerColumn);
    for (int c = 0; c < ColumnsPerWarp && n0 + c < N; ++c) {
      const float *column = B + (long long)(n0 + c) * ldb;
      for (int k = (slice * 32 + lane) * kFloatsPerLine; k < k_span; k += WarpsPerColumn * 32 * kFloatsPerLine)
        arch::prefetch_l2(column + k);
    }
  }
};

}  // namespace kernel
}  // namespace gemv
}  // namespace cg4j
