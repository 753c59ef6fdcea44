// The Llama decoder's step, kernel by kernel, on the shipped kernels (kernels/src/cg4j_llm.cu,
// compiled in), without the JVM: where a decode step's time goes.
//
// It builds Llama 3.2 1B's shapes (or those given) with random BF16 weights, a KV cache holding a
// 128-token prompt and every row greedy, and launches the step exactly as DecoderKernels does
// (same kernels, grids, blocks, shared memory and programmatic dependent launch). For 1, 4 and 16
// rows it reports:
//   - the step as one CUDA graph, replayed for 256 tokens (positions 128..383, as LlamaDecode), with
//     programmatic dependent launch and without, side by side;
//   - each kernel's share of an eager step, from events recorded between the launches (plain
//     launches: an event between two kernels serializes them anyway);
//   - each projection alone, its 16 layers' launches back to back in one graph, and the bandwidth
//     that reaches (weights differ per layer, so every launch reads them from memory);
//   - the floor: the bytes a step must read over the read bandwidth measured in this run.
//
// Build: nvcc -O3 -std=c++17 -arch=native -I kernels/include -I kernels/src -o llama_step
//        benchmarks/native/llama_step.cu
// Run:   ./llama_step [--rows 1,4,16] [--layers 16]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cg4j_llm.cu"

namespace {

void check(cudaError_t status, const char *what, int line) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "llama_step: %s failed at line %d: %s\n", what, line, cudaGetErrorString(status));
    std::exit(1);
  }
}
#define CHECK(call) check((call), #call, __LINE__)

struct Shape {
  int layers = 16, hidden = 2048, intermediate = 8192, heads = 32, kv_heads = 8, head_dim = 64;
  int vocab = 128256, max_seq = 512, prompt = 128, steps = 256;
};

/// Fills n BF16 values with a hash of their index, uniform in [-scale, scale] (offset by `bias`).
__global__ void fill_bf16(bf16 *p, long long n, unsigned seed, float scale, float bias) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull + seed;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = __float2bfloat16_rn(bias + scale * ((float)(x >> 40) * (2.0f / 16777216.0f) - 1.0f));
  }
}

/// Device allocations of the Step being measured (one at a time), freed when it goes.
std::vector<void *> allocations;

bf16 *random_bf16(long long n, unsigned seed, float scale, float bias = 0.0f) {
  bf16 *p;
  CHECK(cudaMalloc(&p, n * sizeof(bf16)));
  allocations.push_back(p);
  fill_bf16<<<1024, 256>>>(p, n, seed, scale, bias);
  CHECK(cudaGetLastError());
  return p;
}

template <class T>
T *device_array(long long n) {
  T *p;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  allocations.push_back(p);
  CHECK(cudaMemset(p, 0, n * sizeof(T)));
  return p;
}

struct Layer {
  bf16 *input_norm, *post_norm, *wq, *wk, *wv, *wo, *gate, *up, *down, *k_cache, *v_cache;
};

/// One kernel launch of the step, as DecoderKernels builds it.
struct Launch {
  std::string kind;
  const void *kernel;
  dim3 grid, block;
  size_t shared;
  std::vector<void *> args;
  double bytes;  ///< what it must read from memory, for the bandwidth column
};

class Step {
 public:
  Step(const Shape &s, int rows, int sms) : s_(s), rows_(rows), sms_(sms) {
    const long long H = s.hidden, I = s.intermediate, qd = (long long)s.heads * s.head_dim,
                    kvd = (long long)s.kv_heads * s.head_dim;
    unsigned seed = 1;
    embedding_ = random_bf16((long long)s.vocab * H, seed++, 0.02f);
    final_norm_ = random_bf16(H, seed++, 0.1f, 1.0f);
    for (int l = 0; l < s.layers; ++l) {
      const long long cache = (long long)rows * kvd * s.max_seq;
      layers_.push_back({random_bf16(H, seed++, 0.1f, 1.0f), random_bf16(H, seed++, 0.1f, 1.0f),
                         random_bf16(qd * H, seed++, 0.02f), random_bf16(kvd * H, seed++, 0.02f),
                         random_bf16(kvd * H, seed++, 0.02f), random_bf16(H * qd, seed++, 0.02f),
                         random_bf16(I * H, seed++, 0.02f), random_bf16(I * H, seed++, 0.02f),
                         random_bf16(H * I, seed++, 0.02f), random_bf16(cache, seed++, 1.0f),
                         random_bf16(cache, seed++, 1.0f)});
    }
    const int half = s.head_dim / 2;
    std::vector<float2> rope((size_t)s.max_seq * half);
    for (int p = 0; p < s.max_seq; ++p)
      for (int i = 0; i < half; ++i) {
        const double angle = p * std::pow(500000.0, -2.0 * i / s.head_dim);
        rope[(size_t)p * half + i] = make_float2((float)std::cos(angle), (float)std::sin(angle));
      }
    rope_ = device_array<float2>(rope.size());
    CHECK(cudaMemcpy(rope_, rope.data(), rope.size() * sizeof(float2), cudaMemcpyHostToDevice));
    x_ = device_array<float>((long long)rows * H);
    q_ = device_array<bf16>(rows * qd);
    attn_ = device_array<bf16>(rows * qd);
    h_ = device_array<bf16>(rows * I);
    logits_ = device_array<float>((long long)rows * s.vocab);
    chunks_ = (s.vocab + cg4j::llm::kChunk - 1) / cg4j::llm::kChunk;
    cand_val_ = device_array<float>((long long)rows * chunks_ * cg4j::llm::kCandidates);
    cand_idx_ = device_array<int>((long long)rows * chunks_ * cg4j::llm::kCandidates);
    token_ = device_array<int>(rows);
    pos_ = device_array<int>(rows);
    slot_ = device_array<int>(rows);
    generated_ = device_array<int>(rows);
    max_new_ = device_array<int>(rows);
    done_ = device_array<int>(rows);
    active_ = device_array<int>(1);
    temperature_ = device_array<float>(rows);
    top_k_ = device_array<int>(rows);
    top_p_ = device_array<float>(rows);
    seed_ = device_array<unsigned long long>(rows);
    stop_ = device_array<int>(1);
    stride_ = 4 * s.steps + 64;
    CHECK(cudaHostAlloc(&host_tokens_, sizeof(int) * rows * stride_, cudaHostAllocMapped));
    CHECK(cudaHostAlloc(&host_count_, sizeof(int) * rows, cudaHostAllocMapped));
    std::vector<int> slots(rows), limits(rows, 1 << 30), ks(rows, 1);
    std::vector<float> ps(rows, 1.0f);
    for (int r = 0; r < rows; ++r) slots[r] = r;
    CHECK(cudaMemcpy(slot_, slots.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(max_new_, limits.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(top_k_, ks.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(top_p_, ps.data(), rows * sizeof(float), cudaMemcpyHostToDevice));
    build();
    reset();
  }

  ~Step() {
    for (void *p : allocations) CHECK(cudaFree(p));
    allocations.clear();
    CHECK(cudaFreeHost(host_tokens_));
    CHECK(cudaFreeHost(host_count_));
  }

  /// Positions back to the prompt's end, first tokens spread over the vocabulary, no token made.
  void reset() {
    std::vector<int> pos(rows_, s_.prompt), tokens(rows_);
    for (int r = 0; r < rows_; ++r) tokens[r] = (r * 7919 + 17) % s_.vocab;
    CHECK(cudaMemcpy(pos_, pos.data(), rows_ * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(token_, tokens.data(), rows_ * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(generated_, 0, rows_ * sizeof(int)));
    CHECK(cudaMemset(done_, 0, rows_ * sizeof(int)));
    CHECK(cudaMemcpy(active_, &rows_, sizeof(int), cudaMemcpyHostToDevice));
  }

  const std::vector<Launch> &launches() const { return launches_; }

  /// Bytes of weights and cache a step reads at the average position of the timed tokens.
  double floor_bytes() const {
    double weights = 0;
    for (const Launch &l : launches_)
      if (l.kind != "attention") weights += l.bytes;
    const double mean_length = s_.prompt + s_.steps / 2.0;
    return weights + 2.0 * s_.layers * rows_ * mean_length * s_.kv_heads * s_.head_dim * sizeof(bf16);
  }

 private:
  template <class... A>
  void add(const std::string &kind, const void *kernel, dim3 grid, dim3 block, size_t shared, double bytes,
           A &...args) {
    Launch l{kind, kernel, grid, block, shared, {}, bytes};
    (l.args.push_back(&args), ...);
    launches_.push_back(std::move(l));
  }

  /// DecoderKernels.projectionConfig: a block per tile, at most as many as stay resident at once.
  dim3 projection_grid(const void *kernel, int warps, size_t shared, int features, int tile_features) const {
    int per_sm;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * warps, shared));
    return dim3(std::max(1, std::min((features + tile_features - 1) / tile_features, per_sm * sms_)));
  }

  const void *projection(const void *r8, const void *r16) const { return rows_ <= 8 ? r8 : r16; }

  template <class... A>
  void add_projection(const std::string &kind, const void *r8, const void *r16, int warps, size_t shared,
                      int features, int tile_features, double bytes, A &...args) {
    const void *kernel = projection(r8, r16);
    add(kind, kernel, projection_grid(kernel, warps, shared, features, tile_features), dim3(32 * warps), shared,
        bytes, args...);
  }

  void build() {
    const int H = s_.hidden, I = s_.intermediate, D = s_.head_dim, NQ = s_.heads, NKV = s_.kv_heads;
    hidden_ = H, intermediate_ = I, heads_ = NQ, kv_heads_ = NKV, head_dim_ = D, max_seq_ = s_.max_seq;
    vocab_ = s_.vocab, qd_ = NQ * D, eps_ = 1e-5f, scale_ = 1.0f / std::sqrt((float)D), zero_ = 0, r_ = rows_;
    stop_count_ = 0;
    control_ = {token_, pos_, generated_, max_new_, done_, active_, temperature_, top_k_,
                top_p_, seed_, stop_, stop_count_, host_tokens_, host_count_, stride_};
    const size_t staged = (size_t)rows_ * (H + 8) * 2;
    const int shared_max = (int)std::max<size_t>(staged, 48 * 1024);
    for (const void *k : {(const void *)cg4j_llm_qkv_rope_mma_r8, (const void *)cg4j_llm_qkv_rope_mma_r16,
                          (const void *)cg4j_llm_gate_up_mma_r8, (const void *)cg4j_llm_gate_up_mma_r16,
                          (const void *)cg4j_llm_lm_head_mma_r8, (const void *)cg4j_llm_lm_head_mma_r16})
      CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_max));
    const int attention_shared = std::max(4 * s_.max_seq, 48 * 1024);
    CHECK(cudaFuncSetAttribute((const void *)cg4j_llm_attention_d64, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               attention_shared));
    CHECK(cudaFuncSetAttribute((const void *)cg4j_llm_attention_d128, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               attention_shared));
    using namespace cg4j::llm;
    add("embed", (const void *)cg4j_llm_embed, dim3(rows_), dim3(256), 0, 0.0, embedding_, token_, x_, hidden_);
    for (Layer &l : layers_) {
      add_projection("qkv_rope", (const void *)cg4j_llm_qkv_rope_mma_r8, (const void *)cg4j_llm_qkv_rope_mma_r16,
                     kQkvWarps, staged, (NQ + 2 * NKV) * D / 2, 8, 2.0 * H * (NQ + 2 * NKV) * D, x_, l.input_norm,
                     eps_, l.wq, l.wk, l.wv, rope_, pos_, slot_, q_, l.k_cache, l.v_cache, hidden_, heads_, kv_heads_,
                     head_dim_, max_seq_, r_);
      add("attention", (const void *)(D == 64 ? cg4j_llm_attention_d64 : cg4j_llm_attention_d128), dim3(NQ, rows_),
          dim3(kAttentionThreads), 4 * s_.max_seq, 0.0, q_, l.k_cache, l.v_cache, pos_, slot_, attn_, heads_,
          kv_heads_, max_seq_, scale_);
      add_projection("o_proj", (const void *)cg4j_llm_residual_mma_r8, (const void *)cg4j_llm_residual_mma_r16,
                     kResidualWarps, 0, H, 16, 2.0 * H * NQ * D, attn_, l.wo, x_, hidden_, qd_, r_);
      add_projection("gate_up", (const void *)cg4j_llm_gate_up_mma_r8, (const void *)cg4j_llm_gate_up_mma_r16,
                     kGateUpWarps, staged, I, 8, 4.0 * H * I, x_, l.post_norm, eps_, l.gate, l.up, h_, hidden_,
                     intermediate_, r_);
      add_projection("down", (const void *)cg4j_llm_residual_mma_r8, (const void *)cg4j_llm_residual_mma_r16,
                     kResidualWarps, 0, H, 16, 2.0 * H * I, h_, l.down, x_, hidden_, intermediate_, r_);
    }
    add_projection("lm_head", (const void *)cg4j_llm_lm_head_mma_r8, (const void *)cg4j_llm_lm_head_mma_r16,
                   kLmHeadWarps, staged, s_.vocab, 16, 2.0 * H * s_.vocab, x_, final_norm_, eps_, embedding_, logits_,
                   vocab_, hidden_, r_);
    add("sample", (const void *)cg4j_llm_sample_partial, dim3(chunks_, rows_), dim3(kSampleThreads), 0,
        0.0, logits_, vocab_, temperature_, top_k_, zero_, cand_val_, cand_idx_, chunks_);
    add("sample", (const void *)cg4j_llm_sample_finish, dim3(rows_), dim3(kSampleThreads), 0, 0.0,
        cand_val_, cand_idx_, chunks_, zero_, token_, pos_, generated_, max_new_, done_, active_, temperature_,
        top_k_, top_p_, seed_, stop_, stop_count_, host_tokens_, host_count_, stride_);
  }

  const Shape s_;
  const int rows_, sms_;
  std::vector<Layer> layers_;
  std::vector<Launch> launches_;
  bf16 *embedding_, *final_norm_, *q_, *attn_, *h_;
  float2 *rope_;
  float *x_, *logits_, *cand_val_, *temperature_, *top_p_;
  int *cand_idx_, *token_, *pos_, *slot_, *generated_, *max_new_, *done_, *active_, *top_k_, *stop_;
  int *host_tokens_, *host_count_;
  unsigned long long *seed_;
  cg4j::llm::RowControl control_;
  // Kernel arguments passed by address, so they live as long as the launches.
  int hidden_, intermediate_, heads_, kv_heads_, head_dim_, max_seq_, vocab_, qd_, zero_, r_, chunks_, stop_count_,
      stride_;
  float eps_, scale_;
};

/// Launches as the library does: with programmatic dependent launch where `pdl` says so.
void launch(const Launch &l, cudaStream_t stream, bool pdl) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = l.grid;
  config.blockDim = l.block;
  config.dynamicSmemBytes = l.shared;
  config.stream = stream;
  config.attrs = pdl ? &attribute : nullptr;
  config.numAttrs = pdl ? 1 : 0;
  CHECK(cudaLaunchKernelExC(&config, l.kernel, const_cast<void **>(l.args.data())));
}

cudaGraphExec_t capture(const std::vector<const Launch *> &launches, cudaStream_t stream, bool pdl) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (const Launch *l : launches) launch(*l, stream, pdl);
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  return exec;
}

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

/// Reads n 16-byte vectors and folds them into one word a block, so that nothing is written back.
__global__ void read_all(const uint4 *p, long long n, unsigned *sink) {
  unsigned fold = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const uint4 v = __ldcs(p + i);
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (fold == 0x9e3779b9u) sink[blockIdx.x] = fold;  // keeps the loads; almost never taken
}

/// The best of six reads of 4 GiB: the read bandwidth the floor divides by.
double read_bandwidth(cudaStream_t stream, int sms) {
  const size_t bytes = 1ull << 32;
  uint4 *data;
  unsigned *sink;
  CHECK(cudaMalloc(&data, bytes));
  CHECK(cudaMalloc(&sink, sizeof(unsigned) * sms * 8));
  CHECK(cudaMemset(data, 0x5a, bytes));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    CHECK(cudaEventRecord(e0, stream));
    read_all<<<sms * 8, 256, 0, stream>>>(data, bytes / sizeof(uint4), sink);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaEventSynchronize(e1));
    best = std::max(best, bytes / (elapsed_ms(e0, e1) * 1e-3));
  }
  CHECK(cudaFree(data));
  CHECK(cudaFree(sink));
  return best;
}

void run(const Shape &s, int rows, int sms, double bandwidth, cudaStream_t stream) {
  Step step(s, rows, sms);
  CHECK(cudaDeviceSynchronize());
  std::vector<const Launch *> all;
  for (const Launch &l : step.launches()) all.push_back(&l);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  // The step as one graph, replayed for every token: with programmatic dependent launch (as the
  // library launches), then without, side by side.
  const double floor_ms = step.floor_bytes() / bandwidth * 1e3;
  std::printf("\nrows %d: floor %.4f ms\n", rows, floor_ms);
  for (bool pdl : {true, false}) {
    cudaGraphExec_t graph = capture(all, stream, pdl);
    for (int i = 0; i < 16; ++i) CHECK(cudaGraphLaunch(graph, stream));
    CHECK(cudaStreamSynchronize(stream));
    step.reset();
    CHECK(cudaEventRecord(e0, stream));
    for (int i = 0; i < s.steps; ++i) CHECK(cudaGraphLaunch(graph, stream));
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaEventSynchronize(e1));
    const double step_ms = elapsed_ms(e0, e1) / s.steps;
    std::printf("  graph step, %-22s %.4f ms (%.0f tokens/s), %.1f%% of the floor\n",
                pdl ? "programmatic launches:" : "plain launches:", step_ms, rows * 1e3 / step_ms,
                100.0 * floor_ms / step_ms);
    CHECK(cudaGraphExecDestroy(graph));
  }

  // An eager step with an event before every launch: each kernel's share, gaps included.
  std::vector<cudaEvent_t> marks(all.size() + 1);
  for (cudaEvent_t &e : marks) CHECK(cudaEventCreate(&e));
  std::map<std::string, double> share;
  std::map<std::string, int> count;
  step.reset();
  const int eager_steps = 64;
  for (int t = 0; t < eager_steps; ++t) {
    for (size_t k = 0; k < all.size(); ++k) {
      CHECK(cudaEventRecord(marks[k], stream));
      launch(*all[k], stream, false);
    }
    CHECK(cudaEventRecord(marks.back(), stream));
    CHECK(cudaEventSynchronize(marks.back()));
    for (size_t k = 0; k < all.size(); ++k) {
      share[all[k]->kind] += elapsed_ms(marks[k], marks[k + 1]) * 1e3 / eager_steps;
      if (t == 0) count[all[k]->kind] += 1;
    }
  }
  double eager_total = 0;
  for (auto &[kind, us] : share) eager_total += us;
  std::printf("  eager step %.4f ms, by kernel (us a step, launches, us each):\n", eager_total / 1e3);
  for (auto &[kind, us] : share)
    std::printf("    %-10s %8.1f us %3d x %6.2f us  %5.1f%%\n", kind.c_str(), us, count[kind], us / count[kind],
                100.0 * us / eager_total);

  // Each projection alone: its launches of every layer back to back in one graph.
  std::printf("  projections alone, back to back (us each, GB/s, share of the read bandwidth):\n");
  for (const char *kind : {"qkv_rope", "o_proj", "gate_up", "down", "lm_head", "attention"}) {
    std::vector<const Launch *> same;
    double bytes = 0;
    for (const Launch *l : all)
      if (l->kind == kind) {
        same.push_back(l);
        bytes += l->bytes;
      }
    std::vector<const Launch *> repeated;
    const int rounds = same.size() == 1 ? 16 : 4;
    for (int i = 0; i < rounds; ++i) repeated.insert(repeated.end(), same.begin(), same.end());
    cudaGraphExec_t alone = capture(repeated, stream, false);
    CHECK(cudaGraphLaunch(alone, stream));
    step.reset();
    CHECK(cudaEventRecord(e0, stream));
    for (int i = 0; i < 8; ++i) CHECK(cudaGraphLaunch(alone, stream));
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaEventSynchronize(e1));
    const double us = elapsed_ms(e0, e1) * 1e3 / (8.0 * repeated.size());
    const double rate = bytes / same.size() / (us * 1e-6);
    std::printf("    %-10s %8.2f us  %7.0f GB/s  %5.1f%%\n", kind, us, rate / 1e9, 100.0 * rate / bandwidth);
    CHECK(cudaGraphExecDestroy(alone));
  }
  CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

int main(int argc, char **argv) {
  Shape s;
  std::vector<int> rows = {1, 4, 16};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rows") && i + 1 < argc) {
      rows.clear();
      for (char *t = std::strtok(argv[++i], ","); t; t = std::strtok(nullptr, ",")) rows.push_back(std::atoi(t));
    } else if (!std::strcmp(argv[i], "--layers") && i + 1 < argc) {
      s.layers = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: llama_step [--rows 1,4,16] [--layers 16]\n");
      return 2;
    }
  }
  int device;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaGetDeviceProperties(&prop, device));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double bandwidth = read_bandwidth(stream, prop.multiProcessorCount);
  std::printf("%s, %d SMs; reading 4 GiB runs at %.0f GB/s\n", prop.name, prop.multiProcessorCount,
              bandwidth / 1e9);
  for (int r : rows) {
    if (r < 1 || r > 16) {
      std::fprintf(stderr, "llama_step: rows must be 1..16, got %d\n", r);
      return 2;
    }
    run(s, r, prop.multiProcessorCount, bandwidth, stream);
  }
  return 0;
}
