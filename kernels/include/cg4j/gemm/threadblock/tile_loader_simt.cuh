// cudagraph4j kernels: global -> shared tile loaders of the SIMT mainloop, one per global layout
// and access width (the CUTLASS split of a mainloop into its tile iterators).
//
// Every operand lands in shared memory K-major: for each k of the tile, kRows (M for A, N for B)
// floats in a row of KMajorSmemTile::kLd floats, optionally XOR-swizzled. What differs is how the
// global tile is read:
//
//   TileLoaderTransposeAsync   global [rows][K] (A, and B 'n' align1): 4-byte cp.async, each thread
//                              one fixed k of the tile, walking rows; the copy transposes.
//   TileLoaderTransposeVector  global [rows][K], K and ld multiples of 4, 16-byte-aligned base
//                              (B 'n' align4): 16-byte loads of 4 consecutive k into registers,
//                              stored as 4 floats to 4 k rows of the tile a few k steps later (the
//                              transpose goes through registers instead of 4-byte copies).
//   TileLoaderCongruousAsync   global [K][rows] (B 't', align1 or align4): cp.async along the rows,
//                              no transpose, 4 or 16 bytes at a time.
//
// The interface the mainloop drives for the cp.async loaders (one loader per operand):
//   Loader(ptr, ld, extent, origin, tid)   extent: M or N; origin: the tile's first row (m0 or n0)
//   issue_full(stage_addr, part, first)    a whole k-tile: only the M/N edge is predicated
//   issue_residue(stage_addr, k_rem, part, first)  the last, partial k-tile: every element past K is
//                                          zero (it would pollute every output otherwise)
//   advance()                              the next k-tile
// issue_* only performs the copies with (first + i) % kIssueSteps == part (the mainloop may spread a
// tile's copies over several k steps; `first` numbers this operand's copies after the other's).
// The register-staged loader (kStagedInRegisters) is also given K, and has its own schedule over the
// k steps instead: issue_at(kk) and store_at(kk, stage) at every step, copy_tile(stage) in the
// prologue.
#pragma once

#include "../../arch/cp_async.cuh"
#include "../../arch/memory.cuh"

namespace cg4j {
namespace gemm {
namespace threadblock {

/// A K-major tile of one stage in shared memory: element (k, x) at k * kLd + x, or with the 4-float
/// groups of each k row XOR-swizzled by (k & 7), which needs no padding (one XOR per access).
template <int Ld_, bool Swizzle_>
struct KMajorSmemTile {
  static constexpr int kLd = Ld_;
  static constexpr bool kSwizzle = Swizzle_;
  static_assert(kLd % 4 == 0, "rows must stay 16-byte aligned");
  static_assert(!kSwizzle || kLd % 32 == 0, "the swizzle permutes within 32 columns");

  __device__ __forceinline__ static int offset(int k, int x) {
    if (kSwizzle) {
      return k * kLd + (x ^ ((k & 7) << 2));
    } else {
      return k * kLd + x;
    }
  }
};

/// Global [rows][K] (element (k, x) at x * ld + k), 4-byte cp.async. Thread t owns k = t % kK and rows
/// t / kK + i * kRowsPerSweep: a warp reads 32 / kK rows of kK contiguous floats per copy.
template <int Rows, int TileK, int Threads, int IssueSteps, typename SmemTile>
class TileLoaderTransposeAsync {
 public:
  static constexpr bool kStagedInRegisters = false;
  static_assert(Threads % TileK == 0, "threads per k-column");
  static constexpr int kRowsPerSweep = Threads / TileK;
  static_assert(Rows % kRowsPerSweep == 0, "whole sweeps");
  static constexpr int kLoads = Rows / kRowsPerSweep;

  __device__ __forceinline__ TileLoaderTransposeAsync(const float *ptr, int ld, int extent, int origin, int tid) {
    k_ = tid % TileK;
    row0_ = tid / TileK;
    src_ = ptr + (long long)(origin + row0_) * ld + k_;
    sweep_stride_ = (long long)kRowsPerSweep * ld;
    // Loads i < rows_ are inside the extent.
    rows_ = (extent - origin - row0_ + kRowsPerSweep - 1) / kRowsPerSweep;
  }

  __device__ __forceinline__ void issue_full(unsigned stage_addr, int part, int first) const {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      if ((first + i) % IssueSteps != part) continue;
      arch::cp_async_pred_4(stage_addr + SmemTile::offset(k_, row0_ + i * kRowsPerSweep) * 4, src_ + i * sweep_stride_,
                            i < rows_);
    }
  }

  __device__ __forceinline__ void issue_residue(unsigned stage_addr, int k_rem, int part, int first) const {
    const bool k_ok = k_ < k_rem;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      if ((first + i) % IssueSteps != part) continue;
      arch::cp_async_zfill_4(stage_addr + SmemTile::offset(k_, row0_ + i * kRowsPerSweep) * 4, src_ + i * sweep_stride_,
                             k_ok && i < rows_);
    }
  }

  __device__ __forceinline__ void advance() { src_ += TileK; }

 private:
  const float *src_;
  long long sweep_stride_;
  int k_;
  int row0_;
  int rows_;
};

/// Global [rows][K] with K and ld multiples of 4 and a 16-byte-aligned base: each copy reads 4
/// consecutive k of one row (16 bytes) into registers, and store() writes them as 4 floats into 4 k
/// rows of the tile. With K a multiple of 4 a group of 4 is either inside K or entirely past it, so
/// the last, partial k-tile needs no other code: a group past K (or a row past the extent) is not
/// read, and its registers are zero.
///
/// Schedule: the kLoads copies of a k-tile are loaded in kGroups groups of Held copies spread over
/// its k steps, group g loaded at step g * kStepsPerGroup and stored at step
/// (g + 1) * kStepsPerGroup - 2, so Held copies' 4 registers each are live at a time and each load has
/// kStepsPerGroup - 2 k steps of math to land. Held = 1 (the default): one copy at a time, the
/// fewest registers. Held = kLoads: all of a tile's copies loaded at its first k step and stored at
/// the last one before the barrier that ends it, kK - 2 k steps of math behind each load.
/// issue_at / store_at do what falls on step kk.
///
/// Thread map: a warp's lane l reads row r = l / 2 of its 16 and the 4-float group 2 * g + l % 2 of
/// its k-group pair g, so two lanes cover one 32-byte sector and a warp 16 whole sectors. Warp w
/// takes pair g = w % kPairs and rows 16 * (w / kPairs) + r (+ i * kRowsPerSweep). The 4-byte stores
/// of one warp then hit 32 different banks: k = 8g + 4 (l % 2) + e puts lane pairs 16 banks apart in
/// a tile padded to kLd = 32j + 4 (4k + x mod 32) or swizzled by (k & 7) << 2 (x ^ (16 (l % 2) + 4e)),
/// and the 16 rows of a warp fill the other 16.
template <int Rows, int TileK, int Threads, typename SmemTile, int Held = 1>
class TileLoaderTransposeVector {
 public:
  static constexpr bool kStagedInRegisters = true;
  static constexpr int kVector = 4;  ///< floats per global access
  static_assert(TileK % (2 * kVector) == 0, "k-tiles of whole 32-byte sectors");
  static constexpr int kPairs = TileK / (2 * kVector);  ///< 32-byte k-sectors per row of a k-tile
  static constexpr int kWarps = Threads / 32;
  static_assert(Threads % 32 == 0 && kWarps % kPairs == 0, "warps per k-sector");
  static constexpr int kRowsPerSweep = 16 * (kWarps / kPairs);
  static_assert(Rows % kRowsPerSweep == 0, "whole sweeps");
  static constexpr int kLoads = Rows / kRowsPerSweep;
  static constexpr int kHeld = Held;  ///< copies in registers at once
  static_assert(kHeld >= 1 && kLoads % kHeld == 0, "whole groups of held copies");
  static constexpr int kGroups = kLoads / kHeld;
  static_assert(TileK % kGroups == 0, "groups spread evenly over the k steps");
  static constexpr int kStepsPerGroup = TileK / kGroups;
  static_assert(kStepsPerGroup >= 3, "a load needs at least one k step of math before its store");
  static_assert(SmemTile::kSwizzle || SmemTile::kLd % 32 == 4, "the bank argument above needs kLd = 32j + 4");

  /// `k` is the depth of the operand (K): this loader reads no group at or past it.
  __device__ __forceinline__ TileLoaderTransposeVector(const float *ptr, int ld, int extent, int origin, int k,
                                                       int tid) {
    const int warp = tid / 32;
    const int lane = tid % 32;
    k_ = (warp % kPairs) * (2 * kVector) + (lane % 2) * kVector;
    row0_ = (warp / kPairs) * 16 + lane / 2;
    src_ = ptr + (long long)(origin + row0_) * ld + k_;
    ld_ = ld;
    rows_ = (extent - origin - row0_ + kRowsPerSweep - 1) / kRowsPerSweep;
    // Floats of K left from this thread's group of the k-tile the pointer is at: the group is inside
    // K while it is positive (K and k_ are multiples of 4). One counter instead of comparing k_ with
    // the tile's remainder: the large tile has no register to spare for k_.
    k_left_ = k - k_;
#pragma unroll
    for (int h = 0; h < kHeld; ++h) {
#pragma unroll
      for (int e = 0; e < kVector; ++e) v_[h][e] = 0.0f;
    }
  }

  /// Loads copy i of the k-tile the pointer is at (into the registers of i % kHeld).
  __device__ __forceinline__ void issue(int i) {
    arch::ldg_128_zfill(v_[i % kHeld], src_ + (long long)(i * kRowsPerSweep) * ld_, i < rows_ && k_left_ > 0);
  }

  /// Writes copy i, loaded by issue(i), into the stage.
  __device__ __forceinline__ void store(int i, float *stage) const {
#pragma unroll
    for (int e = 0; e < kVector; ++e) stage[SmemTile::offset(k_ + e, row0_ + i * kRowsPerSweep)] = v_[i % kHeld][e];
  }

  /// Step kk (a constant once the k loop is unrolled) of the k-tile being copied: the group loaded
  /// here, if any, and the pointer moved on to the next k-tile after the last one.
  __device__ __forceinline__ void issue_at(int kk) {
    if (kk % kStepsPerGroup == 0) {
      const int g = kk / kStepsPerGroup;
#pragma unroll
      for (int h = 0; h < kHeld; ++h) issue(g * kHeld + h);
      if (g == kGroups - 1) advance();
    }
  }
  /// Step kk: the group stored here, if any.
  __device__ __forceinline__ void store_at(int kk, float *stage) const {
    if ((kk + 2) % kStepsPerGroup == 0) {
      const int g = (kk + 2) / kStepsPerGroup - 1;
#pragma unroll
      for (int h = 0; h < kHeld; ++h) store(g * kHeld + h, stage);
    }
  }

  /// All copies of one k-tile at once, loaded and stored a group at a time (the pipeline's prologue).
  __device__ __forceinline__ void copy_tile(float *stage) {
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
#pragma unroll
      for (int h = 0; h < kHeld; ++h) issue(g * kHeld + h);
#pragma unroll
      for (int h = 0; h < kHeld; ++h) store(g * kHeld + h, stage);
    }
    advance();
  }

  __device__ __forceinline__ void advance() {
    src_ += TileK;
    k_left_ -= TileK;
  }

 private:
  float v_[kHeld][kVector];
  const float *src_;
  int ld_;
  int k_;
  int row0_;
  int rows_;
  int k_left_;
};

/// Global [K][rows] (element (k, x) at k * ld + x), cp.async of Alignment floats: thread t owns the
/// Alignment columns from (t % kThreadsPerRow) * Alignment and k rows t / kThreadsPerRow + i * kKPerSweep.
template <int Rows, int TileK, int Threads, int IssueSteps, typename SmemTile, int Alignment>
class TileLoaderCongruousAsync {
 public:
  static constexpr bool kStagedInRegisters = false;
  static_assert(Alignment == 1 || Alignment == 4, "4- or 16-byte copies");
  static constexpr int kThreadsPerRow = Rows / Alignment;
  static_assert(Threads % kThreadsPerRow == 0, "threads per row");
  static constexpr int kKPerSweep = Threads / kThreadsPerRow;
  static_assert(TileK % kKPerSweep == 0, "whole sweeps");
  static constexpr int kLoads = TileK / kKPerSweep;

  __device__ __forceinline__ TileLoaderCongruousAsync(const float *ptr, int ld, int extent, int origin, int tid) {
    col_ = (tid % kThreadsPerRow) * Alignment;
    k_ = tid / kThreadsPerRow;
    src_ = ptr + (long long)k_ * ld + origin + col_;
    sweep_stride_ = (long long)kKPerSweep * ld;
    tile_stride_ = (long long)TileK * ld;
    // Floats of this thread's column group inside the extent (0 .. Alignment).
    int avail = extent - (origin + col_);
    tail_ = avail <= 0 ? 0 : (avail >= Alignment ? Alignment : avail);
  }

  __device__ __forceinline__ void issue_full(unsigned stage_addr, int part, int first) const {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      if ((first + i) % IssueSteps != part) continue;
      const unsigned dst = stage_addr + SmemTile::offset(k_ + i * kKPerSweep, col_) * 4;
      if (Alignment == 1) {
        arch::cp_async_pred_4(dst, src_ + i * sweep_stride_, tail_ > 0);
      } else {
        arch::cp_async_zfill_16(dst, src_ + i * sweep_stride_, tail_ * 4);
      }
    }
  }

  __device__ __forceinline__ void issue_residue(unsigned stage_addr, int k_rem, int part, int first) const {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      if ((first + i) % IssueSteps != part) continue;
      const int k = k_ + i * kKPerSweep;
      const unsigned dst = stage_addr + SmemTile::offset(k, col_) * 4;
      if (Alignment == 1) {
        arch::cp_async_zfill_4(dst, src_ + i * sweep_stride_, k < k_rem && tail_ > 0);
      } else {
        arch::cp_async_zfill_16(dst, src_ + i * sweep_stride_, k < k_rem ? tail_ * 4 : 0);
      }
    }
  }

  __device__ __forceinline__ void advance() { src_ += tile_stride_; }

 private:
  const float *src_;
  long long sweep_stride_;
  long long tile_stride_;
  int k_;
  int col_;
  int tail_;
};

/// The loader of B for its global layout and alignment: 't' copies along rows (align1 or align4),
/// 'n' transposes through 4-byte async copies (align1) or through registers (align4, holding
/// HeldCopies copies at a time; the cp.async loaders ignore it).
template <char LayoutLetter, int Alignment, int Rows, int TileK, int Threads, int IssueSteps, typename SmemTile,
          int HeldCopies = 1>
struct DefaultTileLoaderB;

template <int Alignment, int Rows, int TileK, int Threads, int IssueSteps, typename SmemTile, int HeldCopies>
struct DefaultTileLoaderB<'t', Alignment, Rows, TileK, Threads, IssueSteps, SmemTile, HeldCopies> {
  using type = TileLoaderCongruousAsync<Rows, TileK, Threads, IssueSteps, SmemTile, Alignment>;
};
template <int Rows, int TileK, int Threads, int IssueSteps, typename SmemTile, int HeldCopies>
struct DefaultTileLoaderB<'n', 1, Rows, TileK, Threads, IssueSteps, SmemTile, HeldCopies> {
  using type = TileLoaderTransposeAsync<Rows, TileK, Threads, IssueSteps, SmemTile>;
};
template <int Rows, int TileK, int Threads, int IssueSteps, typename SmemTile, int HeldCopies>
struct DefaultTileLoaderB<'n', 4, Rows, TileK, Threads, IssueSteps, SmemTile, HeldCopies> {
  using type = TileLoaderTransposeVector<Rows, TileK, Threads, SmemTile, HeldCopies>;
};

}  // namespace threadblock
}  // namespace gemm
}  // namespace cg4j
