// cudagraph4j kernels: a GEMM kernel = Mma (mainloop) + Epilogue + ThreadblockSwizzle.
#pragma once

#include "../../arch/grid_dependency.cuh"
#include "../../gemm_shape.cuh"

namespace cg4j {
namespace gemm {
namespace kernel {

template <typename Mma_, typename Epilogue_, typename ThreadblockSwizzle_>
struct Gemm {
  using Mma = Mma_;
  using Epilogue = Epilogue_;
  using OutputOp = typename Epilogue::OutputOp;
  using ThreadblockSwizzle = ThreadblockSwizzle_;
  using Shape = typename Mma::Shape;
  static constexpr int kThreads = Mma::kThreads;

  /// The mainloop's pipeline stages and the epilogue's staging tile never live at once.
  union SharedStorage {
    typename Mma::SharedStorage main_loop;
    typename Epilogue::SharedStorage epilogue;
  };
  static constexpr int kSharedStorageBytes = sizeof(SharedStorage);

  /// D = op(A * B [, C]); launch with grid (ceil(M/kM), ceil(N/kN)), kThreads threads and
  /// kSharedStorageBytes of dynamic shared memory.
  __device__ __forceinline__ static void run(int M, int N, int K, const float *A, int lda, const float *B,
                                             int ldb, typename OutputOp::Params const &params, float *D,
                                             int ldd, const float *C, int ldc) {
    extern __shared__ __align__(16) unsigned char cg4j_smem[];
    SharedStorage &shared_storage = *reinterpret_cast<SharedStorage *>(cg4j_smem);

    if (blockIdx.z != 0) return;
    int tile_m, tile_n;
    ThreadblockSwizzle::get_tile_offset(tile_m, tile_n);
    const int m0 = tile_m * Shape::kM;
    const int n0 = tile_n * Shape::kN;
    if (m0 >= M || n0 >= N) return;

    typename Mma::FragmentC accum;
    accum.clear();

    // Launched with programmatic dependent launch, the previous kernel may still be running.
    arch::wait_for_prerequisite_grids();

    // Main loop
    Mma mma;
    mma(M, N, K, A, lda, B, ldb, m0, n0, accum, shared_storage.main_loop);

    // Epilogue
    OutputOp output_op(params);
    Epilogue epilogue;
    epilogue(output_op, M, N, D, ldd, C, ldc, m0, n0, accum, shared_storage.epilogue);
    arch::allow_dependent_launch();
  }
};

}  // namespace kernel
}  // namespace gemm
}  // namespace cg4j
