// cudagraph4j kernels: the decoder's projections on tensor cores, for up to 16 rows at once.
//
// A block owns a tile of 16 weight rows (features) and its warps split K between them, 32 elements
// a chunk, chunks dealt round-robin; each warp multiplies its chunks with mma.sync.m16n8k16 (BF16 in,
// FP32 accumulate) against the step's rows of x, up to 8 per n8 tile. Because a product's k order is
// free as long as A and B agree, each lane loads 16 contiguous bytes of its two weight rows (g and
// g + 8) and 16 contiguous bytes of its x row (g), and feeds them to two mmas: every load is a 16-byte
// vector, and the weights stream through at the rate of the loads alone, whatever the row count. The
// warps' partial sums meet in shared memory; the tile's 16 rows are chosen so that the epilogue's
// pairs (a RoPE rotation's two halves, a gate row and its up row) land in one thread. A block walks
// its tiles with a stride, and each warp issues its next round of loads (of this tile or the next)
// before it multiplies the pieces it holds, so that weights keep streaming across the tiles'
// reductions.
//
// Under programmatic dependent launch a block starts while the kernel before it is still running:
// it issues its first two rounds of weight loads (weights never depend on the step) before it waits
// for the previous kernel and reads x. (Asking L2 for the whole first tile as well made the step 7%
// slower on the H200: kernels/PERFORMANCE.md.)
#pragma once

#include "../arch/grid_dependency.cuh"
#include "decoder.cuh"

namespace cg4j {
namespace llm {

constexpr int kChunkK = 32;  ///< K elements a warp takes per step: 16 bytes per lane of 4 lanes a row

/// Warps per block of each projection, as measured best on the H200 (kernels/PERFORMANCE.md). The
/// output and down projections have few tiles (2048 features are 128 tiles, a block per SM), so their
/// blocks split K over 32 warps to keep enough weight loads in flight on each SM. Every projection's
/// launch bounds hold it to 64 registers a thread, so that 1024 threads' registers fit an SM.
constexpr int kQkvWarps = 16;
constexpr int kResidualWarps = 32;
constexpr int kGateUpWarps = 16;
constexpr int kLmHeadWarps = 16;

/// D += A B for one m16n8k16 BF16 product with FP32 accumulation.
__device__ __forceinline__ void mma_bf16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// Sums the warps' fragments in shared memory and calls epilogue(g, r, lo_sum, hi_sum) for every
/// lane group g < 8 and row r < R (by 8 * R threads), then syncs so the buffer can be reused.
template <int Tiles, int Warps, class Epilogue>
__device__ __forceinline__ void reduce_tile(const float (&acc)[Tiles][4], int R, Epilogue epilogue) {
  __shared__ float partial[Warps][16][Tiles * 8];
  const int warps = blockDim.x / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < Tiles; ++j) {
    partial[warp][g][j * 8 + 2 * t] = acc[j][0];
    partial[warp][g][j * 8 + 2 * t + 1] = acc[j][1];
    partial[warp][g + 8][j * 8 + 2 * t] = acc[j][2];
    partial[warp][g + 8][j * 8 + 2 * t + 1] = acc[j][3];
  }
  __syncthreads();
  if (threadIdx.x < 8 * R) {
    const int group = threadIdx.x / R, r = threadIdx.x - group * R;
    float lo = 0.0f, hi = 0.0f;
#pragma unroll
    for (int w = 0; w < warps; ++w) {
      lo += partial[w][group][r];
      hi += partial[w][group + 8][r];
    }
    epilogue(group, r, lo, hi);
  }
  __syncthreads();
}

/// Weight pieces a lane holds: Unroll chunks of its two rows, 16 bytes of each.
template <int Unroll>
struct WeightPieces {
  uint4 lo[Unroll], hi[Unroll];
};

/// A block's walk over its tiles (blockIdx.x, then every gridDim.x-th), each a 16-row tile times
/// the R rows of x, by a block of up to Warps warps (its launch bound; the loops take the warps the
/// block has, so a smaller block is slower, never wrong). A tile takes `rounds` rounds of Unroll
/// chunks a warp (chunks warp, warp + warps, ... of K); a warp issues the loads of its next round,
/// of this tile or the next, before it multiplies the pieces it holds, so that its loads stay in
/// flight across rounds and across the tiles' reductions. The first two rounds are issued before
/// the wait for the previous kernel. rows_of(tile, g, lo, hi) points lo and hi
/// at the weight rows that lane group g multiplies (the tile's rows g and g + 8); inputs() returns
/// the rows of x, called by every thread once the previous kernel has completed (the first weights
/// are on their way by then); epilogue(tile, group, r, lo_sum, hi_sum) stores a tile's sums, as
/// reduce_tile calls it.
template <int Tiles, int Warps, class Inputs, class RowsOf, class Epilogue>
__device__ __forceinline__ void stream_tiles(int tiles, int K, int R, Inputs inputs, RowsOf rows_of,
                                             Epilogue epilogue) {
  constexpr int Unroll = 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int g = lane >> 2, t = lane & 3;
  const int chunks = K / kChunkK;
  const int rounds = (chunks + warps * Unroll - 1) / (warps * Unroll);
  auto load = [&](WeightPieces<Unroll> &pieces, int tile, int round) {
    const bf16 *lo, *hi;
    rows_of(tile, g, lo, hi);
    const uint4 *lo4 = reinterpret_cast<const uint4 *>(lo), *hi4 = reinterpret_cast<const uint4 *>(hi);
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int c = (round * Unroll + u) * warps + warp;
      const bool in = c < chunks;
      pieces.lo[u] = in ? load_streaming(lo4 + c * 4 + t) : make_uint4(0, 0, 0, 0);
      pieces.hi[u] = in ? load_streaming(hi4 + c * 4 + t) : make_uint4(0, 0, 0, 0);
    }
  };
  float acc[Tiles][4] = {};
  WeightPieces<Unroll> held, next;
  int tile = blockIdx.x, round = 0;
  // The round after (tile, round): the next of this tile, or the first of the block's next tile.
  int next_tile, next_round;
  auto advance = [&] {
    next_tile = tile;
    next_round = round + 1;
    if (next_round == rounds) {
      next_round = 0;
      next_tile += gridDim.x;
    }
  };
  arch::allow_dependent_launch();
  if (tile < tiles) load(held, tile, 0);
  advance();
  bool next_issued = next_tile < tiles;
  if (next_issued) load(next, next_tile, next_round);
  arch::wait_for_prerequisite_grids();
  const Rows x = inputs();
  while (tile < tiles) {
    if (!next_issued && next_tile < tiles) load(next, next_tile, next_round);
    next_issued = false;
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int c = (round * Unroll + u) * warps + warp;
      if (c < chunks) {
#pragma unroll
        for (int j = 0; j < Tiles; ++j) {
          const int r = j * 8 + g;
          const uint4 b = r < R ? x.load(r, c * 4 + t) : make_uint4(0, 0, 0, 0);
          mma_bf16(acc[j], held.lo[u].x, held.hi[u].x, held.lo[u].y, held.hi[u].y, b.x, b.y);
          mma_bf16(acc[j], held.lo[u].z, held.hi[u].z, held.lo[u].w, held.hi[u].w, b.z, b.w);
        }
      }
    }
    if (next_round == 0) {
      reduce_tile<Tiles, Warps>(acc, R,
                                [&](int group, int r, float lo, float hi) { epilogue(tile, group, r, lo, hi); });
#pragma unroll
      for (int j = 0; j < Tiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    }
    held = next;
    tile = next_tile;
    round = next_round;
    advance();
  }
}

/// Row `row` of a [rows, K] matrix, or its last row for tile rows past the end: read in bounds, and
/// their sums are never written.
__device__ __forceinline__ const bf16 *row_in(const bf16 *W, long long row, long long rows, int K) {
  return W + min(row, rows - 1) * K;
}

template <int Tiles>
__device__ __forceinline__ void qkv_rope_tc(const float *x, const bf16 *norm, float eps, const bf16 *wq,
                                            const bf16 *wk, const bf16 *wv, const float2 *rope, const int *row_pos,
                                            const int *row_slot, bf16 *q_out, bf16 *k_cache, bf16 *v_cache, int H,
                                            int NQ, int NKV, int D, int maxSeq, int R) {
  const int half = D / 2;
  const int per_head = half / 8;  // tiles of a head: 8 rotation pairs each
  const int tiles = (NQ + 2 * NKV) * per_head;
  // Tile row j: rotation pair i0 + j % 8, its first half for j < 8, its second for j >= 8.
  auto row_of = [&](int tile, int j) {
    const int head = tile / per_head, i = (tile - head * per_head) * 8 + j % 8 + (j < 8 ? 0 : half);
    const bf16 *base = head < NQ ? wq + (long long)head * D * H
                       : head < NQ + NKV ? wk + (long long)(head - NQ) * D * H
                                         : wv + (long long)(head - NQ - NKV) * D * H;
    return base + (long long)i * H;
  };
  stream_tiles<Tiles, kQkvWarps>(
      tiles, H, R, [&] { return stage_rows<Tiles * 8>(x, norm, eps, H, R); },
      [&](int tile, int group, const bf16 *&lo, const bf16 *&hi) {
        lo = row_of(tile, group);
        hi = row_of(tile, group + 8);
      },
      [&](int tile, int group, int r, float a, float b) {
        const int head = tile / per_head, i = (tile - head * per_head) * 8 + group;
        const int pos = row_pos[r];
        if (head < NQ + NKV) {
          const float2 cs = rope[(long long)min(pos, maxSeq - 1) * half + i];
          const float ra = a * cs.x - b * cs.y, rb = b * cs.x + a * cs.y;
          a = ra;
          b = rb;
        }
        if (head < NQ) {
          bf16 *q = q_out + ((long long)r * NQ + head) * D;
          q[i] = __float2bfloat16_rn(a);
          q[i + half] = __float2bfloat16_rn(b);
        } else if (pos < maxSeq) {
          const bool is_k = head < NQ + NKV;
          const int kv_head = is_k ? head - NQ : head - NQ - NKV;
          bf16 *cache = (is_k ? k_cache : v_cache) + cache_index(row_slot[r], kv_head, pos, 0, NKV, maxSeq, D);
          cache[i] = __float2bfloat16_rn(a);
          cache[i + half] = __float2bfloat16_rn(b);
        }
      });
}

template <int Tiles>
__device__ __forceinline__ void residual_tc(const bf16 *in, const bf16 *W, float *x, int N, int K, int R) {
  stream_tiles<Tiles, kResidualWarps>(
      (N + 15) / 16, K, R, [&] { return Rows{reinterpret_cast<const uint4 *>(in), K / kVector, false}; },
      [&](int tile, int group, const bf16 *&lo, const bf16 *&hi) {
        lo = row_in(W, tile * 16LL + group, N, K);
        hi = row_in(W, tile * 16LL + group + 8, N, K);
      },
      [&](int tile, int group, int r, float lo, float hi) {
        const long long n0 = tile * 16LL;
        if (n0 + group < N) x[(long long)r * N + n0 + group] += lo;
        if (n0 + group + 8 < N) x[(long long)r * N + n0 + group + 8] += hi;
      });
}

template <int Tiles>
__device__ __forceinline__ void gate_up_tc(const float *x, const bf16 *norm, float eps, const bf16 *wg, const bf16 *wu,
                                           bf16 *h, int H, int I, int R) {
  stream_tiles<Tiles, kGateUpWarps>(
      (I + 7) / 8, H, R, [&] { return stage_rows<Tiles * 8>(x, norm, eps, H, R); },
      [&](int tile, int group, const bf16 *&gate, const bf16 *&up) {
        gate = row_in(wg, tile * 8LL + group, I, H);
        up = row_in(wu, tile * 8LL + group, I, H);
      },
      [&](int tile, int group, int r, float gate, float up) {
        const long long i = tile * 8LL + group;
        if (i < I) h[(long long)r * I + i] = __float2bfloat16_rn(gate / (1.0f + __expf(-gate)) * up);
      });
}

template <int Tiles>
__device__ __forceinline__ void lm_head_tc(const float *x, const bf16 *norm, float eps, const bf16 *W, float *logits,
                                           int V, int H, int R) {
  stream_tiles<Tiles, kLmHeadWarps>(
      (V + 15) / 16, H, R, [&] { return stage_rows<Tiles * 8>(x, norm, eps, H, R); },
      [&](int tile, int group, const bf16 *&lo, const bf16 *&hi) {
        lo = row_in(W, tile * 16LL + group, V, H);
        hi = row_in(W, tile * 16LL + group + 8, V, H);
      },
      [&](int tile, int group, int r, float lo, float hi) {
        const long long v0 = tile * 16LL;
        if (v0 + group < V) logits[(long long)r * V + v0 + group] = lo;
        if (v0 + group + 8 < V) logits[(long long)r * V + v0 + group + 8] = hi;
      });
}

}  // namespace llm
}  // namespace cg4j
