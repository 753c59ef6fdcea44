// cudagraph4j kernels: the pieces of a Llama-architecture decoder step in BF16, for
// org.cudagraph4j.llm. A step takes R rows (tokens), each with its position and its KV-cache slot;
// decoding B sequences is R = B rows, prefill is R consecutive rows of one sequence.
//
// At batch 1 a step is the read of every weight once (2.47 GB for Llama 3.2 1B), so the projections
// are GEMVs built for bandwidth: one warp per output feature (or per pair of features that share an
// epilogue: the two halves a RoPE rotation mixes, a gate row and its up row), 16-byte weight loads
// marked streaming (read once, evict first), products summed in FP32. The kernels are persistent
// (the grid is a few blocks per SM, each warp walks the features with a stride), so that the RMSNorm
// folded into a projection is computed once per block rather than once per feature.
//
// Numerics: the residual stream is FP32; every projection input is BF16 (the normalized activations
// are rounded once to BF16 after the norm weight, as transformers rounds them), products are exact
// in FP32 and summed there, RoPE, softmax and SiLU run in FP32, and each BF16 output is rounded once
// to nearest even.
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

namespace cg4j {
namespace llm {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8;                ///< warps of a projection block
constexpr int kThreads = 32 * kWarps;    ///< threads of a projection block
constexpr int kVector = 8;               ///< BF16 elements per 16-byte load

/// The low and high BF16 of a 32-bit pair, widened exactly (a BF16 is the top half of an FP32).
__device__ __forceinline__ float low_bf16(unsigned pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float high_bf16(unsigned pair) { return __uint_as_float(pair & 0xffff0000u); }

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

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Programmatic dependent launch (sm_90 on): each kernel, launched with the programmatic-serialization
/// attribute, waits for the kernel before it to complete and flush before it reads or writes anything,
/// then lets the next one launch, so that the next one's launch and block scheduling overlap this one's
/// work rather than follow it. Triggering only after the wait keeps at most one kernel waiting ahead.
/// Before sm_90 both are no-ops and the launches are serialized as usual.
__device__ __forceinline__ void launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_prerequisites() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// A weight load that bypasses L1 and is evicted from L2 first: each weight is read once per step.
__device__ __forceinline__ uint4 load_streaming(const uint4 *p) { return __ldcs(p); }

/// The rows of x a projection multiplies: R rows of K BF16 values at a stride of `stride` 16-byte
/// vectors, in shared memory (padded by one vector a row, so the eight rows a warp reads at once fall
/// in different banks) or in global memory.
struct Rows {
  const uint4 *base;
  int stride;
  bool shared;
  __device__ __forceinline__ uint4 load(int r, int v) const {
    const uint4 *p = base + (long long)r * stride + v;
    return shared ? *p : __ldg(p);
  }
};

/// Stages rmsnorm(x[r]) * weight for R rows of the FP32 residual stream x [R, H] in shared memory
/// as BF16, rounded once after the weight, at a stride padded by one 16-byte vector a row (so the
/// eight rows a warp reads at once fall in different banks). A warp sums a row's squares; then every
/// thread normalizes 4 values at a time. Loads are 16 bytes and unrolled, so that the L2 latency of x
/// is paid a few times per block, not once per element. Needs R * (H + 8) * 2 bytes of dynamic
/// shared memory; H % 4 == 0 and x 16-byte aligned.
template <int MaxR>
__device__ __forceinline__ Rows stage_rows(const float *x, const bf16 *weight, float eps, int H, int R) {
  extern __shared__ uint4 staged[];
  __shared__ float inv_rms[MaxR];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int quads = H / 4;
  const float4 *x4 = reinterpret_cast<const float4 *>(x);
  for (int r = warp; r < R; r += kWarps) {
    float s = 0.0f;
#pragma unroll 4
    for (int i = lane; i < quads; i += 32) {
      const float4 v = x4[(long long)r * quads + i];
      s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    s = warp_sum(s);
    if (lane == 0) inv_rms[r] = rsqrtf(s / H + eps);
  }
  __syncthreads();
  const int stride = H / kVector + 1;
  const uint2 *w4 = reinterpret_cast<const uint2 *>(weight);
  uint2 *out = reinterpret_cast<uint2 *>(staged);
#pragma unroll 4
  for (int idx = threadIdx.x; idx < R * quads; idx += blockDim.x) {
    const int r = idx / quads, q = idx - r * quads;
    const float4 v = x4[idx];
    const uint2 w = __ldg(w4 + q);
    const float inv = inv_rms[r];
    const __nv_bfloat162 a = __floats2bfloat162_rn(v.x * inv * low_bf16(w.x), v.y * inv * high_bf16(w.x));
    const __nv_bfloat162 b = __floats2bfloat162_rn(v.z * inv * low_bf16(w.y), v.w * inv * high_bf16(w.y));
    out[(long long)r * stride * 2 + q] = make_uint2(*reinterpret_cast<const unsigned *>(&a),
                                                    *reinterpret_cast<const unsigned *>(&b));
  }
  __syncthreads();
  return Rows{staged, stride, true};
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
__device__ __forceinline__ int first_unit() { return blockIdx.x * kWarps + threadIdx.x / 32; }
__device__ __forceinline__ int unit_stride() { return gridDim.x * kWarps; }

/// The KV-cache index of (slot, kv head, position, element) in a [slots][NKV][maxSeq][D] layer.
__device__ __forceinline__ long long cache_index(int slot, int kv_head, int pos, int i, int NKV, int maxSeq, int D) {
  return (((long long)slot * NKV + kv_head) * maxSeq + pos) * D + i;
}

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
  wait_for_prerequisites();
  launch_dependents();
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
  wait_for_prerequisites();
  launch_dependents();
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
  wait_for_prerequisites();
  launch_dependents();
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
  wait_for_prerequisites();
  launch_dependents();
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
