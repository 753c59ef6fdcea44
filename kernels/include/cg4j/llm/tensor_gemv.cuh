// cudagraph4j kernels: the decoder's projections on tensor cores, for up to 16 rows at once.
//
// A block owns a tile of 16 weight rows (features) and its 8 warps split K between them, 32 elements
// a chunk, chunks dealt round-robin; each warp multiplies its chunks with mma.sync.m16n8k16 (BF16 in,
// FP32 accumulate) against the step's rows of x, up to 8 per n8 tile. Because a product's k order is
// free as long as A and B agree, each lane loads 16 contiguous bytes of its two weight rows (g and
// g + 8) and 16 contiguous bytes of its x row (g), and feeds them to two mmas: every load is a 16-byte
// vector, and the weights stream through at the rate of the loads alone, whatever the row count. The
// warps' partial sums meet in shared memory; the tile's 16 rows are chosen so that the epilogue's
// pairs (a RoPE rotation's two halves, a gate row and its up row) land in one thread.
#pragma once

#include "decoder.cuh"

namespace cg4j {
namespace llm {

constexpr int kChunkK = 32;  ///< K elements a warp takes per step: 16 bytes per lane of 4 lanes a row

/// D += A B for one m16n8k16 BF16 product with FP32 accumulation.
__device__ __forceinline__ void mma_bf16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// This warp's share of a 16-row tile times the R rows: chunks warp, warp + 8, ... of K. lo is the
/// weight row of lane group g (lane / 4), hi that of g + 8. acc[t] holds tile t's C fragment: rows
/// (g, g + 8) by x rows (8t + 2 (lane % 4), + 1).
template <int Tiles>
__device__ __forceinline__ void tile_dots(const bf16 *lo, const bf16 *hi, const Rows &x, int K, int R,
                                          float (&acc)[Tiles][4]) {
  constexpr int Unroll = 4;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < Tiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  const uint4 *lo4 = reinterpret_cast<const uint4 *>(lo);
  const uint4 *hi4 = reinterpret_cast<const uint4 *>(hi);
  const int chunks = K / kChunkK;
  for (int c0 = warp; c0 < chunks; c0 += kWarps * Unroll) {
    uint4 a_lo[Unroll], a_hi[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int c = c0 + u * kWarps;
      const bool in = c < chunks;
      a_lo[u] = in ? load_streaming(lo4 + c * 4 + t) : make_uint4(0, 0, 0, 0);
      a_hi[u] = in ? load_streaming(hi4 + c * 4 + t) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int c = c0 + u * kWarps;
      if (c < chunks) {
#pragma unroll
        for (int j = 0; j < Tiles; ++j) {
          const int r = j * 8 + g;
          const uint4 b = r < R ? x.load(r, c * 4 + t) : make_uint4(0, 0, 0, 0);
          mma_bf16(acc[j], a_lo[u].x, a_hi[u].x, a_lo[u].y, a_hi[u].y, b.x, b.y);
          mma_bf16(acc[j], a_lo[u].z, a_hi[u].z, a_lo[u].w, a_hi[u].w, b.z, b.w);
        }
      }
    }
  }
}

/// Sums the 8 warps' fragments in shared memory and calls epilogue(g, r, lo_sum, hi_sum) for every
/// lane group g < 8 and row r < R (by 8 * R threads), then syncs so the buffer can be reused.
template <int Tiles, class Epilogue>
__device__ __forceinline__ void reduce_tile(const float (&acc)[Tiles][4], int R, Epilogue epilogue) {
  __shared__ float partial[kWarps][16][Tiles * 8];
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
    for (int w = 0; w < kWarps; ++w) {
      lo += partial[w][group][r];
      hi += partial[w][group + 8][r];
    }
    epilogue(group, r, lo, hi);
  }
  __syncthreads();
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
  const int g = (threadIdx.x & 31) >> 2;
  // Tile row j: rotation pair i0 + j % 8, its first half for j < 8, its second for j >= 8.
  auto row_of = [&](int tile, int j) {
    const int head = tile / per_head, i = (tile - head * per_head) * 8 + j % 8 + (j < 8 ? 0 : half);
    const bf16 *base = head < NQ ? wq + (long long)head * D * H
                       : head < NQ + NKV ? wk + (long long)(head - NQ) * D * H
                                         : wv + (long long)(head - NQ - NKV) * D * H;
    return base + (long long)i * H;
  };
  const Rows in = stage_rows<Tiles * 8>(x, norm, eps, H, R);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    float acc[Tiles][4];
    tile_dots<Tiles>(row_of(tile, g), row_of(tile, g + 8), in, H, R, acc);
    const int head = tile / per_head, i0 = (tile - head * per_head) * 8;
    reduce_tile<Tiles>(acc, R, [&](int group, int r, float a, float b) {
      const int i = i0 + group;
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
}

template <int Tiles>
__device__ __forceinline__ void residual_tc(const bf16 *in, const bf16 *W, float *x, int N, int K, int R) {
  const int tiles = (N + 15) / 16;
  const int g = (threadIdx.x & 31) >> 2;
  const Rows rows{reinterpret_cast<const uint4 *>(in), K / kVector, false};
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const long long n0 = tile * 16LL;
    float acc[Tiles][4];
    tile_dots<Tiles>(row_in(W, n0 + g, N, K), row_in(W, n0 + g + 8, N, K), rows, K, R, acc);
    reduce_tile<Tiles>(acc, R, [&](int group, int r, float lo, float hi) {
      if (n0 + group < N) x[(long long)r * N + n0 + group] += lo;
      if (n0 + group + 8 < N) x[(long long)r * N + n0 + group + 8] += hi;
    });
  }
}

template <int Tiles>
__device__ __forceinline__ void gate_up_tc(const float *x, const bf16 *norm, float eps, const bf16 *wg, const bf16 *wu,
                                           bf16 *h, int H, int I, int R) {
  const int tiles = (I + 7) / 8;
  const int g = (threadIdx.x & 31) >> 2;
  const Rows in = stage_rows<Tiles * 8>(x, norm, eps, H, R);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const long long i0 = tile * 8LL;
    float acc[Tiles][4];
    tile_dots<Tiles>(row_in(wg, i0 + g, I, H), row_in(wu, i0 + g, I, H), in, H, R, acc);
    reduce_tile<Tiles>(acc, R, [&](int group, int r, float gate, float up) {
      if (i0 + group < I) h[(long long)r * I + i0 + group] = __float2bfloat16_rn(gate / (1.0f + __expf(-gate)) * up);
    });
  }
}

template <int Tiles>
__device__ __forceinline__ void lm_head_tc(const float *x, const bf16 *norm, float eps, const bf16 *W, float *logits,
                                           int V, int H, int R) {
  const int tiles = (V + 15) / 16;
  const int g = (threadIdx.x & 31) >> 2;
  const Rows in = stage_rows<Tiles * 8>(x, norm, eps, H, R);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const long long v0 = tile * 16LL;
    float acc[Tiles][4];
    tile_dots<Tiles>(row_in(W, v0 + g, V, H), row_in(W, v0 + g + 8, V, H), in, H, R, acc);
    reduce_tile<Tiles>(acc, R, [&](int group, int r, float lo, float hi) {
      if (v0 + group < V) logits[(long long)r * V + v0 + group] = lo;
      if (v0 + group + 8 < V) logits[(long long)r * V + v0 + group + 8] = hi;
    });
  }
}

}  // namespace llm
}  // namespace cg4j
