// cudagraph4j kernels: decode attention over the KV cache, for org.cudagraph4j.llm. One block of 256
// threads per (query head, row): the row attends to its slot's cached positions 0..pos (its own k and
// v were written by the QKV projection before this kernel runs), with grouped-query attention (query
// head h reads kv head h / (NQ / NKV)). Scores live in dynamic shared memory (4 bytes a position), so
// a context holds at most maxSeq positions; softmax is in FP32 and the output rounded once to BF16.
#pragma once

#include "decoder.cuh"

namespace cg4j {
namespace llm {

constexpr int kAttentionThreads = 256;

template <int D>
__device__ __forceinline__ void attention(const bf16 *q, const bf16 *k_cache, const bf16 *v_cache, const int *row_pos,
                                          const int *row_slot, bf16 *out, int NQ, int NKV, int maxSeq, float scale) {
  extern __shared__ float scores[];
  __shared__ float q_scaled[D];
  __shared__ float reduce[kAttentionThreads / 32];
  constexpr int kSegments = D / kVector;                     ///< 16-byte pieces of a head's row
  constexpr int kParallel = kAttentionThreads / kSegments;   ///< positions summed at once in the V pass
  __shared__ float partial[kParallel][D];

  const int head = blockIdx.x, r = blockIdx.y;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid / 32;
  const int length = min(row_pos[r], maxSeq - 1) + 1;
  const int kv_head = head / (NQ / NKV);
  const long long base = cache_index(row_slot[r], kv_head, 0, 0, NKV, maxSeq, D);
  const uint4 *keys = reinterpret_cast<const uint4 *>(k_cache + base);
  const bf16 *values = v_cache + base;

  const bf16 *q_row = q + ((long long)r * NQ + head) * D;
  for (int i = tid; i < D; i += kAttentionThreads) q_scaled[i] = __bfloat162float(q_row[i]) * scale;
  __syncthreads();

  // Scores, one position per thread: its key row is D * 2 contiguous bytes.
  float local_max = -INFINITY;
#pragma unroll 2
  for (int p = tid; p < length; p += kAttentionThreads) {
    float s = 0.0f;
#pragma unroll
    for (int seg = 0; seg < kSegments; ++seg) {
      const uint4 k = __ldg(keys + (long long)p * kSegments + seg);
      const float *qs = q_scaled + seg * kVector;
      s = fmaf(qs[0], low_bf16(k.x), s);
      s = fmaf(qs[1], high_bf16(k.x), s);
      s = fmaf(qs[2], low_bf16(k.y), s);
      s = fmaf(qs[3], high_bf16(k.y), s);
      s = fmaf(qs[4], low_bf16(k.z), s);
      s = fmaf(qs[5], high_bf16(k.z), s);
      s = fmaf(qs[6], low_bf16(k.w), s);
      s = fmaf(qs[7], high_bf16(k.w), s);
    }
    scores[p] = s;
    local_max = fmaxf(local_max, s);
  }
  local_max = warp_max(local_max);
  if (lane == 0) reduce[warp] = local_max;
  __syncthreads();
  float m = reduce[0];
#pragma unroll
  for (int w = 1; w < kAttentionThreads / 32; ++w) m = fmaxf(m, reduce[w]);
  __syncthreads();

  float local_sum = 0.0f;
  for (int p = tid; p < length; p += kAttentionThreads) {
    const float e = __expf(scores[p] - m);
    scores[p] = e;
    local_sum += e;
  }
  local_sum = warp_sum(local_sum);
  if (lane == 0) reduce[warp] = local_sum;
  __syncthreads();
  float l = 0.0f;
#pragma unroll
  for (int w = 0; w < kAttentionThreads / 32; ++w) l += reduce[w];

  // Weighted values: kSegments threads cover one position's row, kParallel positions at a time.
  const int group = tid / kSegments, seg = tid - group * kSegments;
  float acc[kVector];
#pragma unroll
  for (int e = 0; e < kVector; ++e) acc[e] = 0.0f;
#pragma unroll 8
  for (int p = group; p < length; p += kParallel) {
    const float weight = scores[p];
    const uint4 v = __ldg(reinterpret_cast<const uint4 *>(values + (long long)p * D) + seg);
    acc[0] = fmaf(weight, low_bf16(v.x), acc[0]);
    acc[1] = fmaf(weight, high_bf16(v.x), acc[1]);
    acc[2] = fmaf(weight, low_bf16(v.y), acc[2]);
    acc[3] = fmaf(weight, high_bf16(v.y), acc[3]);
    acc[4] = fmaf(weight, low_bf16(v.z), acc[4]);
    acc[5] = fmaf(weight, high_bf16(v.z), acc[5]);
    acc[6] = fmaf(weight, low_bf16(v.w), acc[6]);
    acc[7] = fmaf(weight, high_bf16(v.w), acc[7]);
  }
#pragma unroll
  for (int e = 0; e < kVector; ++e) partial[group][seg * kVector + e] = acc[e];
  __syncthreads();
  for (int i = tid; i < D; i += kAttentionThreads) {
    float s = 0.0f;
#pragma unroll
    for (int g = 0; g < kParallel; ++g) s += partial[g][i];
    out[((long long)r * NQ + head) * D + i] = __float2bfloat16_rn(s / l);
  }
}

}  // namespace llm
}  // namespace cg4j
