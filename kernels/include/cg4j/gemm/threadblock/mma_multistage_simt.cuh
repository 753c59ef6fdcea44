// cudagraph4j kernels: threadblock-scoped multistage SIMT matrix multiply-accumulate (the mainloop).
//
// Global -> shared copies run `Stages - 1` k-tiles ahead through a pipeline, issued at the first
// k step(s) of the current tile; the math is plain FP32 FFMA from register fragments that are
// double-buffered across the k steps of a tile.
//
// Shared-memory tiles are K-major ("A transposed"): for every k of the tile, kM contiguous floats
// of A and kN contiguous floats of B. A thread's fragment for one k is then a few float4 loads:
//   A: [kK][kM + 4]   4 floats of padding per k row.
//   B 't' (row-major K x N, align1 or align4): [kK][kN], copied row by row, no transpose.
//   B 'n' (column-major, stored [N,K]): [kK][kN + PaddingBn], transposed like A; with
//                     PaddingBn == 0 the 4-float groups of each k row are XOR-swizzled by (k & 7)
//                     instead (no extra memory, one XOR per fragment load: the seed's 19200 B).
// How each operand gets there is its tile loader (tile_loader_simt.cuh), chosen by B's layout and
// alignment: A and 'n' B align1 by 4-byte cp.async; 't' B by 4- or 16-byte cp.async; 'n' B align4
// by 16-byte loads into registers, spread over the k steps of the tile during which the other
// copies of the same k-tile are in flight, each stored to shared memory a few k steps after its load
// (the stage is free all through this tile: no warp reads it until the barrier of a later k step);
// with HeldCopiesB = all of its copies, they are all loaded at the tile's first k step and stored at
// its last one before the barrier, kK - 2 k steps of math behind the loads (more registers).
//
// Thread arrangement: the threadblock tile is split into warps (WarpShape); a warp's 32 lanes form
// a kLanesM x kLanesN grid; each lane owns ThreadShape::kM x kN outputs as (kM/4) x (kN/4)
// sub-tiles of 4x4 that are kLanesM*4 rows / kLanesN*4 columns apart, so one k step reads
// kM/4 + kN/4 float4 values per lane and a warp touches at most 128 contiguous bytes per load.
#pragma once

#include "../../arch/cp_async.cuh"
#include "../../gemm_shape.cuh"
#include "../../layout.cuh"
#include "tile_loader_simt.cuh"

namespace cg4j {
namespace gemm {
namespace threadblock {

template <typename Shape_,        ///< GemmShape<kM, kN, kK> of the threadblock tile
          typename WarpShape_,    ///< GemmShape<kM, kN, kK> of one warp's tile (kK == Shape::kK)
          typename ThreadShape_,  ///< ThreadShape<kM, kN> of one thread's outputs
          typename LayoutB_,      ///< layout::RowMajor ('t') or layout::ColumnMajor ('n')
          int AlignmentB_,        ///< elements per global access of B: 1 or 4 (4 'n': K % 4 == 0 too)
          int Stages_,            ///< shared-memory pipeline depth (>= 2)
          int PaddingBn_ = 4,     ///< 'n' B: floats of padding per k row; 0 = XOR swizzle instead
          int CopySteps_ = 1,     ///< k steps over which a tile's copies are spread (1 .. kK-1)
          int HeldCopiesB_ = 1>   ///< register-staged B: copies held in registers at once (see its loader)
class MmaMultistageSimt {
 public:
  using Shape = Shape_;
  using WarpShape = WarpShape_;
  using ThreadShape = ThreadShape_;
  using LayoutB = LayoutB_;
  static constexpr int kStages = Stages_;
  static constexpr int kAlignmentB = AlignmentB_;
  static constexpr int kPaddingBn = PaddingBn_;

  static constexpr int kWarpCountM = Shape::kM / WarpShape::kM;
  static constexpr int kWarpCountN = Shape::kN / WarpShape::kN;
  static constexpr int kThreads = 32 * kWarpCountM * kWarpCountN;
  static constexpr int kLanesM = WarpShape::kM / ThreadShape::kM;
  static constexpr int kLanesN = WarpShape::kN / ThreadShape::kN;
  static constexpr int kIterM = ThreadShape::kM / 4;  ///< 4x4 sub-tiles along M
  static constexpr int kIterN = ThreadShape::kN / 4;

  static constexpr bool kBRowMajor = (LayoutB::kLetter == 't');

  static_assert(kStages >= 2, "need at least two stages");
  static_assert(WarpShape::kK == Shape::kK, "a warp covers the whole k-tile");
  static_assert(Shape::kM % WarpShape::kM == 0 && Shape::kN % WarpShape::kN == 0, "warp tiling");
  static_assert(kLanesM * kLanesN == 32, "a warp's lanes must tile its WarpShape exactly");
  static_assert(ThreadShape::kM % 4 == 0 && ThreadShape::kN % 4 == 0, "4x4 sub-tiles");
  static_assert(kAlignmentB == 1 || kAlignmentB == 4, "B is copied 4 or 16 bytes at a time");

  // Shared-memory tile geometry (floats).
  static constexpr bool kSwizzleB = !kBRowMajor && PaddingBn_ == 0;
  static_assert(kPaddingBn % 4 == 0, "rows must stay 16-byte aligned");
  using SmemTileA = KMajorSmemTile<Shape::kM + 4, false>;
  using SmemTileB = KMajorSmemTile<Shape::kN + (kBRowMajor ? 0 : kPaddingBn), kSwizzleB>;
  static constexpr int kLdA = SmemTileA::kLd;
  static constexpr int kLdB = SmemTileB::kLd;
  static constexpr int kStageA = Shape::kK * kLdA;
  static constexpr int kStageB = Shape::kK * kLdB;
  /// The copies of the next tile are issued during k steps 0 .. kIssueSteps-1, between the math.
  /// Spreading them smooths issue, but keeps more addresses live (register pressure).
  static constexpr int kIssueSteps = CopySteps_;
  static_assert(kIssueSteps >= 1 && kIssueSteps < Shape::kK, "copies must be issued before the last k step");

  // Global -> shared tile loaders (tile_loader_simt.cuh).
  using LoaderA = TileLoaderTransposeAsync<Shape::kM, Shape::kK, kThreads, kIssueSteps, SmemTileA>;
  using LoaderB = typename DefaultTileLoaderB<LayoutB::kLetter, kAlignmentB, Shape::kN, Shape::kK, kThreads,
                                              kIssueSteps, SmemTileB, HeldCopiesB_>::type;
  static constexpr int kLoadsA = LoaderA::kLoads;
  static_assert(!LoaderB::kStagedInRegisters || kIssueSteps == 1, "register-staged B keeps its own schedule");
  static_assert(LoaderB::kStagedInRegisters || HeldCopiesB_ == 1, "only register-staged B holds copies");

  struct SharedStorage {
    float A[kStages * kStageA];
    float B[kStages * kStageB];
  };

  /// Accumulator tile of one thread: row i*4+r is sub-tile i, row r; likewise columns.
  struct FragmentC {
    float v[ThreadShape::kM][ThreadShape::kN];
    __device__ __forceinline__ void clear() {
#pragma unroll
      for (int i = 0; i < ThreadShape::kM; ++i)
#pragma unroll
        for (int j = 0; j < ThreadShape::kN; ++j) v[i][j] = 0.0f;
    }
  };

  /// The register-staged loader also takes K; the cp.async ones predicate K per k-tile.
  __device__ __forceinline__ static LoaderB make_loader_b(const float *B, int ldb, int N, int n0, int K, int tid) {
    if constexpr (LoaderB::kStagedInRegisters) {
      return LoaderB(B, ldb, N, n0, K, tid);
    } else {
      return LoaderB(B, ldb, N, n0, tid);
    }
  }

  /// Offset of element (k, n) in one stage of B in shared memory.
  __device__ __forceinline__ static int smem_offset_b(int k, int n) { return SmemTileB::offset(k, n); }

  /// Row (within the threadblock tile) of accumulator row `tm` of this thread.
  __device__ __forceinline__ static int thread_row(int warp_m, int lane_m, int tm) {
    return warp_m * WarpShape::kM + (tm / 4) * (kLanesM * 4) + lane_m * 4 + (tm % 4);
  }
  /// Column (within the threadblock tile) of accumulator column `tn` of this thread.
  __device__ __forceinline__ static int thread_col(int warp_n, int lane_n, int tn) {
    return warp_n * WarpShape::kN + (tn / 4) * (kLanesN * 4) + lane_n * 4 + (tn % 4);
  }

  /// Lane -> (lane_m, lane_n) and warp -> (warp_m, warp_n); shared with the epilogue.
  __device__ __forceinline__ static void thread_coords(int &warp_m, int &warp_n, int &lane_m, int &lane_n) {
    int warp = threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    warp_m = warp % kWarpCountM;
    warp_n = warp / kWarpCountM;
    lane_m = lane / kLanesN;
    lane_n = lane % kLanesN;
  }

  /// Computes accum += A[m0 : m0+kM, :] * B[:, n0 : n0+kN] over the whole K.
  __device__ __forceinline__ void operator()(int M, int N, int K, const float *__restrict__ A, int lda,
                                             const float *__restrict__ B, int ldb, int m0, int n0,
                                             FragmentC &accum, SharedStorage &smem) const {
    const int tid = threadIdx.x;

    // ---- global -> shared iterators ------------------------------------------------------------
    LoaderA loader_a(A, lda, M, m0, tid);
    LoaderB loader_b = make_loader_b(B, ldb, N, n0, K, tid);

    const int k_tiles = (K + Shape::kK - 1) / Shape::kK;
    const unsigned smem_a = arch::smem_u32(smem.A);
    const unsigned smem_b = arch::smem_u32(smem.B);

    // Issues the copies of k-tile `kt` (tiles are issued in order) into pipeline stage `stage`.
    // Only copies with index % kIssueSteps == part are issued (part is a constant after unrolling).
    // A full k-tile needs only the M/N edge predicates (rows past the edge feed outputs that are
    // never stored, so they are simply not copied); the last, partial k-tile zero-fills every
    // element past K, since those would pollute every output.
    auto load_tile = [&](int kt, int stage, int part) {
      const unsigned sA = smem_a + stage * (kStageA * 4);
      const unsigned sB = smem_b + stage * (kStageB * 4);
      const int k_rem = K - kt * Shape::kK;
      if (k_rem >= Shape::kK) {
        loader_a.issue_full(sA, part, 0);
        if constexpr (!LoaderB::kStagedInRegisters) loader_b.issue_full(sB, part, kLoadsA);
      } else {
        loader_a.issue_residue(sA, k_rem, part, 0);
        if constexpr (!LoaderB::kStagedInRegisters) loader_b.issue_residue(sB, k_rem, part, kLoadsA);
      }
      if (part == kIssueSteps - 1) {
        loader_a.advance();
        if constexpr (!LoaderB::kStagedInRegisters) loader_b.advance();
      }
    };

    int warp_m, warp_n, lane_m, lane_n;
    thread_coords(warp_m, warp_n, lane_m, lane_n);
    const int frag_a_base = warp_m * WarpShape::kM + lane_m * 4;
    const int frag_b_base = warp_n * WarpShape::kN + lane_n * 4;

    float frag_a[2][ThreadShape::kM];
    float frag_b[2][ThreadShape::kN];

    auto load_fragments = [&](int buf, int stage, int k) {
      const float *sA = smem.A + stage * kStageA + k * kLdA + frag_a_base;
      const float *sB = smem.B + stage * kStageB;
#pragma unroll
      for (int i = 0; i < kIterM; ++i) {
        float4 v = *reinterpret_cast<const float4 *>(sA + i * kLanesM * 4);
        frag_a[buf][i * 4 + 0] = v.x;
        frag_a[buf][i * 4 + 1] = v.y;
        frag_a[buf][i * 4 + 2] = v.z;
        frag_a[buf][i * 4 + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < kIterN; ++j) {
        float4 v = *reinterpret_cast<const float4 *>(sB + smem_offset_b(k, frag_b_base + j * kLanesN * 4));
        frag_b[buf][j * 4 + 0] = v.x;
        frag_b[buf][j * 4 + 1] = v.y;
        frag_b[buf][j * 4 + 2] = v.z;
        frag_b[buf][j * 4 + 3] = v.w;
      }
    };

    // ---- prologue: fill Stages-1 stages ------------------------------------------------------
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) {
#pragma unroll
        for (int part = 0; part < kIssueSteps; ++part) load_tile(s, s, part);
        if constexpr (LoaderB::kStagedInRegisters) loader_b.copy_tile(smem.B + s * kStageB);
      }
      arch::cp_async_fence();
    }
    arch::cp_async_wait<kStages - 2>();
    __syncthreads();

    int read_stage = 0;
    int write_stage = kStages - 1;
    load_fragments(0, 0, 0);

    // Main loop
    for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
      for (int kk = 0; kk < Shape::kK; ++kk) {
        if (kk == Shape::kK - 1) {
          // Tile kt+1 must have landed, and every warp must be done reading the stage that the
          // copies issued during the next tile will overwrite.
          arch::cp_async_wait<kStages - 2>();
          __syncthreads();
          read_stage = (read_stage + 1 == kStages) ? 0 : read_stage + 1;
        }
        load_fragments((kk + 1) % 2, read_stage, (kk + 1) % Shape::kK);
        if (kk < kIssueSteps) {
          if (kt + kStages - 1 < k_tiles) load_tile(kt + kStages - 1, write_stage, kk);
          if (kk == kIssueSteps - 1) {
            arch::cp_async_fence();
            write_stage = (write_stage + 1 == kStages) ? 0 : write_stage + 1;
          }
        }
        if constexpr (LoaderB::kStagedInRegisters) {
          // B of tile kt + kStages - 1, loaded into registers over this tile's k steps and stored into
          // the stage the copies above went to (write_stage has moved on by one since step 0).
          if (kt + kStages - 1 < k_tiles) {
            loader_b.issue_at(kk);
            loader_b.store_at(kk, smem.B + ((write_stage == 0) ? kStages - 1 : write_stage - 1) * kStageB);
          }
        }
#pragma unroll
        for (int m = 0; m < ThreadShape::kM; ++m) {
#pragma unroll
          for (int n = 0; n < ThreadShape::kN; ++n) {
            accum.v[m][n] = fmaf(frag_a[kk % 2][m], frag_b[kk % 2][n], accum.v[m][n]);
          }
        }
      }
    }

    // Drain the (empty) trailing groups and release the stages: the epilogue reuses this memory.
    arch::cp_async_wait<0>();
    __syncthreads();
  }
};

}  // namespace threadblock
}  // namespace gemm
}  // namespace cg4j
