// cudagraph4j kernels: the decoder's projections for a single row (batch-1 decode), one warp per
// output feature (or per pair of features that share an epilogue: the two halves a RoPE rotation
// mixes, a gate row and its up row). A warp streams its weight rows 16 bytes a lane, four loads of a
// row in flight (two of each of a pair), and sums exact FP32 products; blocks of 16 warps, at most two
// per SM, walk the features with a stride, so that a block normalizes x once. At one row this reads
// each weight row as one contiguous 4 to 16 KB stream, which the H200 served faster than the tensor-
// core tiles' 64-byte pieces of 16 rows at a time (0.97 against 1.20 ms a step for Llama 3.2 1B).
#pragma once

#include "decoder.cuh"

namespace cg4j {
namespace llm {

constexpr int kSimtWarps = 16;                  ///< warps of a single-row projection block
constexpr int kSimtThreads = 32 * kSimtWarps;

__device__ __forceinline__ float dot8(uint4 w, uint4 x, float sum) {
  sum = fmaf(low_bf16(w.x), low_bf16(x.x), sum);
  sum = fmaf(high_bf16(w.x), high_bf16(x.x), sum);
  sum = fmaf(low_bf16(w.y), low_bf16(x.y), sum);
  sum = fmaf(high_bf16(w.y), high_bf16(x.y), sum);
  sum = fmaf(low_bf16(w.z), low_bf16(x.z), sum);
  sum = fmaf(high_bf16(w.z), high_bf16(x.z), sum);
  sum = fmaf(low_bf16(w.w), low_bf16(x.w), sum);
  sum = fmaf(high_bf16(w.w), high_bf16(x.w), sum);
  return sum;
}

/// The dot products of Rows (1 or 2) weight rows with each of the R <= MaxR input rows, summed
/// across the warp: every lane returns every sum. Unroll loads of each weight row are issued before
/// any is used, so that a warp keeps Rows * Unroll * 512 bytes in flight.
template <int MaxR, int Rows>
__device__ __forceinline__ void warp_dots(const uint4 *const (&w)[Rows], const cg4j::llm::Rows &in, int K, int R,
                                          float (&acc)[Rows][MaxR]) {
  const int vectors = K / kVector;
  constexpr int Unroll = Rows == 1 ? 4 : 2;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < Rows; ++j)
#pragma unroll
    for (int r = 0; r < MaxR; ++r) acc[j][r] = 0.0f;
  for (int v0 = lane; v0 < vectors; v0 += 32 * Unroll) {
    uint4 wv[Rows][Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int v = v0 + 32 * u;
#pragma unroll
      for (int j = 0; j < Rows; ++j) wv[j][u] = v < vectors ? load_streaming(w[j] + v) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const int v = v0 + 32 * u;
      if (v < vectors) {
#pragma unroll
        for (int r = 0; r < MaxR; ++r) {
          if (r < R) {
            const uint4 x = in.load(r, v);
#pragma unroll
            for (int j = 0; j < Rows; ++j) acc[j][r] = dot8(wv[j][u], x, acc[j][r]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < Rows; ++j)
#pragma unroll
    for (int r = 0; r < MaxR; ++r)
      if (r < R) acc[j][r] = warp_sum(acc[j][r]);
}

/// Where a projection warp starts and how far it strides over the features.
__device__ __forceinline__ int first_unit() { return blockIdx.x * kSimtWarps + threadIdx.x / 32; }
__device__ __forceinline__ int unit_stride() { return gridDim.x * kSimtWarps; }

/// QKV projection of the normalized rows, RoPE on q and k, and k, v written into the cache at each
/// row's position. A unit is one rotation pair (i, i + D/2) of one head of [q heads; k heads; v
/// heads]; v pairs are not rotated. rope holds (cos, sin) of position p and frequency i at
/// p * D/2 + i. A row whose position has reached maxSeq (a finished sequence still carried by a
/// batch) writes nothing into the cache.
template <int MaxR>
__device__ __forceinline__ void qkv_rope(const float *x, const bf16 *norm, float eps, const bf16 *wq, const bf16 *wk,
                                         const bf16 *wv, const float2 *rope, const int *row_pos, const int *row_slot,
                                         bf16 *q_out, bf16 *k_cache, bf16 *v_cache, int H, int NQ, int NKV, int D,
                                         int maxSeq, int R) {
  const int half = D / 2;
  const int units = (NQ + 2 * NKV) * half;
  const Rows in = stage_rows<MaxR>(x, norm, eps, H, R);
  const int lane = threadIdx.x & 31;
  for (int u = first_unit(); u < units; u += unit_stride()) {
    const int head = u / half, i = u - head * half;
    const bf16 *base = head < NQ ? wq + (long long)head * D * H
                       : head < NQ + NKV ? wk + (long long)(head - NQ) * D * H
                                         : wv + (long long)(head - NQ - NKV) * D * H;
    const uint4 *w[2] = {reinterpret_cast<const uint4 *>(base + (long long)i * H),
                         reinterpret_cast<const uint4 *>(base + (long long)(i + half) * H)};
    float acc[2][MaxR];
    warp_dots<MaxR, 2>(w, in, H, R, acc);
#pragma unroll
    for (int r = 0; r < MaxR; ++r) {
      if (r < R && lane == r % 32) {
        const int pos = row_pos[r];
        float a = acc[0][r], b = acc[1][r];
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
      }
    }
  }
}

/// x[r, n] += sum_k W[n, k] in[r, k]: the output and down projections, added into the FP32
/// residual stream.
template <int MaxR>
__device__ __forceinline__ void residual(const bf16 *in, const bf16 *W, float *x, int N, int K, int R) {
  const Rows input{reinterpret_cast<const uint4 *>(in), K / kVector, false};
  const int lane = threadIdx.x & 31;
  for (int n = first_unit(); n < N; n += unit_stride()) {
    const uint4 *w[1] = {reinterpret_cast<const uint4 *>(W + (long long)n * K)};
    float acc[1][MaxR];
    warp_dots<MaxR, 1>(w, input, K, R, acc);
#pragma unroll
    for (int r = 0; r < MaxR; ++r)
      if (r < R && lane == r % 32) x[(long long)r * N + n] += acc[0][r];
  }
}

/// h[r, i] = silu(gate_i . n_r) * (up_i . n_r) for the normalized rows n_r: one warp reads a gate
/// row and its up row.
template <int MaxR>
__device__ __forceinline__ void gate_up(const float *x, const bf16 *norm, float eps, const bf16 *wg, const bf16 *wu,
                                        bf16 *h, int H, int I, int R) {
  const Rows in = stage_rows<MaxR>(x, norm, eps, H, R);
  const int lane = threadIdx.x & 31;
  for (int i = first_unit(); i < I; i += unit_stride()) {
    const uint4 *w[2] = {reinterpret_cast<const uint4 *>(wg + (long long)i * H),
                         reinterpret_cast<const uint4 *>(wu + (long long)i * H)};
    float acc[2][MaxR];
    warp_dots<MaxR, 2>(w, in, H, R, acc);
#pragma unroll
    for (int r = 0; r < MaxR; ++r) {
      if (r < R && lane == r % 32) {
        const float g = acc[0][r];
        h[(long long)r * I + i] = __float2bfloat16_rn(g / (1.0f + __expf(-g)) * acc[1][r]);
      }
    }
  }
}

/// logits[r, v] = W[v] . rmsnorm(x[r]) * norm, in FP32.
template <int MaxR>
__device__ __forceinline__ void lm_head(const float *x, const bf16 *norm, float eps, const bf16 *W, float *logits,
                                        int V, int H, int R) {
  const Rows in = stage_rows<MaxR>(x, norm, eps, H, R);
  const int lane = threadIdx.x & 31;
  for (int v = first_unit(); v < V; v += unit_stride()) {
    const uint4 *w[1] = {reinterpret_cast<const uint4 *>(W + (long long)v * H)};
    float acc[1][MaxR];
    warp_dots<MaxR, 1>(w, in, H, R, acc);
#pragma unroll
    for (int r = 0; r < MaxR; ++r)
      if (r < R && lane == r % 32) logits[(long long)r * V + v] = acc[0][r];
  }
}

}  // namespace llm
}  // namespace cg4j
