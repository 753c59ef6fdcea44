// cudagraph4j kernels: threadblock-scoped multistage matrix multiply-accumulate on TF32 tensor cores
// (the mainloop of the tensor-core sgemm).
//
// Global -> shared copies run Stages - 1 k-tiles ahead (cp.async, tile_loader_tensor_op.cuh). Each
// warp owns a WarpShape tile of the output as (kM / 16) x (kN / 8) mma.sync m16n8k8 tiles. Per group
// of GroupSteps k steps of 8 it loads its A fragments from shared memory and converts them
// (arch::TensorMath: split into TF32 big and small parts, or left to the tensor core's truncation),
// then, one n8 column of tiles at a time, the B fragments, and runs 3 mma (3xTF32) or 1 per output tile and
// k step. 3xTF32 sums each group's products in a zeroed partial and promotes it into the FP32
// accumulator with one add per element: the tensor core's own sums truncate, which over a long K
// costs more accuracy than the TF32 split itself.
//
// One __syncthreads per k-tile: after it, tile kt has landed (cp.async.wait_group) and every warp is
// done with tile kt - 1, whose stage the copies issued next (tile kt + Stages - 1) overwrite.
#pragma once

#include <type_traits>

#include "../../arch/cp_async.cuh"
#include "../../arch/mma_tf32.cuh"
#include "../../gemm_shape.cuh"
#include "../../layout.cuh"
#include "tile_loader_tensor_op.cuh"

namespace cg4j {
namespace gemm {
namespace threadblock {

template <typename Shape_,      ///< GemmShape<kM, kN, kK> of the threadblock tile (kK a multiple of 8)
          typename WarpShape_,  ///< GemmShape<kM, kN, kK> of one warp's tile (multiples of 16 x 8)
          typename LayoutB_,    ///< layout::RowMajor ('t', B is [K,N]) or ColumnMajor ('n', stored [N,K])
          int AlignmentA_,      ///< floats per copy of A: 1 or 4 (4: lda % 4 == 0, A 16-byte aligned)
          int AlignmentB_,      ///< floats per copy of B: 1 or 4 (4: ldb % 4 == 0, B 16-byte aligned)
          int Stages_,          ///< shared-memory pipeline depth (>= 2)
          arch::TensorMath Math_,
          int GroupSteps_ = 1>  ///< 3xTF32: k steps of 8 the tensor core sums before an FP32 add (see multiply)
class MmaMultistageTensorOp {
 public:
  using Shape = Shape_;
  using WarpShape = WarpShape_;
  using LayoutB = LayoutB_;
  static constexpr int kStages = Stages_;
  static constexpr arch::TensorMath kMath = Math_;

  static constexpr int kWarpCountM = Shape::kM / WarpShape::kM;
  static constexpr int kWarpCountN = Shape::kN / WarpShape::kN;
  static constexpr int kThreads = 32 * kWarpCountM * kWarpCountN;
  static constexpr int kMmaM = WarpShape::kM / 16;  ///< m16n8k8 tiles of a warp along M
  static constexpr int kMmaN = WarpShape::kN / 8;   ///< and along N
  static constexpr int kSteps = Shape::kK / 8;      ///< k steps of one k-tile
  static constexpr int kGroupSteps = GroupSteps_;
  static_assert(kSteps % kGroupSteps == 0, "whole groups of k steps per k-tile");
  static constexpr bool kBRowMajor = (LayoutB::kLetter == 't');

  static_assert(kStages >= 2, "need at least two stages");
  static_assert(Shape::kK % 8 == 0 && WarpShape::kK == Shape::kK, "a warp covers the whole k-tile, 8 at a time");
  static_assert(Shape::kM % WarpShape::kM == 0 && Shape::kN % WarpShape::kN == 0, "warp tiling");
  static_assert(WarpShape::kM % 16 == 0 && WarpShape::kN % 8 == 0, "whole m16n8 tiles per warp");

  // Shared-memory tiles (floats), padded as tile_loader_tensor_op.cuh explains.
  static constexpr int kLdA = Shape::kK + 4;                          // [kM][kK + 4]
  static constexpr int kLdB = kBRowMajor ? Shape::kN + 8 : Shape::kK + 4;  // [kK][kN + 8] or [kN][kK + 4]
  static constexpr int kStageA = Shape::kM * kLdA;
  static constexpr int kStageB = (kBRowMajor ? Shape::kK : Shape::kN) * kLdB;

  using LoaderA = TileLoaderPitchLinear<Shape::kM, Shape::kK, kThreads, AlignmentA_, kLdA>;
  using LoaderB = typename std::conditional<kBRowMajor,
                                            TileLoaderPitchLinear<Shape::kK, Shape::kN, kThreads, AlignmentB_, kLdB>,
                                            TileLoaderPitchLinear<Shape::kN, Shape::kK, kThreads, AlignmentB_, kLdB>>::type;

  struct SharedStorage {
    float A[kStages * kStageA];
    float B[kStages * kStageB];
  };

  /// A warp's accumulators: v[i][j] is m16n8 tile (i, j) in the mma.sync D layout (arch/mma_tf32.cuh).
  struct FragmentC {
    float v[kMmaM][kMmaN][4];
    __device__ __forceinline__ void clear() {
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) v[i][j][r] = 0.0f;
    }
  };

  /// Row and column (within the threadblock tile) of accumulator v[i][j][r] of this thread.
  __device__ __forceinline__ static int thread_row(int i, int r) {
    const int warp_m = (threadIdx.x / 32) % kWarpCountM;
    return warp_m * WarpShape::kM + i * 16 + (threadIdx.x % 32) / 4 + (r >= 2 ? 8 : 0);
  }
  __device__ __forceinline__ static int thread_col(int j, int r) {
    const int warp_n = (threadIdx.x / 32) / kWarpCountM;
    return warp_n * WarpShape::kN + j * 8 + (threadIdx.x % 4) * 2 + (r & 1);
  }

  /// Computes accum += A[m0 : m0+kM, :] * B[:, n0 : n0+kN] over the whole K.
  __device__ __forceinline__ void operator()(int M, int N, int K, const float *__restrict__ A, int lda,
                                             const float *__restrict__ B, int ldb, int m0, int n0,
                                             FragmentC &accum, SharedStorage &smem) const {
    const int tid = threadIdx.x;
    LoaderA loader_a(A + (long long)m0 * lda, lda, M - m0, K, tid);
    LoaderB loader_b = kBRowMajor ? LoaderB(B + n0, ldb, K, N - n0, tid)
                                  : LoaderB(B + (long long)n0 * ldb, ldb, N - n0, K, tid);
    const int k_tiles = (K + Shape::kK - 1) / Shape::kK;
    const unsigned smem_a = arch::smem_u32(smem.A);
    const unsigned smem_b = arch::smem_u32(smem.B);

    int k_left = K;  // valid k from the loaders' current origin
    auto load_tile = [&](int stage) {
      loader_a.issue(smem_a + stage * kStageA * 4);
      loader_b.issue(smem_b + stage * kStageB * 4);
      k_left -= Shape::kK;
      loader_a.advance_columns(Shape::kK);
      if constexpr (kBRowMajor) {
        loader_b.advance_rows(Shape::kK, k_left);
      } else {
        loader_b.advance_columns(Shape::kK);
      }
    };

#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) load_tile(s);
      arch::cp_async_fence();
    }

    const int warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int warp_row = (warp % kWarpCountM) * WarpShape::kM;
    const int warp_col = (warp / kWarpCountM) * WarpShape::kN;
    // ldmatrix row addresses: A's x4 takes rows 0-7 and 8-15 at k 0-3, then at k 4-7 (a0 .. a3);
    // B's x2 ([n][k] only) rows 0-7 at k 0-3 and k 4-7 (b0, b1).
    const int ldmatrix_a_offset = ((lane / 8) % 2 * 8 + lane % 8) * kLdA + (lane / 16) * 4;
    const int ldmatrix_b_offset = (lane % 8) * kLdB + (lane / 8) % 2 * 4;

    int read_stage = 0;
    int write_stage = kStages - 1;
    for (int kt = 0; kt < k_tiles; ++kt) {
      arch::cp_async_wait<kStages - 2>();
      __syncthreads();
      if (kt + kStages - 1 < k_tiles) load_tile(write_stage);
      arch::cp_async_fence();
      write_stage = (write_stage + 1 == kStages) ? 0 : write_stage + 1;

      const float *sB = smem.B + read_stage * kStageB;
      const unsigned stage_a = smem_a + (read_stage * kStageA + warp_row * kLdA) * 4;
      const unsigned stage_b = smem_b + read_stage * kStageB * 4;
#pragma unroll 1
      for (int ks = 0; ks < kSteps; ks += kGroupSteps) {
        Operand<4> a[kGroupSteps][kMmaM];
#pragma unroll
        for (int s = 0; s < kGroupSteps; ++s) {
#pragma unroll
          for (int i = 0; i < kMmaM; ++i) {
            unsigned v[4];
            arch::ldmatrix_x4(v, stage_a + (i * 16 * kLdA + ldmatrix_a_offset + (ks + s) * 8) * 4);
            a[s][i].set(v);
          }
        }
        // B one n8 column of tiles at a time: its few registers are all that is live beside A's.
#pragma unroll
        for (int j = 0; j < kMmaN; ++j) {
          Operand<2> b[kGroupSteps];
#pragma unroll
          for (int s = 0; s < kGroupSteps; ++s) {
            unsigned v[2];
            if constexpr (kBRowMajor) {
              const int k = (ks + s) * 8 + t;
              const int n = warp_col + j * 8 + g;
              v[0] = __float_as_uint(sB[k * kLdB + n]);
              v[1] = __float_as_uint(sB[(k + 4) * kLdB + n]);
            } else {
              arch::ldmatrix_x2(v, stage_b + ((warp_col + j * 8) * kLdB + ldmatrix_b_offset + (ks + s) * 8) * 4);
            }
            b[s].set(v);
          }
          multiply(a, b, accum, j);
        }
      }
      read_stage = (read_stage + 1 == kStages) ? 0 : read_stage + 1;
    }

    // Drain the (empty) trailing groups and release the stages: the epilogue may reuse this memory.
    arch::cp_async_wait<0>();
    __syncthreads();
  }

 private:
  /// One lane's registers of an mma operand, converted for kMath: TF32 big and small parts
  /// (3xTF32), or the FP32 bits as they are (TF32: the tensor core reads the top 19).
  template <int kRegs>
  struct Operand {
    unsigned big[kRegs];
    unsigned small[kMath == arch::TensorMath::kFastF32 ? kRegs : 1];
    __device__ __forceinline__ void set(const unsigned (&bits)[kRegs]) {
#pragma unroll
      for (int r = 0; r < kRegs; ++r) {
        if constexpr (kMath == arch::TensorMath::kFastF32) {
          arch::tf32_split(__uint_as_float(bits[r]), big[r], small[r]);
        } else {
          big[r] = bits[r];
        }
      }
    }
  };

  /// accum[.][j] += a * b over one group of k steps, for the warp's column of tiles j. 3xTF32 makes
  /// three passes over the column rather than three products per tile in a row (the mma of one pass
  /// are independent, so none waits on the accumulator of the one before), the small-part
  /// corrections first, into a zeroed partial that one FP32 add per element then promotes into
  /// accum (arch::mma_m16n8k8_tf32: the tensor core's own sums truncate). TF32 accumulates in place:
  /// its operand rounding dwarfs the truncation.
  __device__ __forceinline__ static void multiply(const Operand<4> (&a)[kGroupSteps][kMmaM],
                                                  const Operand<2> (&b)[kGroupSteps], FragmentC &accum, int j) {
    if constexpr (kMath == arch::TensorMath::kFastF32) {
      float part[kMmaM][4];
#pragma unroll
      for (int s = 0; s < kGroupSteps; ++s) {
#pragma unroll
        for (int i = 0; i < kMmaM; ++i) {
          if (s == 0) {
            arch::mma_m16n8k8_tf32_zero_c(part[i], a[s][i].small, b[s].big);
          } else {
            arch::mma_m16n8k8_tf32(part[i], a[s][i].small, b[s].big);
          }
        }
#pragma unroll
        for (int i = 0; i < kMmaM; ++i) arch::mma_m16n8k8_tf32(part[i], a[s][i].big, b[s].small);
#pragma unroll
        for (int i = 0; i < kMmaM; ++i) arch::mma_m16n8k8_tf32(part[i], a[s][i].big, b[s].big);
      }
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) accum.v[i][j][r] += part[i][r];
    } else {
#pragma unroll
      for (int s = 0; s < kGroupSteps; ++s)
#pragma unroll
        for (int i = 0; i < kMmaM; ++i) arch::mma_m16n8k8_tf32(accum.v[i][j], a[s][i].big, b[s].big);
    }
  }
};

}  // namespace threadblock
}  // namespace gemm
}  // namespace cg4j
