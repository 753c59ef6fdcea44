// cudagraph4j kernels: threadblock-scoped multistage matrix multiply-accumulate on sm_90a TF32 tensor
// cores through `wgmma` (the mainloop of the Hopper tensor-core sgemm; B stored [N,K] only).
//
// Each warpgroup (4 warps) owns 64 rows of the threadblock tile and all of its kN columns: one
// wgmma 64 x kN x 8 per k step and product, A from registers, B from shared memory. Global ->
// shared copies run Stages - 1 k-tiles ahead (cp.async): A into a padded [kM][kK + 4] tile, read
// with ldmatrix and split in registers as the mma.sync mainloop does; B into the 128-byte swizzled
// K-major tile wgmma reads (arch/wgmma_tf32.cuh), which needs kK = 32.
//
// 3xTF32 (arch::TensorMath::kFastF32): a ~ big + small for each operand, three products per term,
// the small-part corrections first. A's parts come from registers; B's big part is B itself (the
// tensor core reads its top 19 bits), and its small part is a second shared tile that a conversion
// pass writes from the landed B stage, double-buffered so that the pass for tile kt + 1 runs while
// the tensor cores work on tile kt. Each k-tile's 12 products are summed by the tensor core in a
// zeroed partial and promoted into the FP32 accumulator with one add per element (its own sums
// truncate). TF32 (kTF32): one product per term, accumulated in place.
//
// Per k-tile kt: A fragments of kt -> wgmma (async) -> copies of tile kt + Stages - 1 -> wait for tile
// kt + 1, barrier, convert its B -> wait for the wgmma -> promote -> barrier. The first barrier lets
// every thread read tile kt + 1's B; the second makes the small tile visible to the next wgmma and
// frees tile kt's stage, which the copies of the next iteration overwrite. TF32 converts nothing and
// keeps the second barrier only.
#pragma once

#include "../../arch/cp_async.cuh"
#include "../../arch/mma_tf32.cuh"
#include "../../arch/wgmma_tf32.cuh"
#include "../../gemm_shape.cuh"
#include "../../layout.cuh"
#include "tile_loader_tensor_op.cuh"

namespace cg4j {
namespace gemm {
namespace threadblock {

template <typename Shape_,  ///< GemmShape<kM, kN, 32> of the threadblock tile: kM a multiple of 64, kN 64 or 128
          int AlignmentA_,  ///< floats per copy of A: 1 or 4 (4: lda % 4 == 0, A 16-byte aligned)
          int AlignmentB_,  ///< floats per copy of B: 1 or 4 (4: ldb % 4 == 0, B 16-byte aligned)
          int Stages_,      ///< shared-memory pipeline depth (>= 2)
          arch::TensorMath Math_>
class MmaMultistageWgmma {
 public:
  using Shape = Shape_;
  using LayoutB = layout::ColumnMajor;
  static constexpr int kStages = Stages_;
  static constexpr arch::TensorMath kMath = Math_;
  static constexpr bool kFastF32 = kMath == arch::TensorMath::kFastF32;

  static constexpr int kWarpGroups = Shape::kM / 64;
  static constexpr int kThreads = 128 * kWarpGroups;
  static constexpr int kSteps = Shape::kK / 8;  ///< k steps of 8 per k-tile
  /// The epilogue's view (epilogue/threadblock/epilogue_tensor_op.cuh): a warp holds one m16 row of
  /// kN / 8 mma.sync-layout tiles.
  static constexpr int kMmaM = 1;
  static constexpr int kMmaN = Shape::kN / 8;

  static_assert(Shape::kM % 64 == 0, "whole warpgroups of 64 rows");
  static_assert(Shape::kN == 64 || Shape::kN == 128, "wgmma n of 64 or 128");
  static_assert(Shape::kK == arch::Smem128BSwizzle::kRowFloats, "one 128-byte swizzle row of B per n and k-tile");
  static_assert(kStages >= 2, "need at least two stages");

  static constexpr int kLdA = Shape::kK + 4;  // [kM][kK + 4], conflict-free ldmatrix
  static constexpr int kStageABytes = Shape::kM * kLdA * 4;
  static constexpr int kStageBBytes = Shape::kN * Shape::kK * 4;  // [kN][32], 128-byte swizzle
  static_assert(kStageBBytes % 1024 == 0, "B stages stay 1024-byte aligned");
  static constexpr int kSmallBTiles = kFastF32 ? 2 : 0;
  static constexpr int kBBytes = (kStages + kSmallBTiles) * kStageBBytes;

  using LoaderA = TileLoaderPitchLinear<Shape::kM, Shape::kK, kThreads, AlignmentA_, kLdA>;
  using LoaderB = TileLoaderPitchLinear<Shape::kN, Shape::kK, kThreads, AlignmentB_, Shape::kK, true>;

  /// B's stages and small tiles first, 1024-byte aligned from wherever the block's shared memory
  /// starts (the slack), then A's stages.
  struct SharedStorage {
    alignas(16) unsigned char bytes[1024 + kBBytes + kStages * kStageABytes];
  };

  /// A warp's accumulators in the epilogue's layout: v[0][j][r] is wgmma accumulator 4j + r.
  struct FragmentC {
    float v[1][kMmaN][4];
    __device__ __forceinline__ void clear() {
#pragma unroll
      for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) v[0][j][r] = 0.0f;
    }
    __device__ __forceinline__ float (&flat())[Shape::kN / 2] {
      return *reinterpret_cast<float (*)[Shape::kN / 2]>(&v[0][0][0]);
    }
  };

  /// Row and column (within the threadblock tile) of accumulator v[0][j][r] of this thread.
  __device__ __forceinline__ static int thread_row(int, int r) {
    return (threadIdx.x / 32) * 16 + (threadIdx.x % 32) / 4 + (r >= 2 ? 8 : 0);
  }
  __device__ __forceinline__ static int thread_col(int j, int r) { return j * 8 + (threadIdx.x % 4) * 2 + (r & 1); }

  /// Computes accum += A[m0 : m0+kM, :] * B[:, n0 : n0+kN] over the whole K (B stored [N,K]).
  __device__ __forceinline__ void operator()(int M, int N, int K, const float *__restrict__ A, int lda,
                                             const float *__restrict__ B, int ldb, int m0, int n0,
                                             FragmentC &accum, SharedStorage &smem) const {
    static_assert(CG4J_WGMMA_AVAILABLE || sizeof(Shape) == 0,
                  "wgmma kernels need sm_90a: build them with -gencode arch=compute_90a,code=sm_90a");
    const int tid = threadIdx.x;
    LoaderA loader_a(A + (long long)m0 * lda, lda, M - m0, K, tid);
    LoaderB loader_b(B + (long long)n0 * ldb, ldb, N - n0, K, tid);
    const int k_tiles = (K + Shape::kK - 1) / Shape::kK;
    const unsigned base = arch::smem_u32(smem.bytes);
    const unsigned smem_b = (base + 1023) & ~1023u;
    const unsigned smem_small = smem_b + kStages * kStageBBytes;
    const unsigned smem_a = smem_b + kBBytes;

    auto load_tile = [&](int stage) {
      loader_a.issue(smem_a + stage * kStageABytes);
      loader_b.issue(smem_b + stage * kStageBBytes);
      loader_a.advance_columns(Shape::kK);
      loader_b.advance_columns(Shape::kK);
    };

#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) load_tile(s);
      arch::cp_async_fence();
    }
    if (k_tiles > 0) {
      arch::cp_async_wait<kStages - 2>();
      if constexpr (kFastF32) {
        __syncthreads();
        convert_b(smem_b, smem_small);
      }
      arch::fence_proxy_async();
      __syncthreads();
    }

    const int lane = tid % 32;
    // ldmatrix row addresses of this warp's 16 rows: the x4 takes rows 0-7 and 8-15 at k 0-3, then
    // at k 4-7 (a0 .. a3).
    const unsigned a_offset = (((tid / 32) * 16 + (lane / 8) % 2 * 8 + lane % 8) * kLdA + (lane / 16) * 4) * 4;

    float part[kFastF32 ? Shape::kN / 2 : 1];
    float(&acc)[Shape::kN / 2] = accum.flat();
    FragmentA a;
    int read_stage = 0;
    int write_stage = kStages - 1;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const unsigned stage_b = smem_b + read_stage * kStageBBytes;
      const unsigned small_b = smem_small + (kt & 1) * kStageBBytes;
      a.load(smem_a + read_stage * kStageABytes + a_offset);
      const unsigned(&a_big)[kSteps][4] = a.big;
      const unsigned(&a_small)[kFastF32 ? kSteps : 1][4] = a.small;
      if constexpr (kFastF32) {
#pragma unroll
        for (int i = 0; i < Shape::kN / 2; ++i) arch::fence_operand(part[i]);
      } else {
#pragma unroll
        for (int i = 0; i < Shape::kN / 2; ++i) arch::fence_operand(acc[i]);
      }
      arch::wgmma_fence();
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        const unsigned long long b_big = arch::smem_descriptor_128b(stage_b + s * 32);
        if constexpr (kFastF32) {
          const unsigned long long b_small = arch::smem_descriptor_128b(small_b + s * 32);
          arch::wgmma_tf32<Shape::kN>(part, a_small[s], b_big, s > 0);
          arch::wgmma_tf32<Shape::kN>(part, a_big[s], b_small, 1);
          arch::wgmma_tf32<Shape::kN>(part, a_big[s], b_big, 1);
        } else {
          arch::wgmma_tf32<Shape::kN>(acc, a_big[s], b_big, 1);
        }
      }
      arch::wgmma_commit();

      // While the tensor cores work: the copies of tile kt + Stages - 1, and tile kt + 1's small B.
      if (kt + kStages - 1 < k_tiles) load_tile(write_stage);
      arch::cp_async_fence();
      write_stage = (write_stage + 1 == kStages) ? 0 : write_stage + 1;
      read_stage = (read_stage + 1 == kStages) ? 0 : read_stage + 1;
      if (kFastF32 && kt + 1 < k_tiles) {
        arch::cp_async_wait<kStages - 2>();
        __syncthreads();
        convert_b(smem_b + read_stage * kStageBBytes, smem_small + ((kt + 1) & 1) * kStageBBytes);
        arch::fence_proxy_async();
      } else {
        // Tile kt + 1 (B and A) must have landed for every thread before the next iteration.
        arch::cp_async_wait<kStages - 2>();
        arch::fence_proxy_async();
      }

      arch::wgmma_wait<0>();
      if constexpr (kFastF32) {
#pragma unroll
        for (int i = 0; i < Shape::kN / 2; ++i) {
          arch::fence_operand(part[i]);
          acc[i] += part[i];
        }
      } else {
#pragma unroll
        for (int i = 0; i < Shape::kN / 2; ++i) arch::fence_operand(acc[i]);
      }
      __syncthreads();
    }

    // Drain the (empty) trailing groups: the epilogue may reuse this memory.
    arch::cp_async_wait<0>();
    __syncthreads();
  }

 private:
  /// One k-tile of this warp's A fragments (ldmatrix from the padded tile), split into TF32 parts for
  /// 3xTF32 or left as FP32 bits for TF32. They stay in registers until the wgmma that read them are
  /// done, so each k-tile's are loaded after the wait that ends the previous one's: a version that
  /// loaded tile kt + 1's into a second set while tile kt's wgmma ran measured slower (75.7 against
  /// 78.8 TFLOP/s at 4096^3 on the H200) and gave wrong sums, the compiler having put the new values
  /// in registers the running wgmma still read.
  struct FragmentA {
    unsigned big[kSteps][4];
    unsigned small[kFastF32 ? kSteps : 1][4];
    __device__ __forceinline__ void load(unsigned smem) {
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        unsigned v[4];
        arch::ldmatrix_x4(v, smem + s * 32);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          if constexpr (kFastF32) {
            arch::tf32_split(__uint_as_float(v[r]), big[s][r], small[s][r]);
          } else {
            big[s][r] = v[r];
          }
        }
      }
    }
  };

  /// Writes the TF32 small part of every element of the B stage at `raw` into the tile at `small`
  /// (same swizzled layout, element for element; arch::tf32_split).
  __device__ __forceinline__ static void convert_b(unsigned raw, unsigned small) {
    constexpr int kVectors = kStageBBytes / 16;
    static_assert(kVectors % kThreads == 0, "every thread converts the same number of 16-byte vectors");
#pragma unroll
    for (int i = 0; i < kVectors / kThreads; ++i) {
      const unsigned offset = (i * kThreads + threadIdx.x) * 16;
      float x[4];
      asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];\n"
                   : "=f"(x[0]), "=f"(x[1]), "=f"(x[2]), "=f"(x[3])
                   : "r"(raw + offset)
                   : "memory");
      unsigned s[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        unsigned big;
        arch::tf32_split(x[r], big, s[r]);
      }
      asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(small + offset), "r"(s[0]), "r"(s[1]), "r"(s[2]),
                   "r"(s[3])
                   : "memory");
    }
  }
};

}  // namespace threadblock
}  // namespace gemm
}  // namespace cg4j
