// cudagraph4j kernels: a GEMM kernel whose K loop is split over gridDim.z slices, for skinny
// problems (small M) where one block per output tile leaves most of the GPU idle and each block
// waits on a long chain of dependent k-tile loads.
//
// Slice z multiplies the k-tiles [z * P, (z + 1) * P) (P = ceil(k_tiles / slices)) and stores its
// partial tile, unscaled, in workspace[z][M][N]. The last slice of a tile to finish (an atomic
// ticket per tile) adds the partials in slice order 0, 1, …, applies the output functor once (bias
// and ReLU, or alpha and beta with C) and writes D. The sum's order never depends on which block
// finishes last, so the result is bit-identical from run to run; no float atomics are involved.
// The last block also resets its ticket to zero, so the kernel can be replayed (in a graph, say)
// with no memset between launches. With one slice it is the plain kernel: no workspace, no ticket.
//
// Programmatic dependent launch: before waiting on the previous kernel, each block asks L2 for the
// first k-tiles of its B (the weights, which no kernel writes); it allows the next kernel to launch
// once its own output is written. Launched without PDL, both are no-ops.
//
// Workspace: slices * M * N floats and one int ticket per output tile, all zero before the first
// launch. One launch at a time may use a workspace: two launches on one workspace that overlap
// on the device would mix their partials.
#pragma once

#include "../../arch/grid_dependency.cuh"
#include "../../gemm_shape.cuh"

namespace cg4j {
namespace epilogue {
namespace thread {

/// The accumulator as it is: what one slice stores.
class Identity {
 public:
  struct Params {};
  __device__ __forceinline__ explicit Identity(Params const &) {}
  __device__ __forceinline__ bool is_source_needed() const { return false; }
  __device__ __forceinline__ float operator()(float accum, float, int) const { return accum; }
  __device__ __forceinline__ float operator()(float accum, int) const { return accum; }
};

}  // namespace thread
}  // namespace epilogue

namespace gemm {
namespace kernel {

/// ReductionBatch: 0 sums each element's partials one dependent load at a time (the shipped
/// kernels); B > 0 gives each thread its elements at once and loads B slices of all of them before
/// adding, so the reduction waits on L2 about slices / B times instead of elements x slices times
/// (a tuning variant the harness measures; kernels/PERFORMANCE.md). Both add in slice order.
template <typename Mma_, typename Epilogue_, typename PartialEpilogue_, typename ThreadblockSwizzle_,
          int ReductionBatch = 0>
struct GemmSplitK {
  using Mma = Mma_;
  using Epilogue = Epilogue_;                // writes D = op(accumulator) when there is one slice
  using PartialEpilogue = PartialEpilogue_;  // writes a slice's partial tile to the workspace
  using OutputOp = typename Epilogue::OutputOp;
  using ThreadblockSwizzle = ThreadblockSwizzle_;
  using Shape = typename Mma::Shape;
  using LayoutB = typename Mma::LayoutB;
  static constexpr int kThreads = Mma::kThreads;

  union SharedStorage {
    typename Mma::SharedStorage main_loop;
    typename Epilogue::SharedStorage epilogue;
    typename PartialEpilogue::SharedStorage partial;
  };
  static constexpr int kSharedStorageBytes = sizeof(SharedStorage);

  /// Launch with grid (ceil(M/kM), ceil(N/kN), slices), kThreads threads and kSharedStorageBytes
  /// of dynamic shared memory; slices <= ceil(K / kK).
  __device__ __forceinline__ static void run(int M, int N, int K, const float *A, int lda, const float *B,
                                             int ldb, typename OutputOp::Params const &params, float *D,
                                             int ldd, const float *C, int ldc, float *workspace,
                                             int *tickets) {
    extern __shared__ __align__(16) unsigned char cg4j_smem[];
    SharedStorage &shared_storage = *reinterpret_cast<SharedStorage *>(cg4j_smem);
    __shared__ bool last_slice;

    int tile_m, tile_n;
    ThreadblockSwizzle::get_tile_offset(tile_m, tile_n);
    const int m0 = tile_m * Shape::kM;
    const int n0 = tile_n * Shape::kN;
    if (m0 >= M || n0 >= N) return;

    const int slices = gridDim.z;
    const int slice = blockIdx.z;
    const int k_tiles = (K + Shape::kK - 1) / Shape::kK;
    const int tiles_per_slice = (k_tiles + slices - 1) / slices;
    const int k_begin = min(slice * tiles_per_slice * Shape::kK, K);
    const int k_size = min(tiles_per_slice * Shape::kK, K - k_begin);
    const float *a = A + k_begin;
    const float *b = B + (LayoutB::kLetter == 't' ? (long long)k_begin * ldb : (long long)k_begin);

    prefetch_weights(N, k_size, b, ldb, n0);
    arch::wait_for_prerequisite_grids();

    typename Mma::FragmentC accum;
    accum.clear();

    // Main loop
    Mma mma;
    mma(M, N, k_size, a, lda, b, ldb, m0, n0, accum, shared_storage.main_loop);

    // Epilogue
    if (slices == 1) {
      OutputOp output_op(params);
      Epilogue epilogue;
      epilogue(output_op, M, N, D, ldd, C, ldc, m0, n0, accum, shared_storage.epilogue);
      arch::allow_dependent_launch();
      return;
    }
    const long long slice_stride = (long long)M * N;
    PartialEpilogue partial;
    partial(epilogue::thread::Identity({}), M, N, workspace + slice * slice_stride, N, nullptr, 0, m0, n0, accum,
            shared_storage.partial);

    // Publish this slice's partial, then take a ticket: the block that takes the last one reduces.
    int *ticket = tickets + tile_m * gridDim.y + tile_n;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_slice = atomicAdd(ticket, 1) == slices - 1;
    __syncthreads();
    if (!last_slice) {
      arch::allow_dependent_launch();
      return;
    }
    __threadfence();

    OutputOp output_op(params);
    if (ReductionBatch == 0) {
      const bool source_needed = output_op.is_source_needed();
      for (int idx = threadIdx.x; idx < Shape::kM * Shape::kN; idx += kThreads) {
        const int m = m0 + idx / Shape::kN;
        const int n = n0 + idx % Shape::kN;
        if (m < M && n < N) {
          const float *p = workspace + (long long)m * N + n;
          // L2 only: other blocks wrote these, and L1 is not coherent with them.
          float sum = __ldcg(p);
          for (int s = 1; s < slices; ++s) sum += __ldcg(p + s * slice_stride);
          D[(long long)m * ldd + n] = source_needed ? output_op(sum, C[(long long)m * ldc + n], n) : output_op(sum, n);
        }
      }
    } else {
      reduce_batched(M, N, output_op, D, ldd, C, ldc, workspace, slices, m0, n0);
    }
    if (threadIdx.x == 0) *ticket = 0;
    arch::allow_dependent_launch();
  }

 private:
  /// The ReductionBatch > 0 reduction: each thread owns one column of the tile and every
  /// kRowStep-th row (kElements elements); ReductionBatch slices of all of them are loaded before
  /// any is added, then added in slice order.
  __device__ __forceinline__ static void reduce_batched(int M, int N, OutputOp const &output_op, float *D, int ldd,
                                                        const float *C, int ldc, const float *workspace, int slices,
                                                        int m0, int n0) {
    constexpr int kBatch = ReductionBatch > 0 ? ReductionBatch : 1;
    static_assert(kThreads % Shape::kN == 0, "whole rows per pass of the threads");
    constexpr int kRowStep = kThreads / Shape::kN;
    constexpr int kElements = Shape::kM / kRowStep;
    const int row0 = threadIdx.x / Shape::kN;
    const int n = n0 + threadIdx.x % Shape::kN;
    if (n >= N) return;
    // Rows of this thread inside M: e < rows.
    const int rows = min(kElements, (M - m0 - row0 + kRowStep - 1) / kRowStep);
    const long long slice_stride = (long long)M * N;
    const float *base = workspace + (long long)(m0 + row0) * N + n;
    float sum[kElements];
#pragma unroll
    for (int e = 0; e < kElements; ++e) sum[e] = e < rows ? __ldcg(base + e * kRowStep * N) : 0.0f;
    for (int s = 1; s < slices; s += kBatch) {
      float part[kBatch][kElements];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
#pragma unroll
        for (int e = 0; e < kElements; ++e) {
          part[b][e] = (s + b < slices && e < rows) ? __ldcg(base + (s + b) * slice_stride + e * kRowStep * N) : 0.0f;
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (s + b < slices) {
#pragma unroll
          for (int e = 0; e < kElements; ++e) sum[e] += part[b][e];
        }
      }
    }
    const bool source_needed = output_op.is_source_needed();
#pragma unroll
    for (int e = 0; e < kElements; ++e) {
      if (e < rows) {
        const long long m = m0 + row0 + e * kRowStep;
        D[m * ldd + n] = source_needed ? output_op(sum[e], C[m * ldc + n], n) : output_op(sum[e], n);
      }
    }
  }

  /// L2 prefetch of the first Stages - 1 k-tiles of this block's B columns (or rows, 't').
  __device__ __forceinline__ static void prefetch_weights(int N, int k_size, const float *b, int ldb, int n0) {
    constexpr int kFloatsPerLine = 32;
    const int k_span = min(k_size, (Mma::kStages - 1) * Shape::kK);
    if (k_span <= 0) return;
    if (LayoutB::kLetter == 'n') {
      // kN rows of the [N, K] weight, k_span floats each.
      const int lines = (k_span + kFloatsPerLine - 1) / kFloatsPerLine;
      for (int i = threadIdx.x; i < Shape::kN * lines; i += kThreads) {
        const int n = n0 + i / lines;
        if (n < N) arch::prefetch_l2(b + (long long)n * ldb + (i % lines) * kFloatsPerLine);
      }
    } else {
      // k_span rows of the [K, N] matrix, kN floats each.
      const int lines = (min(Shape::kN, N - n0) + kFloatsPerLine - 1) / kFloatsPerLine;
      for (int i = threadIdx.x; i < k_span * lines; i += kThreads) {
        arch::prefetch_l2(b + (long long)(i / lines) * ldb + n0 + (i % lines) * kFloatsPerLine);
      }
    }
  }
};

}  // namespace kernel
}  // namespace gemm
}  // namespace cg4j
