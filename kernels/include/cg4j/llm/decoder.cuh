// cudagraph4j kernels: what the Llama decoder's kernels share, for org.cudagraph4j.llm: BF16
// widening, warp reductions, streaming weight loads, the rows of x a
// projection multiplies and their RMSNorm staging, and the KV cache's layout. A step takes R rows
// (tokens), each with its position and its KV-cache slot; decoding B sequences is R = B rows,
// prefill is up to 16 consecutive rows of one sequence.
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

constexpr int kVector = 8;  ///< BF16 elements per 16-byte load

/// The low and high BF16 of a 32-bit pair, widened exactly (a BF16 is the top half of an FP32).
__device__ __forceinline__ float low_bf16(unsigned pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float high_bf16(unsigned pair) { return __uint_as_float(pair & 0xffff0000u); }

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
  for (int r = warp; r < R; r += blockDim.x / 32) {
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

/// The KV-cache index of (slot, kv head, position, element) in a [slots][NKV][maxSeq][D] layer.
__device__ __forceinline__ long long cache_index(int slot, int kv_head, int pos, int i, int NKV, int maxSeq, int D) {
  return (((long long)slot * NKV + kv_head) * maxSeq + pos) * D + i;
}

}  // namespace llm
}  // namespace cg4j
