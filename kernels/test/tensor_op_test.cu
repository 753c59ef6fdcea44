// Native check, accuracy and speed harness of the tensor-core sgemm (include/cg4j/sgemm_tensor_op.cuh
// and sgemm_wgmma.cuh), side by side with the SIMT kernel and cuBLAS FP32 (TF32 off) in one process.
//
//   1. correctness: every variant on odd shapes (M, N, K from 1 to 4097, primes included), outputs
//      NaN-poisoned before each launch, against a float64 reference; guard zones must stay poisoned;
//      a second launch must give the same bits.
//   2. accuracy: max and mean error against float64 of 3xTF32, 1xTF32, the SIMT kernel and cuBLAS FP32
//      on the same data (normal, uniform, and a wide exponent range; K up to 16384).
//   3. speed: 4096^3 in both B layouts, and the MLP's shapes, each kernel timed beside cuBLAS.
//
// Built for sm_90a (the wgmma variants need it; nvcc -gencode arch=compute_90a,code=sm_90a) and run
// by kernels/test/run-on-gpu.sh, on an H100 or H200; `--quick` skips the K = 16384 accuracy rows.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cg4j/sgemm_simt.cuh"
#include "cg4j/sgemm_tensor_op.cuh"
#include "cg4j/sgemm_wgmma.cuh"

#define CK(x) check_cuda((x), #x, __LINE__)
#define CB(x) check_cublas((x), #x, __LINE__)
static void check_cuda(cudaError_t e, const char *what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FATAL line %d: %s: %s\n", line, what, cudaGetErrorString(e));
    std::exit(1);
  }
}
static void check_cublas(cublasStatus_t s, const char *what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "FATAL line %d: %s: cublas status %d\n", line, what, (int)s);
    std::exit(1);
  }
}

#include "host_data.cuh"

using cg4j::GemmShape;
using cg4j::ThreadShape;
using cg4j::arch::TensorMath;
using cg4j::layout::ColumnMajor;
using cg4j::layout::RowMajor;
using LinComb = cg4j::epilogue::thread::LinearCombination;
using BiasRelu = cg4j::epilogue::thread::LinearCombinationBiasRelu;
#define CG4J_OUTPUT_OP_LINCOMB LinComb
#define CG4J_OUTPUT_OP_BIAS_RELU BiasRelu

// ------------------------------------------------------------------------------------------------
// Variants: tensor-core tiles x math x B layout x epilogue, and the shipped SIMT large tile.

struct Kernel {
  std::string name;
  const void *func;
  bool bias_relu, b_col_major, split_k;
  int align, tile_m, tile_n, threads, smem;
};

#define TC_VARIANT(NAME, EPI, TBM, TBN, TBK, WM, WN, LB, AL, ST, MATH, MINB, ...)                              \
  using NAME##_t = cg4j::TensorOpSgemm<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, LB, AL, AL, ST, MATH, \
                                       CG4J_OUTPUT_OP_##EPI, (__VA_ARGS__ + 0 ? __VA_ARGS__ + 0 : 1)>;       \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, MINB) static Kernel NAME##_info() {                              \
    return {#NAME, (const void *)NAME, std::string(#EPI) == "BIAS_RELU", LB::kLetter == 'n', false, AL, TBM,  \
            TBN, NAME##_t::kThreads, NAME##_t::kSharedStorageBytes};                                          \
  }
#define TC_VARIANT_SPLITK(NAME, EPI, TBM, TBN, TBK, WM, WN, LB, AL, ST, MATH, MINB, ...)                        \
  using NAME##_t = cg4j::TensorOpSgemmSplitK<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, LB, AL, AL, ST,  \
                                             MATH, CG4J_OUTPUT_OP_##EPI, (__VA_ARGS__ + 0 ? __VA_ARGS__ + 0 : 1)>; \
  CG4J_SGEMM_##EPI##_SPLITK_ENTRY(NAME, NAME##_t, MINB) static Kernel NAME##_info() {                         \
    return {#NAME, (const void *)NAME, std::string(#EPI) == "BIAS_RELU", LB::kLetter == 'n', true, AL, TBM,    \
            TBN, NAME##_t::kThreads, NAME##_t::kSharedStorageBytes};                                            \
  }
#define WG_VARIANT(NAME, EPI, TBM, TBN, AL, ST, MATH)                                                          \
  using NAME##_t = cg4j::WgmmaSgemm<GemmShape<TBM, TBN, 32>, AL, AL, ST, MATH, CG4J_OUTPUT_OP_##EPI>;           \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, 1) static Kernel NAME##_info() {                                   \
    return {#NAME, (const void *)NAME, std::string(#EPI) == "BIAS_RELU", true, false, AL, TBM,                  \
            TBN, NAME##_t::kThreads, NAME##_t::kSharedStorageBytes};                                            \
  }
#define WG_VARIANT_SPLITK(NAME, EPI, TBM, TBN, AL, ST, MATH)                                                   \
  using NAME##_t = cg4j::WgmmaSgemmSplitK<GemmShape<TBM, TBN, 32>, AL, AL, ST, MATH, CG4J_OUTPUT_OP_##EPI>;     \
  CG4J_SGEMM_##EPI##_SPLITK_ENTRY(NAME, NAME##_t, 1) static Kernel NAME##_info() {                            \
    return {#NAME, (const void *)NAME, std::string(#EPI) == "BIAS_RELU", true, true, AL, TBM,                    \
            TBN, NAME##_t::kThreads, NAME##_t::kSharedStorageBytes};                                             \
  }
#define SIMT_VARIANT(NAME, EPI, LB, AL)                                                                        \
  using NAME##_t = cg4j::SimtSgemm<GemmShape<128, 128, 16>, GemmShape<32, 64, 16>, ThreadShape<8, 8>, LB, AL, 3, \
                                   CG4J_OUTPUT_OP_##EPI, 4>;                                                   \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, 2) static Kernel NAME##_info() {                                   \
    return {#NAME, (const void *)NAME, std::string(#EPI) == "BIAS_RELU", LB::kLetter == 'n', false, AL, 128,   \
            128, NAME##_t::kThreads, NAME##_t::kSharedStorageBytes};                                           \
  }

constexpr TensorMath F3 = TensorMath::kFastF32;
constexpr TensorMath T1 = TensorMath::kTF32;
// 128x128x32, 4 warps of 64x64, 3 stages (110.6 KB: 2 blocks per SM).
TC_VARIANT(tc3_128x128x32_3_ttt_a4, LINCOMB, 128, 128, 32, 64, 64, RowMajor, 4, 3, F3, 2)
TC_VARIANT(tc3_128x128x32_3_tnt_a4, LINCOMB, 128, 128, 32, 64, 64, ColumnMajor, 4, 3, F3, 2)
TC_VARIANT(tc3_128x128x32_3_tnt_a4_br, BIAS_RELU, 128, 128, 32, 64, 64, ColumnMajor, 4, 3, F3, 2)
TC_VARIANT(tc3_128x128x32_3_ttt_a1, LINCOMB, 128, 128, 32, 64, 64, RowMajor, 1, 3, F3, 2)
TC_VARIANT(tc3_128x128x32_3_tnt_a1_br, BIAS_RELU, 128, 128, 32, 64, 64, ColumnMajor, 1, 3, F3, 2)
// The same, the tensor core summing 2 k steps (16 products) before each FP32 add.
TC_VARIANT(tc3_128x128x32_3_tnt_a4_g2, LINCOMB, 128, 128, 32, 64, 64, ColumnMajor, 4, 3, F3, 2, 2)
TC_VARIANT(tc3_256x128x32_3_tnt_a4_g2, LINCOMB, 256, 128, 32, 64, 64, ColumnMajor, 4, 3, F3, 1, 2)
TC_VARIANT(tc3_128x128x16_4_tnt_a4_g2, LINCOMB, 128, 128, 16, 64, 64, ColumnMajor, 4, 4, F3, 2, 2)
TC_VARIANT(tc3_128x128x32_3_ttt_a4_g2, LINCOMB, 128, 128, 32, 64, 64, RowMajor, 4, 3, F3, 2, 2)
TC_VARIANT_SPLITK(tc3_64x64x32_4_tnt_a4_br_splitk_g2, BIAS_RELU, 64, 64, 32, 32, 32, ColumnMajor, 4, 4, F3, 3, 2)
// 128x128x16, 4 stages (81.9 KB).
TC_VARIANT(tc3_128x128x16_4_ttt_a4, LINCOMB, 128, 128, 16, 64, 64, RowMajor, 4, 4, F3, 2)
TC_VARIANT(tc3_128x128x16_4_tnt_a4, LINCOMB, 128, 128, 16, 64, 64, ColumnMajor, 4, 4, F3, 2)
// 8 warps of 64x64: 256x128x32, 3 stages (166 KB: 1 block per SM).
TC_VARIANT(tc3_256x128x32_3_tnt_a4, LINCOMB, 256, 128, 32, 64, 64, ColumnMajor, 4, 3, F3, 1)
// 64x64x32, 4 warps of 32x32, 4 stages: small tiles for small M.
TC_VARIANT(tc3_64x64x32_4_tnt_a4, LINCOMB, 64, 64, 32, 32, 32, ColumnMajor, 4, 4, F3, 4)
TC_VARIANT(tc3_64x64x32_4_tnt_a4_br, BIAS_RELU, 64, 64, 32, 32, 32, ColumnMajor, 4, 4, F3, 4)
TC_VARIANT_SPLITK(tc3_64x64x32_4_tnt_a4_br_splitk, BIAS_RELU, 64, 64, 32, 32, 32, ColumnMajor, 4, 4, F3, 4)
TC_VARIANT_SPLITK(tc3_128x128x32_3_tnt_a4_br_splitk, BIAS_RELU, 128, 128, 32, 64, 64, ColumnMajor, 4, 3, F3, 2)
// One TF32 product: the speed of light of this mainloop, and the opt-in fast mode.
TC_VARIANT(tc1_128x128x32_3_ttt_a4, LINCOMB, 128, 128, 32, 64, 64, RowMajor, 4, 3, T1, 2)
TC_VARIANT(tc1_128x128x32_3_tnt_a4, LINCOMB, 128, 128, 32, 64, 64, ColumnMajor, 4, 3, T1, 2)
// wgmma (sm_90a), B stored [N,K]: 2 warpgroups of 64 x 128 (128x128) or 1 of 64 x kN.
WG_VARIANT(wg3_128x128x32_3_tnt_a4, LINCOMB, 128, 128, 4, 3, F3)
WG_VARIANT(wg3_128x128x32_4_tnt_a4, LINCOMB, 128, 128, 4, 4, F3)
WG_VARIANT(wg3_128x128x32_3_tnt_a4_br, BIAS_RELU, 128, 128, 4, 3, F3)
WG_VARIANT(wg3_128x128x32_3_tnt_a1_br, BIAS_RELU, 128, 128, 1, 3, F3)
WG_VARIANT(wg3_64x128x32_4_tnt_a4, LINCOMB, 64, 128, 4, 4, F3)
WG_VARIANT(wg3_128x64x32_4_tnt_a4_br, BIAS_RELU, 128, 64, 4, 4, F3)
WG_VARIANT(wg3_64x64x32_4_tnt_a4_br, BIAS_RELU, 64, 64, 4, 4, F3)
WG_VARIANT(tc1wg_128x128x32_4_tnt_a4, LINCOMB, 128, 128, 4, 4, T1)
WG_VARIANT_SPLITK(wg3_64x64x32_4_tnt_a4_br_splitk, BIAS_RELU, 64, 64, 4, 4, F3)
WG_VARIANT_SPLITK(wg3_128x64x32_4_tnt_a4_br_splitk, BIAS_RELU, 128, 64, 4, 4, F3)
// The shipped SIMT large tile.
SIMT_VARIANT(simt_128x128x16_3_ttt_a4, LINCOMB, RowMajor, 4)
SIMT_VARIANT(simt_128x128x16_3_tnt_a1, LINCOMB, ColumnMajor, 1)

// ------------------------------------------------------------------------------------------------
// Data

enum class Dist { kUniform, kNormal, kWide };
static const char *dist_name(Dist d) { return d == Dist::kUniform ? "uniform" : d == Dist::kNormal ? "normal" : "wide-exp"; }
static float draw(Rng &r, Dist d) { return d == Dist::kUniform ? r.uniform() : d == Dist::kNormal ? r.normal() : r.wide(); }

/// A (M x K, lda) row-major and B as logical K x N: stored [K][ldb] ('t') or [N][ldb] ('n').
struct Problem {
  int M, N, K, lda, ldb, ldc;
  bool b_col_major;
  std::vector<float> A, B, bias;
  float b(int k, int n) const { return b_col_major ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n]; }
};

static Problem make_problem(int M, int N, int K, bool b_col_major, int align, Dist dist, uint64_t seed) {
  Problem p{M, N, K, 0, 0, 0, b_col_major, {}, {}, {}};
  auto round_up = [&](int x) { return align == 4 ? (x + 3) / 4 * 4 : x + (x % 2 == 0 ? 1 : 0); };
  p.lda = round_up(K);
  p.ldb = round_up(b_col_major ? K : N);
  p.ldc = N + 1;
  Rng r(seed);
  p.A.assign((size_t)M * p.lda, 0.f);
  p.B.assign((size_t)(b_col_major ? N : K) * p.ldb, 0.f);
  for (auto &v : p.A) v = draw(r, dist);
  for (auto &v : p.B) v = draw(r, dist);
  p.bias.resize(N);
  for (auto &v : p.bias) v = r.uniform();
  return p;
}

/// ref(m, n) = sum_k A(m,k) B(k,n) in float64, and the sum of |A(m,k) B(k,n)| (the error scale).
static void reference(const Problem &p, std::vector<double> &ref, std::vector<double> &scale) {
  ref.assign((size_t)p.M * p.N, 0.0);
  scale.assign((size_t)p.M * p.N, 0.0);
  std::vector<float> Bt((size_t)p.N * p.K);
  for (int n = 0; n < p.N; ++n)
    for (int k = 0; k < p.K; ++k) Bt[(size_t)n * p.K + k] = p.b(k, n);
#pragma omp parallel for schedule(dynamic, 4)
  for (int m = 0; m < p.M; ++m) {
    const float *a = &p.A[(size_t)m * p.lda];
    for (int n = 0; n < p.N; ++n) {
      const float *b = &Bt[(size_t)n * p.K];
      double s = 0, t = 0;
      for (int k = 0; k < p.K; ++k) {
        double x = (double)a[k] * b[k];
        s += x;
        t += std::fabs(x);
      }
      ref[(size_t)m * p.N + n] = s;
      scale[(size_t)m * p.N + n] = t;
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Launch

struct Workspace {
  DevBuf partials{(size_t)16 * 4096 * 4096 / 16};
  int *tickets = nullptr;
  Workspace() {
    CK(cudaMalloc(&tickets, 65536 * sizeof(int)));
    CK(cudaMemset(tickets, 0, 65536 * sizeof(int)));
  }
  ~Workspace() { cudaFree(tickets); }
};
static Workspace *g_ws;

static void launch(const Kernel &k, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, const float *bias, float *C, int ldc, int slices = 1, cudaStream_t stream = 0) {
  dim3 grid((M + k.tile_m - 1) / k.tile_m, (N + k.tile_n - 1) / k.tile_n, k.split_k ? slices : 1);
  float *ws = g_ws->partials.p;
  int *tickets = g_ws->tickets;
  if (k.bias_relu && k.split_k) {
    void *args[] = {&M, &N, &K, (void *)&A, &lda, (void *)&B, &ldb, (void *)&bias, &C, &ldc, &ws, &tickets};
    CK(cudaLaunchKernel(k.func, grid, dim3(k.threads), args, k.smem, stream));
  } else if (k.bias_relu) {
    void *args[] = {&M, &N, &K, (void *)&A, &lda, (void *)&B, &ldb, (void *)&bias, &C, &ldc};
    CK(cudaLaunchKernel(k.func, grid, dim3(k.threads), args, k.smem, stream));
  } else {
    void *args[] = {&M, &N, &K, &alpha, (void *)&A, &lda, (void *)&B, &ldb, &beta, &C, &ldc};
    CK(cudaLaunchKernel(k.func, grid, dim3(k.threads), args, k.smem, stream));
  }
}

static cublasHandle_t g_cublas;
/// Row-major C = A * B (+0 C) with cuBLAS FP32 (column-major: C^T = B^T A^T).
static void cublas_sgemm(const Problem &p, const float *A, const float *B, float *C) {
  const float one = 1.f, zero = 0.f;
  CB(cublasSgemm(g_cublas, p.b_col_major ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, p.N, p.M, p.K, &one, B, p.ldb, A,
                 p.lda, &zero, C, p.ldc));
}

// ------------------------------------------------------------------------------------------------
// 1. Correctness

static int g_checks = 0, g_failures = 0;

static void check(const Kernel &k, int M, int N, int K, int slices, uint64_t seed) {
  Problem p = make_problem(M, N, K, k.b_col_major, k.align, Dist::kUniform, seed);
  std::vector<double> ref, scale;
  reference(p, ref, scale);
  DevBuf dA(p.A.size()), dB(p.B.size()), dbias(N), dC((size_t)M * p.ldc + kGuard);
  dA.upload(p.A);
  dB.upload(p.B);
  dbias.upload(p.bias);
  std::vector<float> c0(dC.n, poison());
  Rng r(seed ^ 0x5555);
  const bool beta_case = !k.bias_relu && (seed & 1);
  const float alpha = 1.25f, beta = beta_case ? -0.5f : 0.f;
  if (beta_case)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) c0[(size_t)m * p.ldc + n] = r.uniform();
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    dC.upload(c0);
    launch(k, M, N, K, alpha, dA.p, p.lda, dB.p, p.ldb, beta, dbias.p, dC.p, p.ldc, slices);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> out = dC.download();
    if (run == 0) {
      first = out;
      continue;
    }
    long long bad = 0, stray = 0, nonfinite = 0;
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const int m = (int)(i / p.ldc), n = (int)(i % p.ldc);
      if (m >= M || n >= N) {
        if (!is_poison(out[i])) ++stray;
        continue;
      }
      const size_t j = (size_t)m * N + n;
      double want, tol_scale;
      if (k.bias_relu) {
        want = std::max(0.0, ref[j] + p.bias[n]);
        tol_scale = scale[j] + std::fabs(p.bias[n]);
      } else {
        want = alpha * ref[j] + beta * c0[i];
        tol_scale = std::fabs(alpha) * scale[j] + std::fabs(beta * c0[i]);
      }
      if (!std::isfinite(out[i])) {
        ++nonfinite;
        continue;
      }
      const double err = std::fabs(out[i] - want) / std::max(tol_scale, 1e-30);
      worst = std::max(worst, err);
      // 3xTF32 and FP32 both stay near 2^-22 of the terms' magnitude; TF32 near 2^-11.
      if (err > (k.name.rfind("tc1", 0) == 0 ? 2e-3 : 4e-6)) ++bad;
    }
    const bool same_bits = std::memcmp(first.data(), out.data(), out.size() * 4) == 0;
    ++g_checks;
    if (bad || stray || nonfinite || !same_bits) {
      ++g_failures;
      std::printf("  FAIL %s M=%d N=%d K=%d slices=%d beta=%g: bad=%lld stray=%lld nonfinite=%lld worst=%.3e %s\n",
                  k.name.c_str(), M, N, K, slices, beta, bad, stray, nonfinite, worst,
                  same_bits ? "" : "bits differ between runs");
    }
  }
}

// ------------------------------------------------------------------------------------------------
// 2. Accuracy

struct ErrorStats {
  double max_rel = 0, mean_rel = 0, max_scaled = 0, mean_scaled = 0;
};
static ErrorStats errors(const std::vector<float> &out, int ldc, const std::vector<double> &ref,
                         const std::vector<double> &scale, int M, int N) {
  ErrorStats s;
  long long n_rel = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const size_t j = (size_t)m * N + n;
      const double d = std::fabs((double)out[(size_t)m * ldc + n] - ref[j]);
      const double scaled = d / scale[j];
      s.max_scaled = std::max(s.max_scaled, scaled);
      s.mean_scaled += scaled;
      if (ref[j] != 0) {
        const double rel = d / std::fabs(ref[j]);
        s.max_rel = std::max(s.max_rel, rel);
        s.mean_rel += rel;
        ++n_rel;
      }
    }
  s.mean_scaled /= (double)M * N;
  s.mean_rel /= std::max(1LL, n_rel);
  return s;
}

static void accuracy(Dist dist, int K, const std::vector<const Kernel *> &kernels) {
  const int M = 256, N = 256;
  Problem p = make_problem(M, N, K, true, 4, dist, 1000 + K + (int)dist);
  std::vector<double> ref, scale;
  reference(p, ref, scale);
  DevBuf dA(p.A.size()), dB(p.B.size()), dC((size_t)M * p.ldc);
  dA.upload(p.A);
  dB.upload(p.B);
  auto row = [&](const char *who, const std::vector<float> &out) {
    ErrorStats e = errors(out, p.ldc, ref, scale, M, N);
    std::printf("accuracy %-8s K=%-5d %-34s max_rel=%.3e mean_rel=%.3e max_err/sum|ab|=%.3e mean=%.3e\n",
                dist_name(dist), K, who, e.max_rel, e.mean_rel, e.max_scaled, e.mean_scaled);
  };
  for (const Kernel *k : kernels) {
    launch(*k, M, N, K, 1.f, dA.p, p.lda, dB.p, p.ldb, 0.f, nullptr, dC.p, p.ldc);
    CK(cudaDeviceSynchronize());
    row(k->name.c_str(), dC.download());
  }
  cublas_sgemm(p, dA.p, dB.p, dC.p);
  CK(cudaDeviceSynchronize());
  row("cuBLAS FP32", dC.download());
}

// ------------------------------------------------------------------------------------------------
// 3. Speed

static double time_ms(const std::function<void()> &fn) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) fn();
  CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int s = 0; s < 7; ++s) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < 10; ++i) fn();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms / 10);
  }
  CK(cudaGetLastError());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static void speed(int M, int N, int K, bool b_col_major, const std::vector<std::pair<const Kernel *, int>> &kernels) {
  Problem p{M, N, K, K, b_col_major ? K : N, N, b_col_major, {}, {}, {}};
  DevBuf dA((size_t)M * K), dB((size_t)K * N), dbias(N), dC((size_t)M * N);
  std::vector<float> h((size_t)std::max(M, N) * K);
  Rng r(7);
  for (auto &v : h) v = r.uniform();
  CK(cudaMemcpy(dA.p, h.data(), dA.n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB.p, h.data(), dB.n * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dbias.p, h.data(), N * 4, cudaMemcpyHostToDevice));
  const double flops = 2.0 * M * N * K;
  const double cublas = time_ms([&] { cublas_sgemm(p, dA.p, dB.p, dC.p); });
  std::printf("speed %dx%dx%d %s  cuBLAS FP32 %.1f us %.1f TFLOP/s\n", M, N, K, b_col_major ? "tnt" : "ttt",
              cublas * 1e3, flops / cublas / 1e9);
  for (const auto &entry : kernels) {
    const Kernel *k = entry.first;
    const int slices = entry.second;
    const double ms = time_ms([&] {
      launch(*k, M, N, K, 1.f, dA.p, p.lda, dB.p, p.ldb, 0.f, dbias.p, dC.p, p.ldc, slices);
    });
    std::printf("speed %dx%dx%d %s  %-34s slices=%-2d %.1f us %.1f TFLOP/s  %.2fx cuBLAS\n", M, N, K,
                b_col_major ? "tnt" : "ttt", k->name.c_str(), slices, ms * 1e3, flops / ms / 1e9, cublas / ms);
  }
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, sm_%d%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
  CB(cublasCreate(&g_cublas));
  CB(cublasSetMathMode(g_cublas, CUBLAS_DEFAULT_MATH));  // FP32: no TF32 unless asked for
  g_ws = new Workspace();

  const std::vector<Kernel> all = {
      tc3_128x128x32_3_ttt_a4_info(),       tc3_128x128x32_3_ttt_a4_g2_info(),   tc3_128x128x32_3_tnt_a4_info(),
      tc3_128x128x32_3_tnt_a4_g2_info(),    tc3_128x128x32_3_tnt_a4_br_info(),   tc3_128x128x32_3_ttt_a1_info(),
      tc3_128x128x32_3_tnt_a1_br_info(),    tc3_128x128x16_4_ttt_a4_info(),      tc3_128x128x16_4_tnt_a4_info(),
      tc3_128x128x16_4_tnt_a4_g2_info(),    tc3_256x128x32_3_tnt_a4_info(),      tc3_256x128x32_3_tnt_a4_g2_info(),
      tc3_64x64x32_4_tnt_a4_info(),         tc3_64x64x32_4_tnt_a4_br_info(),     tc3_64x64x32_4_tnt_a4_br_splitk_info(),
      tc3_64x64x32_4_tnt_a4_br_splitk_g2_info(), tc3_128x128x32_3_tnt_a4_br_splitk_info(),
      tc1_128x128x32_3_ttt_a4_info(),       tc1_128x128x32_3_tnt_a4_info(),      simt_128x128x16_3_ttt_a4_info(),
      simt_128x128x16_3_tnt_a1_info(),      wg3_128x128x32_3_tnt_a4_info(),      wg3_128x128x32_4_tnt_a4_info(),
      wg3_128x128x32_3_tnt_a4_br_info(),    wg3_128x128x32_3_tnt_a1_br_info(),   wg3_64x128x32_4_tnt_a4_info(),
      wg3_128x64x32_4_tnt_a4_br_info(),     wg3_64x64x32_4_tnt_a4_br_info(),     tc1wg_128x128x32_4_tnt_a4_info(),
      wg3_64x64x32_4_tnt_a4_br_splitk_info(), wg3_128x64x32_4_tnt_a4_br_splitk_info()};
  auto by = [&](const char *name) {
    for (const Kernel &k : all)
      if (k.name == name) return &k;
    std::fprintf(stderr, "FATAL: no variant %s\n", name);
    std::exit(2);
  };
  for (const Kernel &k : all) {
    CK(cudaFuncSetAttribute(k.func, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, k.func));
    int blocks = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.func, k.threads, k.smem));
    std::printf("kernel %-36s threads=%d smem=%d regs=%d local=%zu blocks/SM=%d\n", k.name.c_str(), k.threads, k.smem,
                fa.numRegs, fa.localSizeBytes, blocks);
  }

  // 1. Correctness on odd shapes; split-K with several slice counts.
  const int shapes[][3] = {{1, 1, 1},     {1, 7, 5},      {3, 130, 33},    {17, 1, 64},     {31, 67, 129},
                           {64, 64, 32},  {97, 131, 257}, {128, 128, 1},   {129, 257, 127}, {250, 97, 1000},
                           {1, 4097, 61}, {4097, 3, 29},  {127, 1021, 2}, {257, 129, 4097}};
  uint64_t seed = 1;
  for (const Kernel &k : all)
    for (auto &s : shapes) {
      if (k.split_k) {
        for (int slices : {1, 2, 3, 7}) check(k, s[0], s[1], s[2], std::min(slices, std::max(1, (s[2] + 31) / 32)), seed++);
      } else {
        check(k, s[0], s[1], s[2], 1, seed++);
      }
    }
  std::printf("correctness: %d checks, %d failures\n", g_checks, g_failures);

  // 2. Accuracy, the same data for every kernel.
  for (Dist d : {Dist::kNormal, Dist::kUniform, Dist::kWide})
    for (int K : {256, 512, 1024, 2048, 4096, 16384}) {
      if (quick && K > 4096) continue;
      accuracy(d, K,
               {by("tc3_128x128x32_3_tnt_a4"), by("tc3_128x128x32_3_tnt_a4_g2"), by("wg3_128x128x32_3_tnt_a4"),
                by("tc1_128x128x32_3_tnt_a4"), by("tc1wg_128x128x32_4_tnt_a4"), by("simt_128x128x16_3_tnt_a1")});
    }

  // 3. Speed.
  auto with = [&](std::initializer_list<const char *> names, int slices) {
    std::vector<std::pair<const Kernel *, int>> out;
    for (const char *n : names) out.push_back({by(n), slices});
    return out;
  };
  speed(4096, 4096, 4096, false,
        with({"tc3_128x128x32_3_ttt_a4", "tc3_128x128x32_3_ttt_a4_g2", "tc3_128x128x16_4_ttt_a4",
              "tc1_128x128x32_3_ttt_a4", "simt_128x128x16_3_ttt_a4"}, 1));
  speed(4096, 4096, 4096, true,
        with({"tc3_128x128x32_3_tnt_a4", "tc3_128x128x32_3_tnt_a4_g2", "tc3_128x128x16_4_tnt_a4",
              "tc3_128x128x16_4_tnt_a4_g2", "tc3_256x128x32_3_tnt_a4", "tc3_256x128x32_3_tnt_a4_g2",
              "tc3_64x64x32_4_tnt_a4", "tc1_128x128x32_3_tnt_a4", "simt_128x128x16_3_tnt_a1",
              "wg3_128x128x32_3_tnt_a4", "wg3_128x128x32_4_tnt_a4", "wg3_64x128x32_4_tnt_a4",
              "tc1wg_128x128x32_4_tnt_a4"}, 1));
  // The seed's fused Linear.
  speed(2048, 640, 512, true, with({"tc3_128x128x32_3_tnt_a4_br", "tc3_64x64x32_4_tnt_a4_br",
                                    "tc3_64x64x32_4_tnt_a4_br_splitk_g2", "wg3_128x128x32_3_tnt_a4_br",
                                    "wg3_128x64x32_4_tnt_a4_br", "wg3_64x64x32_4_tnt_a4_br"}, 1));
  // The MLP's layers where the SIMT kernels trail cuBLASLt.
  for (int width : {512, 1024, 4096})
    for (int batch : {32, 128, 256}) {
      std::vector<std::pair<const Kernel *, int>> ks = with({"tc3_64x64x32_4_tnt_a4_br"}, 1);
      for (int slices : {1, 2, 4}) {
        ks.push_back({by("tc3_64x64x32_4_tnt_a4_br_splitk"), slices});
        ks.push_back({by("tc3_64x64x32_4_tnt_a4_br_splitk_g2"), slices});
      }
      ks.push_back({by("tc3_128x128x32_3_tnt_a4_br_splitk"), 2});
      for (const char *n : {"wg3_128x128x32_3_tnt_a4_br", "wg3_128x64x32_4_tnt_a4_br", "wg3_64x64x32_4_tnt_a4_br"})
        ks.push_back({by(n), 1});
      for (int slices : {2, 3, 4, 8}) {
        ks.push_back({by("wg3_64x64x32_4_tnt_a4_br_splitk"), std::min(slices, width / 32)});
        ks.push_back({by("wg3_128x64x32_4_tnt_a4_br_splitk"), std::min(slices, width / 32)});
      }
      speed(batch, width, width, true, ks);
    }
  std::printf("%s: %d checks, %d failures\n", g_failures ? "FAILED" : "PASSED", g_checks, g_failures);
  delete g_ws;
  return g_failures ? 1 : 0;
}
