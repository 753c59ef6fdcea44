// cudagraph4j kernels: threadblock-scoped epilogue for the SIMT mainloop.
//
// The accumulators are scattered over lanes in 4x4 sub-tiles, so storing them straight to global
// memory would give 16-byte pieces per row. Instead the tile goes out in ThreadShape::kM passes:
// in pass `tm` every thread writes accumulator row `tm` (kN floats as float4) into a shared
// staging tile of kRows x kN (kRows = Shape::kM / ThreadShape::kM), then all threads read the
// staging tile back row-contiguously, apply the output functor and store coalesced, predicated on
// the M and N edges. The staging tile lives in the same shared memory as the mainloop's stages
// (see kernel::Gemm's SharedStorage union).
#pragma once

#include "../../gemm_shape.cuh"

namespace cg4j {
namespace epilogue {
namespace threadblock {

template <typename Mma_, typename OutputOp_>
class EpilogueSimt {
 public:
  using Mma = Mma_;
  using OutputOp = OutputOp_;
  using Shape = typename Mma::Shape;
  using ThreadShape = typename Mma::ThreadShape;
  static constexpr int kThreads = Mma::kThreads;
  static constexpr int kRows = Shape::kM / ThreadShape::kM;  ///< staging rows per pass
  static constexpr int kLd = Shape::kN;                       ///< staging row stride (floats)
  static constexpr int kElementsPerThread = kRows * Shape::kN / kThreads;
  static_assert((kRows * Shape::kN) % kThreads == 0, "staging tile must split evenly");

  struct SharedStorage {
    float tile[kRows * kLd];
  };

  /// Writes D(m, n) = op(accum(m, n)[, C(m, n)]) for the threadblock tile at (m0, n0).
  /// `C` is read only when op.is_source_needed(); C and D may be the same matrix.
  __device__ __forceinline__ void operator()(OutputOp const &op, int M, int N, float *D, int ldd,
                                             const float *C, int ldc, int m0, int n0,
                                             typename Mma::FragmentC const &accum,
                                             SharedStorage &smem) const {
    int warp_m, warp_n, lane_m, lane_n;
    Mma::thread_coords(warp_m, warp_n, lane_m, lane_n);
    const bool source_needed = op.is_source_needed();
    // Staging row written by this thread; the same for every pass.
    const int stage_row = warp_m * Mma::kLanesM + lane_m;

    // Fully unrolled: accum must be indexed with constants to stay in registers.
#pragma unroll
    for (int tm = 0; tm < ThreadShape::kM; ++tm) {
      // Write accumulator row tm.
#pragma unroll
      for (int j = 0; j < ThreadShape::kN / 4; ++j) {
        const int col = Mma::thread_col(warp_n, lane_n, j * 4);
        float4 v;
        v.x = accum.v[tm][j * 4 + 0];
        v.y = accum.v[tm][j * 4 + 1];
        v.z = accum.v[tm][j * 4 + 2];
        v.w = accum.v[tm][j * 4 + 3];
        *reinterpret_cast<float4 *>(&smem.tile[stage_row * kLd + col]) = v;
      }
      __syncthreads();

      // Read back row-contiguously and store.
#pragma unroll
      for (int e = 0; e < kElementsPerThread; ++e) {
        const int idx = threadIdx.x + e * kThreads;
        const int srow = idx / Shape::kN;
        const int col = idx % Shape::kN;
        // Staging row srow holds tile row thread_row(srow / kLanesM, srow % kLanesM, tm).
        const int row = Mma::thread_row(srow / Mma::kLanesM, srow % Mma::kLanesM, tm);
        const int m = m0 + row;
        const int n = n0 + col;
        if (m < M && n < N) {
          const float acc = smem.tile[srow * kLd + col];
          float out;
          if (source_needed) {
            out = op(acc, C[(long long)m * ldc + n], n);
          } else {
            out = op(acc, n);
          }
          D[(long long)m * ldd + n] = out;
        }
      }
      __syncthreads();
    }
  }
};

}  // namespace threadblock
}  // namespace epilogue
}  // namespace cg4j
