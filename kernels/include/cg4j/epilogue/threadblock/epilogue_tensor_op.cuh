// cudagraph4j kernels: threadblock-scoped epilogue for the tensor-core mainloop.
//
// Each lane holds its warp's m16n8 tiles in the mma.sync D layout: two adjacent columns of rows g and
// g + 8. It applies the output functor and stores them straight to global memory, predicated on the M
// and N edges: the 4 lanes of one row group write 8 adjacent floats, a whole 32-byte sector, so
// staging through shared memory would buy little. No shared memory.
#pragma once

namespace cg4j {
namespace epilogue {
namespace threadblock {

template <typename Mma_, typename OutputOp_>
class EpilogueTensorOp {
 public:
  using Mma = Mma_;
  using OutputOp = OutputOp_;
  struct SharedStorage {};

  /// Writes D(m, n) = op(accum(m, n)[, C(m, n)]) for the threadblock tile at (m0, n0).
  /// `C` is read only when op.is_source_needed(); C and D may be the same matrix.
  __device__ __forceinline__ void operator()(OutputOp const &op, int M, int N, float *D, int ldd,
                                             const float *C, int ldc, int m0, int n0,
                                             typename Mma::FragmentC const &accum, SharedStorage &) const {
    const bool source_needed = op.is_source_needed();
#pragma unroll
    for (int i = 0; i < Mma::kMmaM; ++i) {
#pragma unroll
      for (int j = 0; j < Mma::kMmaN; ++j) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int m = m0 + Mma::thread_row(i, r);
          const int n = n0 + Mma::thread_col(j, r);
          if (m < M && n < N) {
            const float acc = accum.v[i][j][r];
            D[(long long)m * ldd + n] = source_needed ? op(acc, C[(long long)m * ldc + n], n) : op(acc, n);
          }
        }
      }
    }
  }
};

}  // namespace threadblock
}  // namespace epilogue
}  // namespace cg4j
