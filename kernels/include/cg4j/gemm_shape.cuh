// cudagraph4j kernels: shape types (CUTLASS manner).
#pragma once

namespace cg4j {

/// Shape of a GEMM tile in elements: M rows of the output, N columns, K depth.
template <int M_, int N_, int K_>
struct GemmShape {
  static constexpr int kM = M_;
  static constexpr int kN = N_;
  static constexpr int kK = K_;
  static constexpr int kMN = M_ * N_;
};

/// Shape of the tile of outputs that one thread accumulates (kM x kN).
template <int M_, int N_>
struct ThreadShape {
  static constexpr int kM = M_;
  static constexpr int kN = N_;
};


}  // namespace cg4j
