// cudagraph4j kernels: global -> shared tile loaders of the tensor-core mainloop.
//
// Unlike the SIMT mainloop's K-major tiles, these keep each operand in shared memory the way it
// lies in global memory (no transpose), padded so that the mma.sync fragment loads are free of bank
// conflicts:
//   rows x K, k contiguous (A, and B stored [N,K]): [rows][kK + 4]. A fragment load reads rows g and
//     columns t of an 8x4 block (g = lane / 4, t = lane % 4): with a row stride of 20 or 36 floats the
//     32 lanes fall in 32 different banks.
//   K x cols, n contiguous (B row-major [K,N]): [kK][cols + 8]. A fragment load reads rows t and
//     columns g: the stride is 8 banks mod 32, so rows t = 0..3 take banks 0-7, 8-15, 16-23, 24-31.
//   rows x 32, k contiguous, for wgmma (B stored [N,K]): unpadded 128-byte rows, the 16-byte chunk c
//     of row r stored at chunk c ^ (r % 8) (kSwizzle128B; arch/wgmma_tf32.cuh), the stage 1024-byte aligned.
// Every copy is a cp.async of Alignment floats (16 bytes for 4, which needs a 16-byte aligned operand
// and a leading dimension that is a multiple of 4). A vector that crosses the K (or N) edge copies its
// in-bounds part and zero-fills the rest; a vector wholly outside copies nothing and is zero-filled,
// so the K residue adds exact zeros. Rows past the M (or N) edge are zero-filled too: cheaper to fill
// than to prove that their outputs are never stored.
#pragma once

#include "../../arch/cp_async.cuh"

namespace cg4j {
namespace gemm {
namespace threadblock {

/// Copies a kRows x kCols tile whose columns are contiguous in global memory, rows `ld` apart,
/// into shared memory rows kLd floats apart. `rows` and `cols` are the valid extents from the tile's
/// origin; advance() moves the origin kStep along the columns (k-major operands) or kStep rows.
/// kSwizzle128B: the 128-byte swizzled layout above (kCols == kLd == 32).
template <int kRows, int kCols, int kThreads, int kAlignment, int kLd, bool kSwizzle128B = false>
class TileLoaderPitchLinear {
 public:
  static constexpr int kVectorsPerRow = kCols / kAlignment;
  static constexpr int kVectors = kRows * kVectorsPerRow;
  static_assert(kCols % kAlignment == 0, "whole vectors per row");
  static_assert(kVectors % kThreads == 0, "every thread copies the same number of vectors");
  static_assert(kThreads % kVectorsPerRow == 0, "a thread keeps its column from one copy to the next");
  static constexpr int kLoads = kVectors / kThreads;
  static constexpr int kRowsPerPass = kThreads / kVectorsPerRow;
  static_assert(kAlignment == 1 || kAlignment == 4, "4- or 16-byte copies");
  static_assert((kLd * 4) % 16 == 0, "shared rows stay 16-byte aligned");
  static_assert(!kSwizzle128B || (kCols == 32 && kLd == 32), "the 128-byte swizzle takes rows of 32 floats");

  /// `origin` points at element (0, 0) of the tile; `rows` x `cols` of it lie inside the matrix.
  __device__ __forceinline__ TileLoaderPitchLinear(const float *origin, long long ld, int rows, int cols, int tid)
      : ld_(ld), row_(tid / kVectorsPerRow), col_((tid % kVectorsPerRow) * kAlignment), rows_(rows), cols_(cols) {
    ptr_ = origin + row_ * ld + col_;
    base_ = origin;
  }

  /// Issues this thread's copies of the tile at the current origin into the stage at `smem`
  /// (a shared-window address).
  __device__ __forceinline__ void issue(unsigned smem) const {
    const int in_bounds = cols_ - col_;  // valid columns from this thread's first one
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int row = row_ + i * kRowsPerPass;
      const unsigned dst = smem + (kSwizzle128B ? row * 128 + ((((col_ >> 2) ^ row) & 7) << 4) + (col_ & 3) * 4
                                                : (row * kLd + col_) * 4);
      const bool valid = row < rows_ && in_bounds > 0;
      const float *src = valid ? ptr_ + i * kRowsPerPass * ld_ : base_;
      if constexpr (kAlignment == 4) {
        const int bytes = valid ? (in_bounds >= 4 ? 16 : in_bounds * 4) : 0;
        arch::cp_async_zfill_16(dst, src, bytes);
      } else {
        arch::cp_async_zfill_4(dst, src, valid);
      }
    }
  }

  /// Moves the origin `columns` to the right (k-contiguous operands: the next k-tile).
  __device__ __forceinline__ void advance_columns(int columns) {
    ptr_ += columns;
    cols_ -= columns;
  }

  /// Moves the origin `rows` down (a row-major [K,N] B: the next k-tile), `valid_rows` of them left.
  __device__ __forceinline__ void advance_rows(int rows, int valid_rows) {
    ptr_ += rows * ld_;
    rows_ = valid_rows;
  }

 private:
  const float *ptr_;     ///< this thread's first element at the current origin
  const float *base_;    ///< the first tile's element (0, 0): a valid address for copies that read nothing
  long long ld_;
  int row_, col_, rows_, cols_;
};

}  // namespace threadblock
}  // namespace gemm
}  // namespace cg4j
