// cudagraph4j kernels: choosing each row's next token on the device, for org.cudagraph4j.llm.
//
// Two kernels. sample_partial splits a row's logits into chunks of 2048: a greedy row keeps each
// chunk's largest logit (the smallest index among equals, as torch.argmax), a sampled row sorts the
// chunk (bitonic, in shared memory) and keeps its 64 largest. sample_finish merges a row's chunks:
// greedy takes the largest; sampling sorts the candidates, applies the temperature, keeps the top_k
// (1..64) and then the smallest prefix whose probability reaches top_p (as transformers'
// TopKLogitsWarper then TopPLogitsWarper do), and draws with a counter-based generator keyed by the
// row's seed and its token count, so a seeded run repeats exactly. It then records the token: in the
// row's pinned host stream (count published after the token, fenced for the host), as the row's
// next input, one position on, and ends the row on a stop token or its token limit, decrementing
// the count of rows still active, which a WHILE loop's condition reads.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "decoder.cuh"

namespace cg4j {
namespace llm {

constexpr int kChunk = 2048;
constexpr int kCandidates = 64;
constexpr int kSampleThreads = 1024;
constexpr int kMaxChunks = 64;  ///< vocabularies up to 131072 tokens

/// A row samples (rather than taking the most likely token) at a positive temperature and top_k > 1.
__device__ __forceinline__ bool is_greedy(float temperature, int top_k) { return !(temperature > 0.0f) || top_k == 1; }

/// a ranks before b: a larger logit, or an equal one with a smaller index.
__device__ __forceinline__ bool before(float av, int ai, float bv, int bi) { return av > bv || (av == bv && ai < bi); }

/// Sorts n (a power of two) (value, index) pairs in shared memory into rank order.
__device__ __forceinline__ void bitonic_sort(float *val, int *idx, int n) {
  for (int k = 2; k <= n; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const int ixj = i ^ j;
        if (ixj > i) {
          const bool forward = (i & k) == 0;
          if (forward == before(val[ixj], idx[ixj], val[i], idx[i])) {
            const float tv = val[i];
            val[i] = val[ixj];
            val[ixj] = tv;
            const int ti = idx[i];
            idx[i] = idx[ixj];
            idx[ixj] = ti;
          }
        }
      }
      __syncthreads();
    }
  }
}

/// The best (value, index) of the block, valid in thread 0.
__device__ __forceinline__ void block_best(float &v, int &i) {
  __shared__ float wv[32];
  __shared__ int wi[32];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, i, offset);
    if (before(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  if (lane == 0) {
    wv[warp] = v;
    wi[warp] = i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x / 32); ++w)
      if (before(wv[w], wi[w], v, i)) {
        v = wv[w];
        i = wi[w];
      }
  }
}

/// A logit as ranked: NaN ranks last, as -infinity.
__device__ __forceinline__ float rank_value(float v) { return v == v ? v : -INFINITY; }

__device__ __forceinline__ void sample_partial(const float *logits, int V, const float *temperature, const int *top_k,
                                               int first_row, float *cand_val, int *cand_idx, int chunks) {
  __shared__ float val[kChunk];
  __shared__ int idx[kChunk];
  const int c = blockIdx.x, r = blockIdx.y, row = first_row + r;
  const float *row_logits = logits + (long long)r * V;
  const int begin = c * kChunk;
  const long long out = ((long long)r * chunks + c) * kCandidates;
  if (is_greedy(temperature[row], top_k[row])) {
    float best = -INFINITY;
    int best_index = INT32_MAX;
    for (int i = begin + threadIdx.x; i < min(V, begin + kChunk); i += blockDim.x) {
      const float v = rank_value(row_logits[i]);
      if (before(v, i, best, best_index)) {
        best = v;
        best_index = i;
      }
    }
    block_best(best, best_index);
    if (threadIdx.x == 0) {
      cand_val[out] = best;
      cand_idx[out] = best_index;
    }
    return;
  }
  for (int i = threadIdx.x; i < kChunk; i += blockDim.x) {
    const int token = begin + i;
    val[i] = token < V ? rank_value(row_logits[token]) : -INFINITY;
    idx[i] = token < V ? token : INT32_MAX;
  }
  __syncthreads();
  bitonic_sort(val, idx, kChunk);
  for (int i = threadIdx.x; i < kCandidates; i += blockDim.x) {
    cand_val[out + i] = val[i];
    cand_idx[out + i] = idx[i];
  }
}

/// A uniform float in [0, 1) from (seed, step): SplitMix64's finalizer over a Weyl sequence.
__device__ __forceinline__ float uniform(unsigned long long seed, int step) {
  unsigned long long x = seed + (unsigned long long)(step + 1) * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}

struct RowControl {
  int *token;          ///< the row's next input token
  int *pos;            ///< the position that token takes
  int *generated;      ///< tokens made so far
  const int *max_new;  ///< the row's token limit
  int *done;           ///< 1 once the row has ended
  int *active;         ///< rows not yet ended (one counter for the batch)
  const float *temperature;
  const int *top_k;
  const float *top_p;
  const unsigned long long *seed;
  const int *stop_ids;
  int stop_count;
  int *host_tokens;    ///< pinned host memory [rows][stride]: the tokens made, in order
  int *host_count;     ///< pinned host memory [rows]: how many of them are written
  int stride;
};

__device__ __forceinline__ void sample_finish(const float *cand_val, const int *cand_idx, int chunks, int first_row,
                                              const RowControl &ctl) {
  __shared__ float val[kMaxChunks * kCandidates];
  __shared__ int idx[kMaxChunks * kCandidates];
  const int r = blockIdx.x, row = first_row + r;
  if (ctl.done[row]) return;
  const long long in = (long long)r * chunks * kCandidates;
  int token;
  if (is_greedy(ctl.temperature[row], ctl.top_k[row])) {
    float best = -INFINITY;
    int best_index = INT32_MAX;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
      const float v = cand_val[in + (long long)c * kCandidates];
      const int i = cand_idx[in + (long long)c * kCandidates];
      if (before(v, i, best, best_index)) {
        best = v;
        best_index = i;
      }
    }
    block_best(best, best_index);
    if (threadIdx.x != 0) return;
    token = best_index;
  } else {
    const int n = kMaxChunks * kCandidates;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const bool real = i < chunks * kCandidates;
      val[i] = real ? cand_val[in + i] : -INFINITY;
      idx[i] = real ? cand_idx[in + i] : INT32_MAX;
    }
    __syncthreads();
    bitonic_sort(val, idx, n);
    if (threadIdx.x != 0) return;
    const int k = min(ctl.top_k[row], kCandidates);
    const float inv_t = 1.0f / ctl.temperature[row];
    float total = 0.0f;
    for (int j = 0; j < k; ++j) total += __expf((val[j] - val[0]) * inv_t);
    // Keep a token while the mass ranked above it is below top_p; the first is always kept.
    const float limit = ctl.top_p[row] * total;
    float kept = 0.0f;
    int keep = 0;
    for (; keep < k; ++keep) {
      if (keep > 0 && !(kept < limit)) break;
      kept += __expf((val[keep] - val[0]) * inv_t);
    }
    const float target = uniform(ctl.seed[row], ctl.generated[row]) * kept;
    float cumulative = 0.0f;
    token = idx[keep - 1];
    for (int j = 0; j < keep; ++j) {
      cumulative += __expf((val[j] - val[0]) * inv_t);
      if (target < cumulative) {
        token = idx[j];
        break;
      }
    }
  }
  const int g = ctl.generated[row];
  ctl.host_tokens[(long long)row * ctl.stride + g] = token;
  __threadfence_system();
  reinterpret_cast<volatile int *>(ctl.host_count)[row] = g + 1;
  ctl.generated[row] = g + 1;
  ctl.token[row] = token;
  ctl.pos[row] += 1;
  bool stop = g + 1 >= ctl.max_new[row];
  for (int s = 0; s < ctl.stop_count; ++s) stop |= ctl.stop_ids[s] == token;
  if (stop) {
    ctl.done[row] = 1;
    atomicSub(ctl.active, 1);
  }
}

}  // namespace llm
}  // namespace cg4j
