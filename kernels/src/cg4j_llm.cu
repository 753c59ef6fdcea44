// cudagraph4j kernels: the Llama decoder's extern "C" entry points, for org.cudagraph4j.llm
// (DecoderKernels). The projections come in two row capacities (r8, r16: the most rows a launch
// takes), each launched with its own block (tensor_gemv.cuh's kQkvWarps and the rest) and
// R * (H + 8) * 2 bytes of dynamic shared memory where they normalize; see kernels/README.md for the
// launch shapes. Every kernel may be launched with programmatic dependent launch: the projections
// start on their weights before they wait for the previous kernel (tensor_gemv.cuh), the others wait
// first (begin_dependent).
#include "cg4j/llm/attention.cuh"
#include "cg4j/llm/sampling.cuh"
#include "cg4j/llm/tensor_gemv.cuh"

using cg4j::llm::bf16;

/// Lets the next kernel launch, then waits until the previous one has completed: for kernels whose
/// every read depends on the step.
__device__ __forceinline__ void begin_dependent() {
  cg4j::arch::allow_dependent_launch();
  cg4j::arch::wait_for_prerequisite_grids();
}

/// x[r, :] = embedding[token[r], :] as FP32, one block per row.
extern "C" __global__ void cg4j_llm_embed(const bf16 *table, const int *row_token, float *x, int H) {
  begin_dependent();
  const int r = blockIdx.x;
  const bf16 *row = table + (long long)row_token[r] * H;
  for (int i = threadIdx.x; i < H; i += blockDim.x) x[(long long)r * H + i] = __bfloat162float(row[i]);
}

/// A projection's launch bounds: 32 * WARPS threads, and blocks enough for 1024 threads an SM, so
/// that each thread keeps at most 64 registers.
#define CG4J_LLM_BOUNDS(WARPS) __launch_bounds__(32 * (WARPS), 32 / (WARPS))

#define CG4J_LLM_TENSOR_PROJECTIONS(R, TILES)                                                                         \
  extern "C" __global__ void CG4J_LLM_BOUNDS(cg4j::llm::kQkvWarps) cg4j_llm_qkv_rope_mma_r##R(                         \
      const float *x, const bf16 *norm, float eps, const bf16 *wq, const bf16 *wk, const bf16 *wv, const float2 *rope, \
      const int *row_pos, const int *row_slot, bf16 *q, bf16 *k_cache, bf16 *v_cache, int H, int NQ, int NKV, int D,  \
      int maxSeq, int rows) {                                                                                         \
    cg4j::llm::qkv_rope_tc<TILES>(x, norm, eps, wq, wk, wv, rope, row_pos, row_slot, q, k_cache, v_cache, H, NQ, NKV, \
                                  D, maxSeq, rows);                                                                   \
  }                                                                                                                   \
  extern "C" __global__ void CG4J_LLM_BOUNDS(cg4j::llm::kResidualWarps) cg4j_llm_residual_mma_r##R(                    \
      const bf16 *in, const bf16 *w, float *x, int N, int K, int rows) {                                              \
    cg4j::llm::residual_tc<TILES>(in, w, x, N, K, rows);                                                              \
  }                                                                                                                   \
  extern "C" __global__ void CG4J_LLM_BOUNDS(cg4j::llm::kGateUpWarps) cg4j_llm_gate_up_mma_r##R(                       \
      const float *x, const bf16 *norm, float eps, const bf16 *wg, const bf16 *wu, bf16 *h, int H, int I, int rows) {  \
    cg4j::llm::gate_up_tc<TILES>(x, norm, eps, wg, wu, h, H, I, rows);                                                \
  }                                                                                                                   \
  extern "C" __global__ void CG4J_LLM_BOUNDS(cg4j::llm::kLmHeadWarps) cg4j_llm_lm_head_mma_r##R(                       \
      const float *x, const bf16 *norm, float eps, const bf16 *w, float *logits, int V, int H, int rows) {            \
    cg4j::llm::lm_head_tc<TILES>(x, norm, eps, w, logits, V, H, rows);                                                \
  }

CG4J_LLM_TENSOR_PROJECTIONS(8, 1)
CG4J_LLM_TENSOR_PROJECTIONS(16, 2)

#define CG4J_LLM_ATTENTION(D)                                                                                         \
  extern "C" __global__ void __launch_bounds__(cg4j::llm::kAttentionThreads) cg4j_llm_attention_d##D(               \
      const bf16 *q, const bf16 *k_cache, const bf16 *v_cache, const int *row_pos, const int *row_slot, bf16 *out,    \
      int NQ, int NKV, int maxSeq, float scale) {                                                                    \
    begin_dependent();                                                                                              \
    cg4j::llm::attention<D>(q, k_cache, v_cache, row_pos, row_slot, out, NQ, NKV, maxSeq, scale);                    \
  }

CG4J_LLM_ATTENTION(64)
CG4J_LLM_ATTENTION(128)

/// Grid (chunks, rows), cg4j::llm::kSampleThreads threads.
extern "C" __global__ void __launch_bounds__(cg4j::llm::kSampleThreads)
    cg4j_llm_sample_partial(const float *logits, int V, const float *temperature, const int *top_k, int first_row,
                            float *cand_val, int *cand_idx, int chunks) {
  begin_dependent();
  cg4j::llm::sample_partial(logits, V, temperature, top_k, first_row, cand_val, cand_idx, chunks);
}

/// Grid (rows), cg4j::llm::kSampleThreads threads.
extern "C" __global__ void __launch_bounds__(cg4j::llm::kSampleThreads) cg4j_llm_sample_finish(
    const float *cand_val, const int *cand_idx, int chunks, int first_row, int *token, int *pos, int *generated,
    const int *max_new, int *done, int *active, const float *temperature, const int *top_k, const float *top_p,
    const unsigned long long *seed, const int *stop_ids, int stop_count, int *host_tokens, int *host_count,
    int stride) {
  begin_dependent();
  const cg4j::llm::RowControl control{token,    pos,   generated, max_new,  done,        active,     temperature, top_k,
                                      top_p,    seed,  stop_ids,  stop_count, host_tokens, host_count, stride};
  cg4j::llm::sample_finish(cand_val, cand_idx, chunks, first_row, control);
}
