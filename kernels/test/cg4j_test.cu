// cudagraph4j kernels: native check + bench harness.
//
//   cg4j_test <kernels/build dir> [--quick]
//
// Loads the shipped sm_90 cubin with cudaLibraryLoadData (the same path the Java side takes), reads
// launch metadata from manifest.properties, checks every instance against a float64 CPU reference
// on fresh random inputs (outputs poisoned with NaN before every run, every element checked, ld
// padding and a guard zone checked for stray writes), then times the large tile against cuBLAS
// SGEMM (CUBLAS_DEFAULT_MATH: no TF32), the fused Linear against cuBLAS + our epilogue, and the
// seed shape. Tuning variants of the large tile are compiled into this binary from the same
// headers and timed side by side. Exit code 0 only if every check passed.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cg4j/sgemm_simt.cuh"

// ------------------------------------------------------------------------------------------------
// Status checks

static void check_cuda(cudaError_t e, const char *what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FATAL line %d: %s -> %s (%d): %s\n", line, what, cudaGetErrorName(e), (int)e,
                 cudaGetErrorString(e));
    std::exit(2);
  }
}
static void check_cublas(cublasStatus_t s, const char *what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "FATAL line %d: %s -> cublas status %d\n", line, what, (int)s);
    std::exit(2);
  }
}
#define CK(x) check_cuda((x), #x, __LINE__)
#define CKB(x) check_cublas((x), #x, __LINE__)

#include "host_data.cuh"

// ------------------------------------------------------------------------------------------------
// Manifest and library

struct Manifest {
  std::map<std::string, std::string> kv;
  explicit Manifest(const std::string &path) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "FATAL: cannot read %s\n", path.c_str());
      std::exit(2);
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto eq = line.find('=');
      if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  std::string get(const std::string &k) const {
    auto it = kv.find(k);
    if (it == kv.end()) {
      std::fprintf(stderr, "FATAL: manifest has no %s\n", k.c_str());
      std::exit(2);
    }
    return it->second;
  }
  int geti(const std::string &k) const { return std::atoi(get(k).c_str()); }
  std::vector<std::string> kernels() const {
    std::vector<std::string> out;
    std::stringstream ss(get("kernels"));
    std::string s;
    while (std::getline(ss, s, ',')) out.push_back(s);
    return out;
  }
};

static std::vector<char> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "FATAL: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// A GEMM-like kernel: a function pointer (cubin kernel or compiled-in variant) plus its launch data.
struct GemmKernel {
  std::string name;
  const void *func = nullptr;
  bool bias_relu = false;  // else lincomb
  bool b_col_major = false;
  int align_b = 1;
  int tile_m = 0, tile_n = 0, threads = 0, smem = 0;
  bool shipped = false;
};

static void launch_gemm(const GemmKernel &k, int M, int N, int K, float alpha, const float *A, int lda,
                        const float *B, int ldb, float beta, const float *bias, float *C, int ldc,
                        cudaStream_t stream = 0) {
  dim3 grid((M + k.tile_m - 1) / k.tile_m, (N + k.tile_n - 1) / k.tile_n, 1);
  dim3 block(k.threads, 1, 1);
  if (k.bias_relu) {
    void *args[] = {&M, &N, &K, (void *)&A, &lda, (void *)&B, &ldb, (void *)&bias, &C, &ldc};
    CK(cudaLaunchKernel(k.func, grid, block, args, k.smem, stream));
  } else {
    void *args[] = {&M, &N, &K, &alpha, (void *)&A, &lda, (void *)&B, &ldb, &beta, &C, &ldc};
    CK(cudaLaunchKernel(k.func, grid, block, args, k.smem, stream));
  }
}

static const void *g_epilogue = nullptr;
static void launch_epilogue(dim3 grid, dim3 block, int M, int N, const float *X, int ldx, const float *bias,
                            float *Y, int ldy, cudaStream_t stream = 0) {
  void *args[] = {&M, &N, (void *)&X, &ldx, (void *)&bias, &Y, &ldy};
  CK(cudaLaunchKernel(g_epilogue, grid, block, args, 0, stream));
}

// ------------------------------------------------------------------------------------------------
// Tuning variants compiled in from the headers (same code as the shipped instances).

using cg4j::GemmShape;
using cg4j::ThreadShape;
using cg4j::layout::ColumnMajor;
using cg4j::layout::RowMajor;
using LinComb = cg4j::epilogue::thread::LinearCombination;
using BiasRelu = cg4j::epilogue::thread::LinearCombinationBiasRelu;
using cg4j::gemm::threadblock::GemmGroupedThreadblockSwizzle;
using cg4j::gemm::threadblock::GemmIdentityThreadblockSwizzle;

#define CG4J_OUTPUT_OP_LINCOMB LinComb
#define CG4J_OUTPUT_OP_BIAS_RELU BiasRelu
#define VARIANT(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LB, AL, ST, PAD, MINB, SWZ, ...)                            \
  VARIANT_HELD_B(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LB, AL, ST, PAD, MINB, SWZ,                            \
                 (__VA_ARGS__ + 0 ? __VA_ARGS__ + 0 : 1), 1)
// The same with the copies that a register-staged B loader holds at once (HeldCopiesB).
#define VARIANT_HELD_B(NAME, EPI, TBM, TBN, TBK, WM, WN, TM, TN, LB, AL, ST, PAD, MINB, SWZ, COPY_STEPS, HELD_B)     \
  using NAME##_t = cg4j::SimtSgemm<GemmShape<TBM, TBN, TBK>, GemmShape<WM, WN, TBK>, ThreadShape<TM, TN>, LB, AL, \
                                   ST, CG4J_OUTPUT_OP_##EPI, PAD, COPY_STEPS, SWZ, HELD_B>;                      \
  CG4J_SGEMM_##EPI##_ENTRY(NAME, NAME##_t, MINB)                                                             \
  static GemmKernel NAME##_info() {                                                                          \
    GemmKernel k;                                                                                            \
    k.name = #NAME;                                                                                          \
    k.func = (const void *)NAME;                                                                             \
    k.bias_relu = std::string(#EPI) == "BIAS_RELU";                                                          \
    k.b_col_major = (LB::kLetter == 'n');                                                                    \
    k.align_b = AL;                                                                                          \
    k.tile_m = TBM;                                                                                          \
    k.tile_n = TBN;                                                                                          \
    k.threads = NAME##_t::kThreads;                                                                          \
    k.smem = NAME##_t::kSharedStorageBytes;                                                                  \
    return k;                                                                                                \
  }

using Grouped8 = GemmGroupedThreadblockSwizzle<8>;
// Earlier large-tile versions, kept for side-by-side numbers (see PERFORMANCE.md).
VARIANT(v_128x128x8_s4_t8x8_ttt,         LINCOMB, 128, 128, 8, 32, 64, 8, 8, RowMajor, 1, 4, 4, 2, Grouped8)
VARIANT(v_128x128x8_s4_t8x8_ttt_alignB4, LINCOMB, 128, 128, 8, 32, 64, 8, 8, RowMajor, 4, 4, 4, 2, Grouped8)
VARIANT(v_128x128x8_s4_t8x8_tnt,         LINCOMB, 128, 128, 8, 32, 64, 8, 8, ColumnMajor, 1, 4, 4, 2, Grouped8)
// Seed tile with padded (not swizzled) B: 19968 B instead of the seed's 19200.
VARIANT(v_64x32x16_s3_t8x4_tnt_br_pad4,  BIAS_RELU, 64, 32, 16, 32, 32, 8, 4, ColumnMajor, 1, 3, 4, 4, Grouped8)

// The shipped large tnt align4 tile with both of a thread's B loads of a k-tile issued at its first
// k step and stored at its last before the barrier (a whole k-tile of math behind each load instead
// of 6 k steps): at 2 blocks per SM it spills on sm_90 (44 bytes), without the cap it takes 165
// registers and 1 block per SM (PERFORMANCE.md, "Prefetching a k-tile ahead").
VARIANT_HELD_B(v_128x128x16_s3_t8x8_tnt_align4_held2,      LINCOMB, 128, 128, 16, 32, 64, 8, 8, ColumnMajor, 4, 3, 4, 2, Grouped8, 1, 2)
VARIANT_HELD_B(v_128x128x16_s3_t8x8_tnt_align4_held2_min1, LINCOMB, 128, 128, 16, 32, 64, 8, 8, ColumnMajor, 4, 3, 4, 1, Grouped8, 1, 2)

static std::vector<GemmKernel> variants() {
  return {v_128x128x8_s4_t8x8_ttt_info(), v_128x128x8_s4_t8x8_ttt_alignB4_info(), v_128x128x8_s4_t8x8_tnt_info(),
          v_64x32x16_s3_t8x4_tnt_br_pad4_info(), v_128x128x16_s3_t8x8_tnt_align4_held2_info(),
          v_128x128x16_s3_t8x8_tnt_align4_held2_min1_info()};
}

// ------------------------------------------------------------------------------------------------
// Host data and reference

static int g_failures = 0;
static int g_checks = 0;
static double g_worst = 0;

/// ‖out − ref‖ / ‖ref‖ over the M x N view; any NaN/Inf fails; padding and guard must stay poisoned.
/// `floor2` (a squared norm, optional) raises the denominator to the size of the terms that were
/// summed: for alpha*AB + beta*C a 1x1 result can cancel to near zero, and float rounding is
/// relative to the terms, not to their sum. For the shapes here it only matters at tiny M*N.
static bool compare(const char *what, const std::vector<float> &out, const std::vector<double> &ref, int M, int N,
                    int ld, size_t valid_floats, double floor2 = 0) {
  double num = 0, den = 0;
  long long bad = 0, stray = 0;
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < ld; ++n) {
      float v = out[(size_t)m * ld + n];
      if (n < N) {
        if (!std::isfinite(v)) {
          ++bad;
          continue;
        }
        double d = v - ref[(size_t)m * N + n];
        num += d * d;
        den += ref[(size_t)m * N + n] * ref[(size_t)m * N + n];
      } else if (!is_poison(v)) {
        ++stray;
      }
    }
  }
  for (size_t i = valid_floats; i < out.size(); ++i)
    if (!is_poison(out[i])) ++stray;
  den = std::max(den, floor2);
  double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  bool ok = bad == 0 && stray == 0 && rel < 1e-5;
  ++g_checks;
  if (ok) {
    g_worst = std::max(g_worst, rel);
  } else {
    ++g_failures;
    std::printf("  FAIL %s: rel_err=%.3e non_finite=%lld stray_writes=%lld\n", what, rel, bad, stray);
  }
  return ok;
}

static void reference_ab(const std::vector<float> &A, int lda, const std::vector<float> &Brow, int ldb, int M,
                         int N, int K, std::vector<double> &AB) {
  AB.assign((size_t)M * N, 0.0);
#pragma omp parallel for schedule(dynamic, 4)
  for (int m = 0; m < M; ++m) {
    double *row = &AB[(size_t)m * N];
    for (int k = 0; k < K; ++k) {
      double a = A[(size_t)m * lda + k];
      const float *b = &Brow[(size_t)k * ldb];
      for (int n = 0; n < N; ++n) row[n] += a * (double)b[n];
    }
  }
}

struct Shape3 {
  int M, N, K;
  bool padded;  // odd leading-dimension padding and a 1-float pointer offset (misaligned rows)
};

/// Checks one kernel on one shape: lincomb with beta = 0 (C poisoned) and beta != 0, or bias+ReLU.
static void check_gemm(const GemmKernel &k, const Shape3 &s, uint64_t seed) {
  // align4 with B stored [N,K] needs K (its leading dimension's minimum) a multiple of 4: such a
  // kernel gets each shape with K rounded up to one, and the padded shapes' ldb 4 floats longer.
  const bool vector_n = k.b_col_major && k.align_b == 4;
  const int M = s.M, N = s.N, K = vector_n ? (s.K + 3) / 4 * 4 : s.K;
  bool pad = s.padded && k.align_b == 1;
  int off = pad ? 1 : 0;
  int lda = K + (pad ? 3 : 0);
  int ldb_row = N + (pad ? 5 : (k.align_b == 4 ? (4 - N % 4) % 4 : 0));  // B [K,N]
  int ldb_col = K + (pad ? 5 : (vector_n && s.padded ? 4 : 0));        // B stored [N,K]
  int ldc = N + (pad ? 1 : 0);
  Rng rng(seed);
  std::vector<float> hA((size_t)M * lda + off), hB_row((size_t)K * ldb_row, 0.f), hB_col((size_t)N * ldb_col + off),
      hbias(N), hC((size_t)M * ldc + kGuard);
  for (auto &v : hA) v = rng.uniform();
  for (int kk = 0; kk < K; ++kk)
    for (int n = 0; n < ldb_row; ++n) hB_row[(size_t)kk * ldb_row + n] = rng.uniform();
  for (int n = 0; n < N; ++n)
    for (int kk = 0; kk < K; ++kk) hB_col[off + (size_t)n * ldb_col + kk] = hB_row[(size_t)kk * ldb_row + n];
  for (auto &v : hbias) v = rng.uniform();
  std::vector<double> AB;
  {
    std::vector<float> Aview((size_t)M * lda);
    std::memcpy(Aview.data(), hA.data() + off, Aview.size() * 4);
    reference_ab(Aview, lda, hB_row, ldb_row, M, N, K, AB);
  }
  DevBuf dA(hA.size()), dB(k.b_col_major ? hB_col.size() : hB_row.size() + off), dbias(N), dC(hC.size());
  dA.upload(hA);
  if (k.b_col_major) {
    dB.upload(hB_col);
  } else {
    std::vector<float> tmp(off, 0.f);
    tmp.insert(tmp.end(), hB_row.begin(), hB_row.end());
    dB.upload(tmp);
  }
  dbias.upload(hbias);
  const float *A = dA.p + off;
  const float *B = dB.p + off;
  int ldb = k.b_col_major ? ldb_col : ldb_row;
  char what[256];
  std::vector<double> ref((size_t)M * N);
  std::vector<float> poisoned(hC.size(), poison());

  if (k.bias_relu) {
    dC.upload(poisoned);
    launch_gemm(k, M, N, K, 0, A, lda, B, ldb, 0, dbias.p, dC.p, ldc);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double terms_ab = 0, terms_bias = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double v = AB[(size_t)m * N + n] + hbias[n];
        ref[(size_t)m * N + n] = v < 0 ? 0 : v;
        terms_ab += AB[(size_t)m * N + n] * AB[(size_t)m * N + n];
        terms_bias += (double)hbias[n] * hbias[n];
      }
    std::snprintf(what, sizeof what, "%s M=%d N=%d K=%d%s", k.name.c_str(), M, N, K, pad ? " padded" : "");
    compare(what, dC.download(), ref, M, N, ldc, (size_t)M * ldc, std::max(terms_ab, terms_bias));
  } else {
    // beta == 0: C is NaN on entry and must not be read.
    float alpha = 1.5f;
    dC.upload(poisoned);
    launch_gemm(k, M, N, K, alpha, A, lda, B, ldb, 0.0f, nullptr, dC.p, ldc);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = alpha * AB[i];
    std::snprintf(what, sizeof what, "%s M=%d N=%d K=%d beta=0%s", k.name.c_str(), M, N, K, pad ? " padded" : "");
    compare(what, dC.download(), ref, M, N, ldc, (size_t)M * ldc);
    // beta != 0: C random inside the view, poison in the padding and guard.
    alpha = -0.75f;
    float beta = 0.5f;
    std::vector<float> c0 = poisoned;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) c0[(size_t)m * ldc + n] = rng.uniform();
    dC.upload(c0);
    launch_gemm(k, M, N, K, alpha, A, lda, B, ldb, beta, nullptr, dC.p, ldc);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double terms_ab = 0, terms_c = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double tab = alpha * AB[(size_t)m * N + n], tc = (double)beta * c0[(size_t)m * ldc + n];
        ref[(size_t)m * N + n] = tab + tc;
        terms_ab += tab * tab;
        terms_c += tc * tc;
      }
    std::snprintf(what, sizeof what, "%s M=%d N=%d K=%d beta=0.5%s", k.name.c_str(), M, N, K, pad ? " padded" : "");
    compare(what, dC.download(), ref, M, N, ldc, (size_t)M * ldc, std::max(terms_ab, terms_c));
  }
}

static void check_epilogue(int M, int N, dim3 grid, dim3 block, bool in_place, bool padded, uint64_t seed) {
  int ldx = N + (padded ? 3 : 0), ldy = N + (padded ? 1 : 0);
  if (in_place) ldy = ldx;
  Rng rng(seed);
  std::vector<float> hx((size_t)M * ldx + kGuard, poison()), hbias(N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) hx[(size_t)m * ldx + n] = rng.uniform();
  for (auto &v : hbias) v = rng.uniform();
  std::vector<double> ref((size_t)M * N);
  double terms_x = 0, terms_bias = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double v = (double)hx[(size_t)m * ldx + n] + hbias[n];
      ref[(size_t)m * N + n] = v < 0 ? 0 : v;
      terms_x += (double)hx[(size_t)m * ldx + n] * hx[(size_t)m * ldx + n];
      terms_bias += (double)hbias[n] * hbias[n];
    }
  DevBuf dx(hx.size()), dbias(N), dy((size_t)M * ldy + kGuard);
  dx.upload(hx);
  dbias.upload(hbias);
  float *Y = in_place ? dx.p : dy.p;
  if (!in_place) dy.upload(std::vector<float>(dy.n, poison()));
  launch_epilogue(grid, block, M, N, dx.p, ldx, dbias.p, Y, ldy);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  char what[256];
  std::snprintf(what, sizeof what, "epilogue M=%d N=%d grid={%u,%u,%u} block={%u,%u,%u}%s%s", M, N, grid.x, grid.y,
                grid.z, block.x, block.y, block.z, in_place ? " in-place" : "", padded ? " padded" : "");
  compare(what, (in_place ? dx : dy).download(), ref, M, N, ldy, (size_t)M * ldy, std::max(terms_x, terms_bias));
}

// ------------------------------------------------------------------------------------------------
// Timing

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Median over `samples` of the time of `iters` back-to-back calls of fn, in milliseconds per call.
static double time_ms(const std::function<void()> &fn, int warmup, int samples, int iters) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < warmup; ++i) fn();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iters; ++i) fn();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms / iters);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return median(t);
}

struct Row {
  std::string what;
  double ms;
  double tflops;  // 0 when not a GEMM
  std::string vs;
};
static std::vector<Row> g_rows;

static void fill_random(float *p, size_t n, uint64_t seed) {
  std::vector<float> h(n);
  Rng r(seed);
  for (auto &v : h) v = r.uniform();
  CK(cudaMemcpy(p, h.data(), n * 4, cudaMemcpyHostToDevice));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <kernels/build dir> [--quick]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  bool quick = argc > 2 && std::string(argv[2]) == "--quick";
  Manifest man(dir + "/manifest.properties");

  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  int sm_clock_khz = 0;
  CK(cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, dev));
  std::printf("device: %s, cc %d.%d, %d SMs, max SM clock %d MHz, smem/block optin %zu B\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, sm_clock_khz / 1000, prop.sharedMemPerBlockOptin);
  const char *tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
  std::printf("NVIDIA_TF32_OVERRIDE=%s\n", tf32 ? tf32 : "(unset)");

  // Load the shipped cubin exactly as the Java side does.
  std::string cubin_name = man.get("cubin.sm_90");
  std::vector<char> image = read_file(dir + "/" + cubin_name);
  cudaLibrary_t lib;
  CK(cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  std::printf("loaded %s (%zu bytes) with cudaLibraryLoadData\n", cubin_name.c_str(), image.size());

  std::vector<GemmKernel> shipped;
  for (const std::string &name : man.kernels()) {
    cudaKernel_t kern;
    CK(cudaLibraryGetKernel(&kern, lib, name.c_str()));
    std::string fam = man.get("kernel." + name + ".family");
    if (fam == "epilogue_bias_relu") {
      g_epilogue = (const void *)kern;
      continue;
    }
    // Split-K and GEMV instances take other parameters (a workspace, a reduction count); the Java
    // suite checks them (SplitKTest, GemvTest), and this harness launches only the tiled GEMMs. The
    // tensor-core ones (math 3xtf32 or tf32) read A 16 bytes at a time and have their own tolerance:
    // test/tensor_op_test.cu checks and times them.
    if (fam != "sgemm_lincomb" && fam != "sgemm_bias_relu") continue;
    if (man.get("kernel." + name + ".math") != "fp32") continue;
    GemmKernel k;
    k.name = name;
    k.func = (const void *)kern;
    k.shipped = true;
    k.bias_relu = fam == "sgemm_bias_relu";
    k.b_col_major = man.get("kernel." + name + ".layout") == "tnt";
    k.align_b = man.geti("kernel." + name + ".alignment");
    k.tile_m = man.geti("kernel." + name + ".tileM");
    k.tile_n = man.geti("kernel." + name + ".tileN");
    k.threads = man.geti("kernel." + name + ".threads");
    k.smem = man.geti("kernel." + name + ".sharedMemBytes");
    CK(cudaKernelSetAttributeForDevice(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, k.smem, dev));
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, k.func);
    if (e == cudaSuccess) {
      std::printf("  %-58s threads=%3d smem=%6d regs=%3d local=%zu\n", name.c_str(), k.threads, k.smem, fa.numRegs,
                  fa.localSizeBytes);
    } else {
      std::printf("  %-58s threads=%3d smem=%6d (cudaFuncGetAttributes: %s)\n", name.c_str(), k.threads, k.smem,
                  cudaGetErrorName(e));
      cudaGetLastError();
    }
    shipped.push_back(k);
  }
  if (!g_epilogue) {
    std::fprintf(stderr, "FATAL: no epilogue kernel in manifest\n");
    return 2;
  }
  std::vector<GemmKernel> vars = variants();
  for (auto &v : vars) {
    CK(cudaFuncSetAttribute(v.func, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, v.func));
    std::printf("  %-58s threads=%3d smem=%6d regs=%3d local=%zu (variant)\n", v.name.c_str(), v.threads, v.smem,
                fa.numRegs, fa.localSizeBytes);
  }

  // ---------------------------------------------------------------------------------------------
  // Correctness
  std::vector<Shape3> shapes;
  for (int s : {1, 7, 63, 65, 127, 129, 1000, 1023}) shapes.push_back({s, s, s, s % 2 == 1});
  shapes.push_back({1, 1023, 7, true});
  shapes.push_back({1000, 1, 129, false});
  shapes.push_back({65, 127, 1023, true});
  shapes.push_back({129, 63, 2, false});
  shapes.push_back({300, 17, 1000, true});
  shapes.push_back({7, 1000, 65, false});
  shapes.push_back({2048, 640, 512, false});
  shapes.push_back({333, 257, 129, true});
  uint64_t seed = 1;
  std::printf("\n== correctness: %zu shipped instances x %zu shapes ==\n", shipped.size(), shapes.size());
  for (const auto &k : shipped) {
    int before = g_failures;
    for (const auto &s : shapes) check_gemm(k, s, seed++);
    std::printf("  %-58s %s\n", k.name.c_str(), g_failures == before ? "ok" : "FAILED");
  }
  for (const auto &k : vars) {
    int before = g_failures;
    for (const auto &s : {Shape3{1023, 1023, 1023, false}, Shape3{65, 127, 1023, true}, Shape3{129, 63, 2, true},
                          Shape3{2048, 640, 512, false}})
      check_gemm(k, s, seed++);
    std::printf("  %-58s %s\n", k.name.c_str(), g_failures == before ? "ok" : "FAILED");
  }
  {
    int before = g_failures;
    check_epilogue(2048, 640, dim3(256, 2), dim3(8, 32), false, false, seed++);
    check_epilogue(2048, 640, dim3(256, 2), dim3(8, 32), true, false, seed++);
    check_epilogue(1, 1, dim3(1, 1), dim3(1, 1), false, false, seed++);
    check_epilogue(1000, 1023, dim3(3, 5), dim3(32, 4), false, true, seed++);
    check_epilogue(7, 129, dim3(256, 2), dim3(8, 32), true, true, seed++);
    check_epilogue(65, 1, dim3(1, 1), dim3(8, 32), false, false, seed++);
    check_epilogue(129, 63, dim3(2, 3, 2), dim3(8, 8, 2), true, true, seed++);
    std::printf("  %-58s %s\n", "cg4j_epilogue_f32_bias_f32_relu", g_failures == before ? "ok" : "FAILED");
  }
  std::printf("correctness: %d checks, %d failed, worst passing rel_err %.3e\n", g_checks, g_failures, g_worst);

  // ---------------------------------------------------------------------------------------------
  // Benchmarks
  cublasHandle_t h;
  CKB(cublasCreate(&h));
  CKB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // FP32 FFMA, no TF32 tensor cores
  const float one = 1.0f, zero = 0.0f;
  auto find = [&](const std::string &n) -> const GemmKernel & {
    for (auto &k : shipped)
      if (k.name == n) return k;
    std::fprintf(stderr, "FATAL: no kernel %s\n", n.c_str());
    std::exit(2);
  };
  const int S = quick ? 5 : 15;

  // Copy bandwidth (bytes read + written).
  {
    size_t bytes = size_t(1) << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    double ms = time_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); }, 3, S, 5);
    char vs[64];
    std::snprintf(vs, sizeof vs, "%.2f TB/s (read+write)", 2.0 * bytes / (ms * 1e-3) / 1e12);
    g_rows.push_back({"D2D copy 1 GiB", ms, 0, vs});
    CK(cudaFree(a));
    CK(cudaFree(b));
  }

  // 4096^3: cuBLAS vs the large tile (both layouts) and the variants.
  {
    const int n = 4096;
    const double flop = 2.0 * n * n * n;
    DevBuf A((size_t)n * n), B((size_t)n * n), C((size_t)n * n), bias(n);
    fill_random(A.p, A.n, 101);
    fill_random(B.p, B.n, 102);
    fill_random(bias.p, bias.n, 103);
    // Row-major C = A B is column-major C^T = B^T A^T.
    auto cublas_nn = [&] { CKB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B.p, n, A.p, n, &zero, C.p, n)); };
    // Row-major y = x W^T (W [N,K]) is column-major y^T = W x^T: W as col-major K x N, transposed.
    auto cublas_tn = [&] { CKB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, B.p, n, A.p, n, &zero, C.p, n)); };
    std::vector<std::pair<std::string, std::function<void()>>> cands;
    cands.push_back({"cuBLAS sgemm (row-major NN)", cublas_nn});
    const GemmKernel &big_t = find("cg4j_simt_sgemm_f32_128x128x16_3_ttt_align1_lincomb");
    const GemmKernel &big_n = find("cg4j_simt_sgemm_f32_128x128x16_3_tnt_align1_lincomb");
    cands.push_back({big_t.name, [&] { launch_gemm(big_t, n, n, n, 1, A.p, n, B.p, n, 0, nullptr, C.p, n); }});
    const GemmKernel &big_t4 = find("cg4j_simt_sgemm_f32_128x128x16_3_ttt_align4_lincomb");
    cands.push_back({big_t4.name, [&] { launch_gemm(big_t4, n, n, n, 1, A.p, n, B.p, n, 0, nullptr, C.p, n); }});
    cands.push_back({"cuBLAS sgemm (row-major, B^T: T,N)", cublas_tn});
    cands.push_back({big_n.name, [&] { launch_gemm(big_n, n, n, n, 1, A.p, n, B.p, n, 0, nullptr, C.p, n); }});
    const GemmKernel &big_n4 = find("cg4j_simt_sgemm_f32_128x128x16_3_tnt_align4_lincomb");
    cands.push_back({big_n4.name, [&] { launch_gemm(big_n4, n, n, n, 1, A.p, n, B.p, n, 0, nullptr, C.p, n); }});
    for (auto &v : vars)
      if (!v.bias_relu)
        cands.push_back({v.name, [&, v] { launch_gemm(v, n, n, n, 1, A.p, n, B.p, n, 0, nullptr, C.p, n); }});
    // Interleave rounds so that clock drift hits every candidate alike.
    std::vector<std::vector<double>> t(cands.size());
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < cands.size(); ++i) t[i].push_back(time_ms(cands[i].second, 2, S / 3 + 1, 1));
    double cublas_ms = median(t[0]);
    for (size_t i = 0; i < cands.size(); ++i) {
      double ms = median(t[i]);
      char vs[64];
      std::snprintf(vs, sizeof vs, "%.1f%% of cuBLAS NN", 100.0 * cublas_ms / ms);
      g_rows.push_back({"4096^3 " + cands[i].first, ms, flop / (ms * 1e-3) / 1e12, vs});
    }
  }

  // Linear: y = relu(x W^T + b), fused vs cuBLAS (T,N) + our epilogue, at the seed shape and 4096^3.
  for (auto shp : {Shape3{2048, 640, 512, false}, Shape3{4096, 4096, 4096, false}}) {
    const int M = shp.M, N = shp.N, K = shp.K;
    const double flop = 2.0 * M * N * K;
    DevBuf X((size_t)M * K), W((size_t)N * K), Y((size_t)M * N), bias(N);
    fill_random(X.p, X.n, 201);
    fill_random(W.p, W.n, 202);
    fill_random(bias.p, bias.n, 203);
    dim3 eg((M + 7) / 8, 2), eb(8, 32);  // the seed's <<<{256,2},{8,32}>>> at M = 2048
    auto cublas_lin = [&] {
      CKB(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W.p, K, X.p, K, &zero, Y.p, N));
    };
    auto epi = [&] { launch_epilogue(eg, eb, M, N, Y.p, N, bias.p, Y.p, N); };
    const GemmKernel &seed_fused = find("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_bias_f32_relu");
    const GemmKernel &seed_plain = find("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_lincomb");
    const GemmKernel &big_fused = find("cg4j_simt_sgemm_f32_128x128x16_3_tnt_align1_bias_f32_relu");
    const GemmKernel &big_fused4 = find("cg4j_simt_sgemm_f32_128x128x16_3_tnt_align4_bias_f32_relu");
    const GemmKernel &seed_fused4 = find("cg4j_simt_sgemm_f32_64x32x16_3_tnt_align4_bias_f32_relu");
    std::vector<std::pair<std::string, std::function<void()>>> cands = {
        {"cuBLAS sgemm + cg4j epilogue (2 kernels)", [&] { cublas_lin(); epi(); }},
        {"cuBLAS sgemm alone", cublas_lin},
        {"cg4j epilogue alone <<<{" + std::to_string(eg.x) + ",2},{8,32}>>>", epi},
        {"fused " + big_fused.name, [&] { launch_gemm(big_fused, M, N, K, 0, X.p, K, W.p, K, 0, bias.p, Y.p, N); }},
        {"fused " + big_fused4.name, [&] { launch_gemm(big_fused4, M, N, K, 0, X.p, K, W.p, K, 0, bias.p, Y.p, N); }},
        {"fused " + seed_fused.name, [&] { launch_gemm(seed_fused, M, N, K, 0, X.p, K, W.p, K, 0, bias.p, Y.p, N); }},
        {"fused " + seed_fused4.name, [&] { launch_gemm(seed_fused4, M, N, K, 0, X.p, K, W.p, K, 0, bias.p, Y.p, N); }},
        {"seed 2 nodes: 64x32x16 lincomb + epilogue",
         [&] {
           launch_gemm(seed_plain, M, N, K, 1, X.p, K, W.p, K, 0, nullptr, Y.p, N);
           epi();
         }},
    };
    for (auto &v : vars)
      if (v.bias_relu && v.b_col_major)
        cands.push_back({"fused " + v.name, [&, v] { launch_gemm(v, M, N, K, 0, X.p, K, W.p, K, 0, bias.p, Y.p, N); }});
    int iters = M == 4096 ? 1 : 20;
    std::vector<std::vector<double>> t(cands.size());
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < cands.size(); ++i) t[i].push_back(time_ms(cands[i].second, 3, S / 3 + 1, iters));
    double base = median(t[0]);
    char tag[64];
    std::snprintf(tag, sizeof tag, "Linear %dx%dx%d ", M, N, K);
    for (size_t i = 0; i < cands.size(); ++i) {
      double ms = median(t[i]);
      char vs[64];
      std::snprintf(vs, sizeof vs, "%.2fx vs cuBLAS+epilogue", base / ms);
      bool gemm = cands[i].first.find("epilogue alone") == std::string::npos;
      g_rows.push_back({tag + cands[i].first, ms, gemm ? flop / (ms * 1e-3) / 1e12 : 0, vs});
    }
  }
  CKB(cublasDestroy(h));
  CK(cudaLibraryUnload(lib));

  std::printf("\n== results (median; ms per call) ==\n");
  std::printf("%-82s %10s %8s  %s\n", "what", "ms", "TFLOP/s", "");
  for (auto &r : g_rows) {
    if (r.tflops > 0)
      std::printf("%-82s %10.4f %8.2f  %s\n", r.what.c_str(), r.ms, r.tflops, r.vs.c_str());
    else
      std::printf("%-82s %10.4f %8s  %s\n", r.what.c_str(), r.ms, "", r.vs.c_str());
  }
  std::printf("correctness: %d checks, %d failed, worst passing rel_err %.3e\n", g_checks, g_failures, g_worst);
  return g_failures == 0 ? 0 : 1;
}
