// cudagraph4j native baseline: the same CUDA runtime calls the Java JMH benchmarks make, timed from
// C++ the same way, so the Java/native ratio can be read inside one run. See README.md beside this.
//
// Kernels are loaded the way the Java library loads them: cudaLibraryLoadData of a cubin/fatbin image
// read from a file, cudaLibraryGetKernel by name, cudaLaunchKernel((const void*)kernel, ...). This
// program contains no device code of its own; it links only the CUDA runtime (shared, like the
// Java side's libcudart.so.13).
//
//   launch_overhead [--empty FILE] [--kernels FILE|DIR] [--json FILE] [--time S] [--warmup S]
//                   [--filter A,B,...] [--no-check] [--list]
//                   [--sgemm NAME] [--fused NAME] [--epilogue NAME] [--smem BYTES]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

// ------------------------------------------------------------------------------------------------
// Checked calls: every status is checked; a failure prints the error's name and message and aborts.

[[noreturn]] static void cuda_fail(cudaError_t e, const char *expr, const char *file, int line) {
  std::fprintf(stderr, "CUDA error %s (%d): %s\n  at %s\n  %s:%d\n", cudaGetErrorName(e), (int)e,
               cudaGetErrorString(e), expr, file, line);
  std::fflush(stderr);
  std::abort();
}
#define CK(call)                                                 \
  do {                                                           \
    cudaError_t ck_status_ = (call);                             \
    if (__builtin_expect(ck_status_ != cudaSuccess, 0))          \
      cuda_fail(ck_status_, #call, __FILE__, __LINE__);          \
  } while (0)

[[noreturn]] static void die(const std::string &msg) {
  std::fprintf(stderr, "launch_overhead: %s\n", msg.c_str());
  std::exit(2);
}

using Clock = std::chrono::steady_clock;
static inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ------------------------------------------------------------------------------------------------
// Options

struct Options {
  std::string empty_path;    // empty.fatbin
  std::string kernels_path;  // cubin/fatbin/ptx file, or a folder with cg4j_kernels.sm_XY.cubin
  std::string json_path;
  double time_s = 0.8;       // measurement time per benchmark (wall clock, setup excluded)
  double warmup_s = 0.15;    // warm-up time per benchmark
  int target_samples = 200;  // the batch size is picked so that about this many samples fit in time_s
  int min_samples = 15;
  int max_samples = 2000;
  std::vector<std::string> filters;
  bool check = true;
  bool list = false;
  std::string sgemm_name = "cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_lincomb";
  std::string fused_name = "cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_bias_f32_relu";
  std::string epilogue_name = "cg4j_epilogue_f32_bias_f32_relu";
  int sgemm_smem = 19200;     // dynamic shared memory of the 64x32x16 3-stage instances (manifest)
  int sgemm_tile_m = 64, sgemm_tile_n = 32, sgemm_threads = 64;
  int M = 2048, N = 640;      // rows, out features (= in features, so layers chain)
};
static Options g_opt;

static std::string exe_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string p(buf);
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

static bool file_exists(const std::string &p) { return access(p.c_str(), R_OK) == 0; }

static std::vector<char> read_file(const std::string &path, bool nul_terminate) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (nul_terminate) data.push_back('\0');  // PTX must be NUL-terminated; harmless for binaries
  return data;
}

static void usage() {
  std::printf(
      "usage: launch_overhead [options]\n"
      "  --empty FILE       fatbin/cubin holding extern \"C\" empty_kernel (default: <exe dir>/empty.fatbin)\n"
      "  --kernels PATH     cg4j kernels cubin/fatbin/PTX, or a folder holding cg4j_kernels.sm_XY.cubin\n"
      "                     (default: <exe dir>/../../../kernels/build)\n"
      "  --json FILE        write results as JSON\n"
      "  --time S           measurement seconds per benchmark (default 0.8)\n"
      "  --warmup S         warm-up seconds per benchmark (default 0.15)\n"
      "  --samples N        target samples per benchmark (default 200)\n"
      "  --filter A,B       run only benchmarks whose name contains one of A, B, ...\n"
      "  --no-check         skip the numerical check of the seed layer\n"
      "  --list             list benchmark names and exit\n"
      "  --sgemm NAME       unfused sgemm instance (default %s)\n"
      "  --fused NAME       fused sgemm+bias+relu instance (default %s)\n"
      "  --epilogue NAME    standalone bias+relu kernel (default %s)\n"
      "  --smem BYTES       dynamic shared memory of the sgemm instances (default 19200)\n",
      g_opt.sgemm_name.c_str(), g_opt.fused_name.c_str(), g_opt.epilogue_name.c_str());
}

static void parse_args(int argc, char **argv) {
  auto need = [&](int &i) -> std::string {
    if (i + 1 >= argc) die(std::string("missing value after ") + argv[i]);
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--empty") g_opt.empty_path = need(i);
    else if (a == "--kernels") g_opt.kernels_path = need(i);
    else if (a == "--json") g_opt.json_path = need(i);
    else if (a == "--time") g_opt.time_s = std::atof(need(i).c_str());
    else if (a == "--warmup") g_opt.warmup_s = std::atof(need(i).c_str());
    else if (a == "--samples") g_opt.target_samples = std::max(1, std::atoi(need(i).c_str()));
    else if (a == "--filter") {
      std::stringstream ss(need(i));
      std::string f;
      while (std::getline(ss, f, ',')) if (!f.empty()) g_opt.filters.push_back(f);
    } else if (a == "--no-check") g_opt.check = false;
    else if (a == "--list") g_opt.list = true;
    else if (a == "--sgemm") g_opt.sgemm_name = need(i);
    else if (a == "--fused") g_opt.fused_name = need(i);
    else if (a == "--epilogue") g_opt.epilogue_name = need(i);
    else if (a == "--smem") g_opt.sgemm_smem = std::atoi(need(i).c_str());
    else if (a == "-h" || a == "--help") { usage(); std::exit(0); }
    else die("unknown option " + a + " (try --help)");
  }
  std::string dir = exe_dir();
  if (g_opt.empty_path.empty()) g_opt.empty_path = dir + "/empty.fatbin";
  if (g_opt.kernels_path.empty()) g_opt.kernels_path = dir + "/../../../kernels/build";
}

/// Whether any benchmark under `prefix` can be selected by the filters.
static bool any_selected(const std::string &prefix) {
  if (g_opt.filters.empty()) return true;
  for (auto &f : g_opt.filters)
    if (f.find(prefix) != std::string::npos || prefix.find(f) != std::string::npos) return true;
  return false;
}

static bool selected(const std::string &name) {
  if (g_opt.filters.empty()) return true;
  for (auto &f : g_opt.filters)
    if (name.find(f) != std::string::npos) return true;
  return false;
}

// ------------------------------------------------------------------------------------------------
// Measurement. A benchmark is a function op(reps) that performs `reps` operations and returns the
// seconds spent in its timed region (for most benchmarks the whole batch; for the host-only and
// lifecycle benchmarks only the calls themselves, with setup/teardown outside). One sample =
// timed seconds / reps. The batch size is chosen after warm-up so that about target_samples samples
// fit into time_s; sampling stops when time_s of wall clock has passed (and at least min_samples
// were taken) or at max_samples.

struct Result {
  std::string name, unit;
  double median = 0, p10 = 0, p90 = 0, mean = 0;
  long samples = 0, reps = 0;
};
static std::vector<Result> g_results;
static std::vector<std::string> g_names;  // for --list

using Op = std::function<double(long reps)>;

static double quantile(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return NAN;
  double pos = q * (sorted.size() - 1);
  size_t lo = (size_t)std::floor(pos), hi = std::min(lo + 1, sorted.size() - 1);
  double f = pos - lo;
  return sorted[lo] * (1 - f) + sorted[hi] * f;
}

// scale: seconds -> unit (1e6 for us, 1e9 for ns)
static void bench(const std::string &name, const char *unit, double scale, const Op &op) {
  if (g_opt.list) { g_names.push_back(name); return; }
  // Warm-up: at least 3 single operations and warmup_s of wall clock.
  auto w0 = Clock::now();
  int warm = 0;
  double last = 0;
  while (warm < 3 || seconds_since(w0) < g_opt.warmup_s) {
    last = op(1);
    ++warm;
  }
  // Calibrate: double the batch until one batch takes >= time_s / target_samples.
  const double target = g_opt.time_s / g_opt.target_samples;
  long reps = 1;
  if (last < target) {
    reps = std::max(1L, (long)(target / std::max(last, 1e-9)));
    for (int tries = 0; tries < 30; ++tries) {
      double t = op(reps);
      if (t >= target * 0.5) {
        if (t < target) reps = (long)std::ceil(reps * target / t);
        break;
      }
      reps *= 2;
    }
  }
  std::vector<double> s;
  s.reserve(g_opt.max_samples);
  auto m0 = Clock::now();
  while ((long)s.size() < g_opt.max_samples &&
         ((long)s.size() < g_opt.min_samples || seconds_since(m0) < g_opt.time_s)) {
    double t = op(reps);
    s.push_back(t / reps * scale);
  }
  Result r;
  r.name = name;
  r.unit = unit;
  r.samples = (long)s.size();
  r.reps = reps;
  double sum = 0;
  for (double v : s) sum += v;
  r.mean = sum / s.size();
  std::sort(s.begin(), s.end());
  r.median = quantile(s, 0.5);
  r.p10 = quantile(s, 0.1);
  r.p90 = quantile(s, 0.9);
  g_results.push_back(r);
  std::printf("  %-44s %10.3f %-3s  (p10 %.3f, p90 %.3f, %ld samples x %ld)\n", name.c_str(), r.median, unit,
              r.p10, r.p90, r.samples, r.reps);
  std::fflush(stdout);
  // Nothing may be left failing behind a benchmark.
  CK(cudaGetLastError());
}

// ------------------------------------------------------------------------------------------------
// Globals shared by the benchmarks

static cudaStream_t g_stream;
static cudaKernel_t g_empty;
static const void *g_empty_fn;  // (const void*)g_empty, what cudaLaunchKernel takes
static const void *g_sgemm_fn, *g_fused_fn, *g_epi_fn;
static bool g_have_seed_kernels = false;

static inline void launch_empty(cudaStream_t s, dim3 grid = dim3(1), dim3 block = dim3(1), size_t smem = 0) {
  CK(cudaLaunchKernel(g_empty_fn, grid, block, nullptr, smem, s));
}

/// Captures fn() on g_stream (global mode) into a new graph.
static cudaGraph_t capture(const std::function<void()> &fn) {
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
  fn();
  CK(cudaStreamEndCapture(g_stream, &g));
  return g;
}

static cudaGraphExec_t instantiate(cudaGraph_t g) {
  cudaGraphExec_t e;
  CK(cudaGraphInstantiate(&e, g, 0));
  return e;
}

static size_t node_count(cudaGraph_t g) {
  size_t n = 0;
  CK(cudaGraphGetNodes(g, nullptr, &n));
  return n;
}

/// Times `op` followed by a stream synchronization, per repetition (µs per iteration): the shape
/// of every benchmark that counts the device's work. `op` is a template parameter, so it inlines.
template <class Op>
static void bench_synced(const std::string &name, Op op) {
  bench(name, "us", 1e6, [op](long reps) {
    auto t0 = Clock::now();
    for (long r = 0; r < reps; ++r) {
      op();
      CK(cudaStreamSynchronize(g_stream));
    }
    return seconds_since(t0);
  });
}

// ------------------------------------------------------------------------------------------------
// a. launch_overhead/{eager,graph}/N: N empty kernels + sync, vs one graph of N nodes + sync (us/iter)

static void bench_launch_overhead() {
  const int Ns[] = {1, 2, 8, 32, 128};
  for (int N : Ns) {
    std::string name = "launch_overhead/eager/" + std::to_string(N);
    if (!selected(name)) continue;
    bench_synced(name, [N] {
      for (int i = 0; i < N; ++i) CK(cudaLaunchKernel(g_empty_fn, dim3(1), dim3(1), nullptr, 0, g_stream));
    });
  }
  for (int N : Ns) {
    std::string name = "launch_overhead/graph/" + std::to_string(N);
    if (!selected(name)) continue;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    if (!g_opt.list) {
      g = capture([N] { for (int i = 0; i < N; ++i) launch_empty(g_stream); });
      if (node_count(g) != (size_t)N) die("graph of " + std::to_string(N) + " has wrong node count");
      e = instantiate(g);
      CK(cudaGraphUpload(e, g_stream));
      CK(cudaStreamSynchronize(g_stream));
    }
    bench_synced(name, [e] { CK(cudaGraphLaunch(e, g_stream)); });
    if (e) CK(cudaGraphExecDestroy(e));
    if (g) CK(cudaGraphDestroy(g));
  }
}

// ------------------------------------------------------------------------------------------------
// b. binding/*: host cost of single runtime calls (ns/call)

static constexpr int kQueueBound = 256;  // launches enqueued between two synchronizations

static void bench_binding() {
  // Host-only enqueue cost: only the launches are timed, in bursts of 256, each burst followed by an
  // untimed cudaStreamSynchronize so the queue never holds more than 256 launches.
  std::string name = "binding/cudaLaunchKernel";
  if (selected(name))
    bench(name, "ns", 1e9, [](long reps) {
      double t = 0;
      for (long done = 0; done < reps;) {
        long n = std::min<long>(kQueueBound, reps - done);
        auto t0 = Clock::now();
        for (long i = 0; i < n; ++i) CK(cudaLaunchKernel(g_empty_fn, dim3(1), dim3(1), nullptr, 0, g_stream));
        t += seconds_since(t0);
        CK(cudaStreamSynchronize(g_stream));
        done += n;
      }
      return t;
    });
  // Same, with the sync every 256 launches inside the timed region (amortized over the 256).
  name = "binding/cudaLaunchKernel_sync256";
  if (selected(name))
    bench(name, "ns", 1e9, [](long reps) {
      auto t0 = Clock::now();
      for (long done = 0; done < reps;) {
        long n = std::min<long>(kQueueBound, reps - done);
        for (long i = 0; i < n; ++i) CK(cudaLaunchKernel(g_empty_fn, dim3(1), dim3(1), nullptr, 0, g_stream));
        CK(cudaStreamSynchronize(g_stream));
        done += n;
      }
      return seconds_since(t0);
    });

  bool want_graph = selected("binding/cudaGraphLaunch") || selected("binding/cudaGraphLaunch_sync256");
  cudaGraph_t g = nullptr;
  cudaGraphExec_t e = nullptr;
  if (want_graph && !g_opt.list) {
    g = capture([] { launch_empty(g_stream); });
    if (node_count(g) != 1) die("one-node graph has wrong node count");
    e = instantiate(g);
    CK(cudaGraphUpload(e, g_stream));
    CK(cudaStreamSynchronize(g_stream));
  }
  name = "binding/cudaGraphLaunch";
  if (selected(name))
    bench(name, "ns", 1e9, [e](long reps) {
      double t = 0;
      for (long done = 0; done < reps;) {
        long n = std::min<long>(kQueueBound, reps - done);
        auto t0 = Clock::now();
        for (long i = 0; i < n; ++i) CK(cudaGraphLaunch(e, g_stream));
        t += seconds_since(t0);
        CK(cudaStreamSynchronize(g_stream));
        done += n;
      }
      return t;
    });
  name = "binding/cudaGraphLaunch_sync256";
  if (selected(name))
    bench(name, "ns", 1e9, [e](long reps) {
      auto t0 = Clock::now();
      for (long done = 0; done < reps;) {
        long n = std::min<long>(kQueueBound, reps - done);
        for (long i = 0; i < n; ++i) CK(cudaGraphLaunch(e, g_stream));
        CK(cudaStreamSynchronize(g_stream));
        done += n;
      }
      return seconds_since(t0);
    });
  if (e) CK(cudaGraphExecDestroy(e));
  if (g) CK(cudaGraphDestroy(g));

  name = "binding/cudaStreamQuery";
  if (selected(name)) {
    if (!g_opt.list) CK(cudaStreamSynchronize(g_stream));  // idle: every query returns cudaSuccess
    bench(name, "ns", 1e9, [](long reps) {
      auto t0 = Clock::now();
      for (long i = 0; i < reps; ++i) CK(cudaStreamQuery(g_stream));
      return seconds_since(t0);
    });
  }
  name = "binding/cudaGetLastError";
  if (selected(name))
    bench(name, "ns", 1e9, [](long reps) {
      auto t0 = Clock::now();
      for (long i = 0; i < reps; ++i) CK(cudaGetLastError());
      return seconds_since(t0);
    });
}

// ------------------------------------------------------------------------------------------------
// c. seed_linear/*: L layers of y = relu(x W^T + b), M = 2048, N = K = 640 (us/forward, incl. sync)

struct SeedModel {
  int M, N, K, L;
  float *x0 = nullptr;             // [M, K]
  std::vector<float *> W, b, y;    // W[l]: [N, K] (out x in), b[l]: [N], y[l]: [M, N]
  std::vector<float> hx0;
  std::vector<std::vector<float>> hW, hb;
};

static void fill_uniform(std::vector<float> &v, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (auto &x : v) x = d(rng);
}

static SeedModel make_model(int L, uint64_t seed) {
  SeedModel m;
  m.M = g_opt.M;
  m.N = g_opt.N;
  m.K = g_opt.N;  // in features = out features so that layers chain
  m.L = L;
  m.hx0.resize((size_t)m.M * m.K);
  fill_uniform(m.hx0, -1.f, 1.f, seed);
  CK(cudaMalloc(&m.x0, m.hx0.size() * sizeof(float)));
  CK(cudaMemcpy(m.x0, m.hx0.data(), m.hx0.size() * sizeof(float), cudaMemcpyHostToDevice));
  const float a = std::sqrt(6.0f / m.K);  // He-uniform: activations keep their scale through ReLUs
  for (int l = 0; l < L; ++l) {
    std::vector<float> w((size_t)m.N * m.K), bb(m.N);
    fill_uniform(w, -a, a, seed * 1000 + 2 * l + 1);
    fill_uniform(bb, -0.1f, 0.1f, seed * 1000 + 2 * l + 2);
    float *dw, *db, *dy;
    CK(cudaMalloc(&dw, w.size() * sizeof(float)));
    CK(cudaMalloc(&db, bb.size() * sizeof(float)));
    CK(cudaMalloc(&dy, (size_t)m.M * m.N * sizeof(float)));
    CK(cudaMemcpy(dw, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, bb.data(), bb.size() * sizeof(float), cudaMemcpyHostToDevice));
    m.W.push_back(dw);
    m.b.push_back(db);
    m.y.push_back(dy);
    m.hW.push_back(std::move(w));
    m.hb.push_back(std::move(bb));
  }
  return m;
}

static void free_model(SeedModel &m) {
  CK(cudaFree(m.x0));
  for (int l = 0; l < m.L; ++l) {
    CK(cudaFree(m.W[l]));
    CK(cudaFree(m.b[l]));
    CK(cudaFree(m.y[l]));
  }
}

/// Unfused layer, the seed's two nodes: sgemm lincomb (alpha 1, beta 0) into y, then bias+ReLU in place.
static void forward_unfused(const SeedModel &m, cudaStream_t s) {
  const dim3 sg_grid((m.M + g_opt.sgemm_tile_m - 1) / g_opt.sgemm_tile_m,
                     (m.N + g_opt.sgemm_tile_n - 1) / g_opt.sgemm_tile_n);  // {32,20}
  const dim3 sg_block(g_opt.sgemm_threads);                                   // 64
  const dim3 ep_grid((m.M + 7) / 8, 2), ep_block(8, 32);                     // {256,2},{8,32}
  for (int l = 0; l < m.L; ++l) {
    int M = m.M, N = m.N, K = m.K, lda = m.K, ldb = m.K, ldc = m.N;
    float alpha = 1.f, beta = 0.f;
    const float *A = l == 0 ? m.x0 : m.y[l - 1];
    const float *B = m.W[l];
    float *C = m.y[l];
    void *sg_args[] = {&M, &N, &K, &alpha, (void *)&A, &lda, (void *)&B, &ldb, &beta, &C, &ldc};
    CK(cudaLaunchKernel(g_sgemm_fn, sg_grid, sg_block, sg_args, g_opt.sgemm_smem, s));
    const float *X = m.y[l], *bias = m.b[l];
    float *Y = m.y[l];
    int ldx = m.N, ldy = m.N;
    void *ep_args[] = {&M, &N, (void *)&X, &ldx, (void *)&bias, &Y, &ldy};
    CK(cudaLaunchKernel(g_epi_fn, ep_grid, ep_block, ep_args, 0, s));
  }
}

/// Fused layer: one sgemm+bias+ReLU kernel.
static void forward_fused(const SeedModel &m, cudaStream_t s) {
  const dim3 sg_grid((m.M + g_opt.sgemm_tile_m - 1) / g_opt.sgemm_tile_m,
                     (m.N + g_opt.sgemm_tile_n - 1) / g_opt.sgemm_tile_n);
  const dim3 sg_block(g_opt.sgemm_threads);
  for (int l = 0; l < m.L; ++l) {
    int M = m.M, N = m.N, K = m.K, lda = m.K, ldb = m.K, ldd = m.N;
    const float *A = l == 0 ? m.x0 : m.y[l - 1];
    const float *B = m.W[l], *bias = m.b[l];
    float *D = m.y[l];
    void *args[] = {&M, &N, &K, (void *)&A, &lda, (void *)&B, &ldb, (void *)&bias, &D, &ldd};
    CK(cudaLaunchKernel(g_fused_fn, sg_grid, sg_block, args, g_opt.sgemm_smem, s));
  }
}

/// The seed's launch shapes with the empty kernel: launch cost alone, no GEMM work (extra, for the
/// launch-bound reading of the seed layer).
static void forward_shape_empty(int L, cudaStream_t s) {
  for (int l = 0; l < L; ++l) {
    launch_empty(s, dim3(32, 20), dim3(64), 19200);
    launch_empty(s, dim3(256, 2), dim3(8, 32), 0);
  }
}

static std::vector<float> download_last(const SeedModel &m) {
  std::vector<float> h((size_t)m.M * m.N);
  CK(cudaMemcpy(h.data(), m.y[m.L - 1], h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

static void poison(const SeedModel &m) {
  for (int l = 0; l < m.L; ++l) CK(cudaMemset(m.y[l], 0xFF, (size_t)m.M * m.N * sizeof(float)));  // NaN
  CK(cudaDeviceSynchronize());
}

/// Float64 reference of the last layer's output for a few rows (a row of y depends only on that row
/// of x), compared with ||out - ref|| / ||ref|| over those rows; every element must be finite.
static void check_against_reference(const SeedModel &m, const std::vector<float> &out, const char *what) {
  size_t nonfinite = 0;
  for (float v : out) nonfinite += !std::isfinite(v);
  const int rows[] = {0, 1, 63, 64, 511, 1000, 1337, 2047, 777, 1500, 31, 2046};
  double num = 0, den = 0;
  std::vector<double> cur(m.K), nxt(m.N);
  for (int r : rows) {
    if (r >= m.M) continue;
    for (int k = 0; k < m.K; ++k) cur[k] = m.hx0[(size_t)r * m.K + k];
    for (int l = 0; l < m.L; ++l) {
      for (int n = 0; n < m.N; ++n) {
        double acc = 0;
        const float *w = &m.hW[l][(size_t)n * m.K];
        for (int k = 0; k < m.K; ++k) acc += cur[k] * (double)w[k];
        acc += m.hb[l][n];
        nxt[n] = acc > 0 ? acc : 0;
      }
      cur.assign(nxt.begin(), nxt.end());
    }
    for (int n = 0; n < m.N; ++n) {
      double d = out[(size_t)r * m.N + n] - cur[n];
      num += d * d;
      den += cur[n] * cur[n];
    }
  }
  double rel = std::sqrt(num / std::max(den, 1e-300));
  bool ok = nonfinite == 0 && rel < 1e-4 && den > 0;
  std::printf("  check %-40s L=%-2d rel err %.2e, non-finite %zu: %s\n", what, m.L, rel, nonfinite,
              ok ? "ok" : "FAILED");
  if (!ok) die(std::string("numerical check failed: ") + what);
}

static void check_seed(int L) {
  SeedModel m = make_model(L, 1234 + L);
  poison(m);
  forward_unfused(m, g_stream);
  CK(cudaStreamSynchronize(g_stream));
  check_against_reference(m, download_last(m), "eager unfused (sgemm + epilogue)");
  poison(m);
  forward_fused(m, g_stream);
  CK(cudaStreamSynchronize(g_stream));
  check_against_reference(m, download_last(m), "eager fused");
  for (int fused = 0; fused < 2; ++fused) {
    cudaGraph_t g = capture([&] { fused ? forward_fused(m, g_stream) : forward_unfused(m, g_stream); });
    cudaGraphExec_t e = instantiate(g);
    poison(m);
    CK(cudaGraphLaunch(e, g_stream));
    CK(cudaStreamSynchronize(g_stream));
    check_against_reference(m, download_last(m), fused ? "graph fused" : "graph unfused");
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
  }
  free_model(m);
}

static void bench_seed_linear() {
  const int Ls[] = {1, 16};
  for (int L : Ls) {
    const std::string names[4] = {"seed_linear/eager/" + std::to_string(L), "seed_linear/graph/" + std::to_string(L),
                                  "seed_linear/fused_eager/" + std::to_string(L),
                                  "seed_linear/fused_graph/" + std::to_string(L)};
    bool any = false;
    for (auto &n : names) any |= selected(n);
    if (!any) continue;
    if (g_opt.list) {
      for (auto &n : names) if (selected(n)) g_names.push_back(n);
      continue;
    }
    if (!g_have_seed_kernels) {
      std::printf("  (seed_linear/*/%d skipped: kernels not loaded)\n", L);
      continue;
    }
    SeedModel m = make_model(L, 42 + L);
    CK(cudaStreamSynchronize(g_stream));
    cudaGraph_t gu = capture([&] { forward_unfused(m, g_stream); });
    cudaGraph_t gf = capture([&] { forward_fused(m, g_stream); });
    if (node_count(gu) != (size_t)2 * L || node_count(gf) != (size_t)L) die("seed graph has wrong node count");
    cudaGraphExec_t eu = instantiate(gu), ef = instantiate(gf);
    CK(cudaGraphUpload(eu, g_stream));
    CK(cudaGraphUpload(ef, g_stream));
    CK(cudaStreamSynchronize(g_stream));
    if (selected(names[0]))
      bench_synced(names[0], [&] { forward_unfused(m, g_stream); });
    if (selected(names[1]))
      bench_synced(names[1], [&] { CK(cudaGraphLaunch(eu, g_stream)); });
    if (selected(names[2]))
      bench_synced(names[2], [&] { forward_fused(m, g_stream); });
    if (selected(names[3]))
      bench_synced(names[3], [&] { CK(cudaGraphLaunch(ef, g_stream)); });
    CK(cudaGraphExecDestroy(eu));
    CK(cudaGraphExecDestroy(ef));
    CK(cudaGraphDestroy(gu));
    CK(cudaGraphDestroy(gf));
    free_model(m);
  }
}

// Extra: the seed's two launch shapes with the empty kernel, so the launch-bound part of the seed
// layer can be read without the GEMM's device time.
static void bench_seed_shape_empty() {
  const int Ls[] = {1, 16};
  for (int L : Ls) {
    std::string ne = "seed_shape_empty/eager/" + std::to_string(L);
    std::string ng = "seed_shape_empty/graph/" + std::to_string(L);
    if (selected(ne))
      bench_synced(ne, [L] { forward_shape_empty(L, g_stream); });
    if (selected(ng)) {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t e = nullptr;
      if (!g_opt.list) {
        g = capture([L] { forward_shape_empty(L, g_stream); });
        e = instantiate(g);
        CK(cudaGraphUpload(e, g_stream));
        CK(cudaStreamSynchronize(g_stream));
      }
      bench_synced(ng, [e] { CK(cudaGraphLaunch(e, g_stream)); });
      if (e) CK(cudaGraphExecDestroy(e));
      if (g) CK(cudaGraphDestroy(g));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// d. graph_lifecycle/{capture,instantiate,update_whole,update_node}/n (us per operation)

static void bench_graph_lifecycle() {
  const int ns[] = {10, 100, 1000};
  for (int n : ns) {
    const std::string sn = std::to_string(n);
    auto body = [n] { for (int i = 0; i < n; ++i) launch_empty(g_stream); };

    std::string capture_name = "graph_lifecycle/capture/" + sn;
    if (selected(capture_name)) {
      bench(capture_name, "us", 1e6, [n](long reps) {
        double t = 0;
        for (long r = 0; r < reps; ++r) {
          cudaGraph_t g;
          auto t0 = Clock::now();
          CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
          for (int i = 0; i < n; ++i) launch_empty(g_stream);
          CK(cudaStreamEndCapture(g_stream, &g));
          t += seconds_since(t0);
          CK(cudaGraphDestroy(g));
        }
        return t;
      });
    }

    bool need_graphs = !g_opt.list && (selected("graph_lifecycle/instantiate/" + sn) ||
                                       selected("graph_lifecycle/update_whole/" + sn) ||
                                       selected("graph_lifecycle/update_node/" + sn));
    cudaGraph_t g1 = nullptr, g2 = nullptr;
    if (need_graphs) {
      g1 = capture(body);
      g2 = capture(body);  // topologically identical, captured separately
      if (node_count(g1) != (size_t)n || node_count(g2) != (size_t)n) die("lifecycle graph has wrong node count");
    }

    std::string name = "graph_lifecycle/instantiate/" + sn;
    if (selected(name))
      bench(name, "us", 1e6, [g1](long reps) {
        double t = 0;
        for (long r = 0; r < reps; ++r) {
          cudaGraphExec_t e;
          auto t0 = Clock::now();
          CK(cudaGraphInstantiate(&e, g1, 0));
          t += seconds_since(t0);
          CK(cudaGraphExecDestroy(e));
        }
        return t;
      });

    cudaGraphExec_t e = nullptr;
    if (need_graphs) e = instantiate(g1);

    name = "graph_lifecycle/update_whole/" + sn;
    if (selected(name)) {
      long counter = 0;
      bench(name, "us", 1e6, [e, g1, g2, &counter](long reps) {
        double t = 0;
        for (long r = 0; r < reps; ++r) {
          cudaGraphExecUpdateResultInfo info{};
          cudaGraph_t src = (counter++ & 1) ? g1 : g2;
          auto t0 = Clock::now();
          CK(cudaGraphExecUpdate(e, src, &info));
          t += seconds_since(t0);
          if (info.result != cudaGraphExecUpdateSuccess) die("cudaGraphExecUpdate: result " + std::to_string(info.result));
        }
        return t;
      });
      // Leave the executable mirroring g1, whose node handles update_node uses.
      if (e) {
        cudaGraphExecUpdateResultInfo info{};
        CK(cudaGraphExecUpdate(e, g1, &info));
      }
    }

    name = "graph_lifecycle/update_node/" + sn;
    if (selected(name)) {
      cudaGraphNode_t node = nullptr;
      if (!g_opt.list) {
        std::vector<cudaGraphNode_t> nodes(n);
        size_t count = n;
        CK(cudaGraphGetNodes(g1, nodes.data(), &count));
        node = nodes[count / 2];
        cudaGraphNodeType type;
        CK(cudaGraphNodeGetType(node, &type));
        if (type != cudaGraphNodeTypeKernel) die("lifecycle node is not a kernel node");
      }
      // The parameters as the Java side would build them: the cudaKernel_t handle as func, no
      // arguments. If the driver refuses that handle, fall back to the node's own parameters.
      cudaKernelNodeParams base{};
      base.func = (void *)g_empty_fn;
      base.gridDim = dim3(1);
      base.blockDim = dim3(1);
      if (!g_opt.list) {
        cudaError_t st = cudaGraphExecKernelNodeSetParams(e, node, &base);
        if (st != cudaSuccess) {
          std::printf("  (update_node: cudaKernel_t as func refused: %s; using cudaGraphKernelNodeGetParams)\n",
                      cudaGetErrorName(st));
          (void)cudaGetLastError();
          CK(cudaGraphKernelNodeGetParams(node, &base));
          CK(cudaGraphExecKernelNodeSetParams(e, node, &base));
        }
      }
      long counter = 0;
      // The launch shape alternates between 1 and 2 blocks so every call is a real change.
      bench(name, "us", 1e6, [e, node, base, &counter](long reps) {
        double t = 0;
        cudaKernelNodeParams p = base;
        for (long r = 0; r < reps; ++r) {
          p.gridDim = dim3((counter++ & 1) ? 2 : 1);
          auto t0 = Clock::now();
          CK(cudaGraphExecKernelNodeSetParams(e, node, &p));
          t += seconds_since(t0);
        }
        return t;
      });
    }
    if (e) {
      // The updated executable must still launch.
      CK(cudaGraphLaunch(e, g_stream));
      CK(cudaStreamSynchronize(g_stream));
      CK(cudaGraphExecDestroy(e));
    }
    if (g1) CK(cudaGraphDestroy(g1));
    if (g2) CK(cudaGraphDestroy(g2));
  }
}

// ------------------------------------------------------------------------------------------------
// Output

static std::string json_escape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if ((unsigned char)c < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o;
}

static std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

static std::string kernel_driver_release() {
  std::ifstream in("/sys/module/nvidia/version");
  std::string s;
  if (in) std::getline(in, s);
  return s;
}

static void write_json(const std::string &path, const cudaDeviceProp &prop, int drv, int rt, double total_s) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) die("cannot write " + path);
  std::fprintf(f, "{\n  \"device\": \"%s\",\n", json_escape(prop.name).c_str());
  std::fprintf(f, "  \"compute_capability\": \"%d.%d\",\n", prop.major, prop.minor);
  std::fprintf(f, "  \"driver\": \"%s\",\n", version_string(drv).c_str());
  std::fprintf(f, "  \"driver_release\": \"%s\",\n", json_escape(kernel_driver_release()).c_str());
  std::fprintf(f, "  \"runtime\": \"%s\",\n", version_string(rt).c_str());
  std::fprintf(f, "  \"harness\": \"benchmarks/native/launch_overhead\",\n");
  std::fprintf(f, "  \"config\": {\"time_s\": %g, \"warmup_s\": %g, \"target_samples\": %d, \"queue_bound\": %d, "
                  "\"M\": %d, \"N\": %d, \"K\": %d, \"sgemm\": \"%s\", \"fused\": \"%s\", \"epilogue\": \"%s\", "
                  "\"kernels\": \"%s\", \"total_s\": %.2f},\n",
               g_opt.time_s, g_opt.warmup_s, g_opt.target_samples, kQueueBound, g_opt.M, g_opt.N, g_opt.N,
               json_escape(g_opt.sgemm_name).c_str(), json_escape(g_opt.fused_name).c_str(),
               json_escape(g_opt.epilogue_name).c_str(), json_escape(g_opt.kernels_path).c_str(), total_s);
  std::fprintf(f, "  \"benchmarks\": [\n");
  for (size_t i = 0; i < g_results.size(); ++i) {
    const Result &r = g_results[i];
    std::fprintf(f,
                 "    {\"name\": \"%s\", \"unit\": \"%s\", \"median\": %.6g, \"p10\": %.6g, \"p90\": %.6g, "
                 "\"mean\": %.6g, \"samples\": %ld, \"ops_per_sample\": %ld}%s\n",
                 json_escape(r.name).c_str(), r.unit.c_str(), r.median, r.p10, r.p90, r.mean, r.samples, r.reps,
                 i + 1 < g_results.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

static const Result *find_result(const std::string &name) {
  for (auto &r : g_results)
    if (r.name == name) return &r;
  return nullptr;
}

static void print_table() {
  std::printf("\n%-44s %-4s %11s %11s %11s %8s\n", "benchmark", "unit", "median", "p10", "p90", "samples");
  for (auto &r : g_results)
    std::printf("%-44s %-4s %11.3f %11.3f %11.3f %8ld\n", r.name.c_str(), r.unit.c_str(), r.median, r.p10, r.p90,
                r.samples);
  // Ratios read inside this run (medians).
  std::printf("\nratios (medians, this run):\n");
  auto ratio = [](const std::string &a, const std::string &b, const char *label) {
    const Result *ra = find_result(a), *rb = find_result(b);
    if (ra && rb) std::printf("  %-44s %6.2fx  (%.3f / %.3f %s)\n", label, ra->median / rb->median, ra->median,
                              rb->median, ra->unit.c_str());
  };
  for (int N : {1, 2, 8, 32, 128}) {
    std::string s = std::to_string(N);
    ratio("launch_overhead/eager/" + s, "launch_overhead/graph/" + s, ("eager/graph N=" + s).c_str());
  }
  for (int L : {1, 16}) {
    std::string s = std::to_string(L);
    ratio("seed_linear/eager/" + s, "seed_linear/graph/" + s, ("seed_linear eager/graph L=" + s).c_str());
    ratio("seed_linear/fused_eager/" + s, "seed_linear/fused_graph/" + s,
          ("seed_linear fused_eager/fused_graph L=" + s).c_str());
    ratio("seed_shape_empty/eager/" + s, "seed_shape_empty/graph/" + s, ("seed_shape_empty eager/graph L=" + s).c_str());
  }
}

// ------------------------------------------------------------------------------------------------

static cudaLibrary_t load_library(const std::string &path) {
  bool ptx = path.size() > 4 && path.compare(path.size() - 4, 4, ".ptx") == 0;
  std::vector<char> image = read_file(path, ptx);
  cudaLibrary_t lib;
  CK(cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  return lib;
}

static std::string resolve_kernels(const std::string &path, const cudaDeviceProp &prop) {
  if (path.empty()) return path;
  // A file: use it. A folder: the cubin for this compute capability, else the newest PTX.
  std::string cubin = path + "/cg4j_kernels.sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ".cubin";
  if (file_exists(cubin)) return cubin;
  std::string ptx = path + "/cg4j_kernels.compute_120.ptx";
  if (file_exists(ptx)) return ptx;
  if (file_exists(path) && !file_exists(path + "/.")) return path;
  return "";
}

int main(int argc, char **argv) {
  parse_args(argc, argv);
  auto start = Clock::now();

  if (g_opt.list) {
    bench_launch_overhead();
    bench_binding();
    bench_seed_linear();
    bench_seed_shape_empty();
    bench_graph_lifecycle();
    for (auto &n : g_names) std::printf("%s\n", n.c_str());
    return 0;
  }

  int dev = 0, drv = 0, rt = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  std::printf("device: %s (cc %d.%d, %d SMs), driver %s (%s), runtime %s\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, version_string(drv).c_str(), kernel_driver_release().c_str(),
              version_string(rt).c_str());

  // The same kind of stream the Java CudaStream creates: non-blocking, priority 0.
  CK(cudaStreamCreateWithPriority(&g_stream, cudaStreamNonBlocking, 0));

  cudaLibrary_t empty_lib = load_library(g_opt.empty_path);
  CK(cudaLibraryGetKernel(&g_empty, empty_lib, "empty_kernel"));
  g_empty_fn = (const void *)g_empty;
  std::printf("empty kernel: %s\n", g_opt.empty_path.c_str());

  cudaLibrary_t klib = nullptr;
  std::string kpath = resolve_kernels(g_opt.kernels_path, prop);
  if (kpath.empty()) {
    std::printf("cg4j kernels: none found at %s; seed_linear benchmarks will be skipped\n",
                g_opt.kernels_path.c_str());
    g_opt.kernels_path = "";
  } else {
    klib = load_library(kpath);
    g_opt.kernels_path = kpath;  // the file actually loaded, for the JSON
    cudaKernel_t k;
    CK(cudaLibraryGetKernel(&k, klib, g_opt.sgemm_name.c_str()));
    g_sgemm_fn = (const void *)k;
    CK(cudaLibraryGetKernel(&k, klib, g_opt.fused_name.c_str()));
    g_fused_fn = (const void *)k;
    CK(cudaLibraryGetKernel(&k, klib, g_opt.epilogue_name.c_str()));
    g_epi_fn = (const void *)k;
    // 19200 B is under the 48 KiB default; set the limit anyway so a larger --smem also works.
    if (g_opt.sgemm_smem > 48 * 1024) {
      CK(cudaFuncSetAttribute(g_sgemm_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g_opt.sgemm_smem));
      CK(cudaFuncSetAttribute(g_fused_fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g_opt.sgemm_smem));
    }
    g_have_seed_kernels = true;
    std::printf("cg4j kernels: %s\n  sgemm    %s <<<{%d,%d},%d,%d>>>\n  fused    %s\n  epilogue %s <<<{%d,2},{8,32},0>>>\n",
                kpath.c_str(), g_opt.sgemm_name.c_str(), (g_opt.M + g_opt.sgemm_tile_m - 1) / g_opt.sgemm_tile_m,
                (g_opt.N + g_opt.sgemm_tile_n - 1) / g_opt.sgemm_tile_n, g_opt.sgemm_threads, g_opt.sgemm_smem,
                g_opt.fused_name.c_str(), g_opt.epilogue_name.c_str(), (g_opt.M + 7) / 8);
  }

  // Module load and first-launch costs stay out of every benchmark.
  launch_empty(g_stream);
  CK(cudaStreamSynchronize(g_stream));

  if (g_have_seed_kernels && g_opt.check && any_selected("seed_linear/")) {
    std::printf("checks (float64 reference on 12 rows, poisoned outputs):\n");
    check_seed(1);
    check_seed(16);
  }

  std::printf("benchmarks (time %.2f s, warm-up %.2f s each):\n", g_opt.time_s, g_opt.warmup_s);
  bench_launch_overhead();
  bench_binding();
  bench_seed_linear();
  bench_seed_shape_empty();
  bench_graph_lifecycle();

  CK(cudaStreamSynchronize(g_stream));
  CK(cudaGetLastError());
  CK(cudaStreamDestroy(g_stream));
  if (klib) CK(cudaLibraryUnload(klib));
  CK(cudaLibraryUnload(empty_lib));

  double total = seconds_since(start);
  print_table();
  std::printf("\ntotal %.1f s\n", total);
  if (!g_opt.json_path.empty()) {
    write_json(g_opt.json_path, prop, drv, rt, total);
    std::printf("wrote %s\n", g_opt.json_path.c_str());
  }
  return 0;
}
