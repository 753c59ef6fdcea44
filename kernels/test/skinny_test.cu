// cudagraph4j kernels: the skinny-sgemm sweep and the 16-layer MLP, native.
//
//   skinny_test <kernels/build dir> [--tuning FILE]
//
// Loads the shipped cubin for the device's compute capability as the Java side does (cudaLibraryLoadData), warms the GPU clocks,
// then for every inference shape (M = batch 1..256, N = K = width 512, 1024, 4096; B stored [N,K],
// bias+ReLU, as in Linear) times every split-K tile at every slice count, and the unsplit seed tile
// for reference. A time is per kernel inside a captured graph of 16 back-to-back launches, so it
// includes the per-node gap an MLP layer pays. Every configuration timed is first checked against
// a float64 reference (output poisoned with NaN first). --tuning writes the best tile and slice
// count per shape in the format of kernels/tuning/sgemm-tuning.tsv (the tile column names the
// instance: "32x32", or "32x32_r4" for the batched reduction). Tuning variants compiled into this
// binary (GEMV-like kernels for batch 1 to 32) are checked and swept beside the shipped instances
// but never written to the table. Last, a 16-layer MLP per (batch, width) on the best shipped
// configuration and on the best variant, each captured into one graph: µs per forward,
// synchronising after each (latency) and pipelined (throughput). Exit code 0 only if every check
// of a shipped configuration passed.
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>


#define CK(x) check_cuda((x), #x, __LINE__)
static void check_cuda(cudaError_t e, const char *what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FATAL line %d: %s -> %s: %s\n", line, what, cudaGetErrorName(e), cudaGetErrorString(e));
    std::exit(2);
  }
}

static std::map<std::string, std::string> read_manifest(const std::string &path) {
  std::map<std::string, std::string> kv;
  std::ifstream in(path);
  if (!in) { std::fprintf(stderr, "FATAL: cannot read %s\n", path.c_str()); std::exit(2); }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

struct Config {
  std::string name;
  const void *kernel;  ///< a cudaKernel_t from the shipped cubin, or a variant compiled into this harness
  int tile_m, tile_n, threads, smem;
  bool split;
  std::string tile;  ///< the tuning table's name for the instance: "32x32", "32x32_r4"
  bool variant;      ///< a tuning variant: timed beside the shipped instances, never in the table
};

// Tuning variant (not shipped): a GEMV-like kernel for few rows, y = relu(x W^T + b) with W stored
// [N, K] as Linear stores it. Each warp owns COLS output columns and ROWS rows; its lanes split K in
// float4 steps (so K and the leading dimensions must be multiples of 4), every lane keeps ROWS x COLS
// partial sums, and a fixed xor butterfly of shuffles adds them (the same order every run, the same
// value in every lane); lane r then writes row r. No shared memory, no split across blocks: a layer
// is one wave of small blocks that read W once, 16 bytes a lane at a time. The signature is the
// split-K instances' (workspace and tickets unused), so the harness launches it the same way.
template <int ROWS, int COLS, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) gemv_variant(int M, int N, int K, const float *A, int lda,
                                                           const float *B, int ldb, const float *bias, float *D,
                                                           int ldd, float *, int *) {
  const int lane = threadIdx.x & 31;
  const int n0 = (blockIdx.y * WARPS + (threadIdx.x >> 5)) * COLS;
  const int m0 = blockIdx.x * ROWS;
  const int rows = min(ROWS, M - m0);
#if __CUDA_ARCH__ >= 900
  // The previous layer wrote A: wait for it (PDL), then let the next layer launch; its own wait
  // holds it until this grid has finished and its writes are visible.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  if (n0 >= N) return;
  float acc[ROWS][COLS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < COLS; ++c) acc[r][c] = 0.0f;
  for (int k = lane * 4; k < K; k += 128) {
    float4 b[COLS];
#pragma unroll
    for (int c = 0; c < COLS; ++c)
      b[c] = n0 + c < N ? *reinterpret_cast<const float4 *>(B + (long long)(n0 + c) * ldb + k) : make_float4(0, 0, 0, 0);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (r < rows) {
        const float4 a = *reinterpret_cast<const float4 *>(A + (long long)(m0 + r) * lda + k);
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
          acc[r][c] = fmaf(a.x, b[c].x, acc[r][c]);
          acc[r][c] = fmaf(a.y, b[c].y, acc[r][c]);
          acc[r][c] = fmaf(a.z, b[c].z, acc[r][c]);
          acc[r][c] = fmaf(a.w, b[c].w, acc[r][c]);
        }
      }
    }
  }
  float out[COLS];
#pragma unroll
  for (int c = 0; c < COLS; ++c) out[c] = 0.0f;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (r < rows) {
#pragma unroll
      for (int c = 0; c < COLS; ++c) {
        float v = acc[r][c];
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
        if (lane == r) out[c] = v;
      }
    }
  }
  if (lane < rows) {
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
      if (n0 + c < N) {
        const float v = out[c] + bias[n0 + c];
        D[(long long)(m0 + lane) * ldd + n0 + c] = v > 0.0f ? v : 0.0f;
      }
    }
  }
}

template <int ROWS, int COLS, int WARPS>
static Config gemv(const char *name) {
  return Config{name, (const void *)gemv_variant<ROWS, COLS, WARPS>, ROWS, WARPS * COLS, WARPS * 32, 0, false, "",
                true};
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {  // magnitude 0.5..2, random sign: never zero
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    float mag = 0.5f + 1.5f * (float)((s >> 11) * (1.0 / 9007199254740992.0));
    return (s & 1) ? mag : -mag;
  }
};

static int g_failures = 0;          ///< shipped configurations: any failure fails the run
static int g_variant_failures = 0;  ///< tuning variants: reported, and the variant is not timed

struct Problem {
  int m, n, k;
  float *a, *w, *bias, *d, *workspace;
  int *tickets;
  std::vector<double> ref;
};

static void launch(const Config &c, const Problem &p, int slices, cudaStream_t stream, bool pdl = false) {
  int m = p.m, n = p.n, k = p.k, lda = k, ldb = k, ldd = n;
  const float *a = p.a, *w = p.w, *bias = p.bias;
  float *d = p.d, *workspace = p.workspace;
  int *tickets = p.tickets;
  void *args[] = {&m, &n, &k, (void *)&a, &lda, (void *)&w, &ldb, (void *)&bias, &d, &ldd, &workspace, &tickets};
  dim3 grid((m + c.tile_m - 1) / c.tile_m, (n + c.tile_n - 1) / c.tile_n, slices);
  if (!pdl) {
    CK(cudaLaunchKernel(c.kernel, grid, dim3(c.threads), args, c.smem, stream));
    return;
  }
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {grid, dim3(c.threads), (size_t)c.smem, stream, &attribute, 1};
  CK(cudaLaunchKernelExC(&config, c.kernel, args));
}

static bool check(const Config &c, const Problem &p, int slices, cudaStream_t stream) {
  size_t count = (size_t)p.m * p.n;
  CK(cudaMemsetAsync(p.d, 0xFF, count * 4, stream));
  launch(c, p, slices, stream);
  CK(cudaStreamSynchronize(stream));
  std::vector<float> out(count);
  CK(cudaMemcpy(out.data(), p.d, count * 4, cudaMemcpyDeviceToHost));
  double err = 0, norm = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(out[i])) { err = INFINITY; break; }
    double diff = out[i] - p.ref[i];
    err += diff * diff;
    norm += p.ref[i] * p.ref[i];
  }
  double rel = norm == 0 ? std::sqrt(err) : std::sqrt(err / norm);
  if (!(rel < 1e-5)) {
    std::printf("CHECK FAILED %s slices=%d m=%d n=%d k=%d relative error %g\n", c.name.c_str(), slices, p.m, p.n,
                p.k, rel);
    ++(c.variant ? g_variant_failures : g_failures);
    return false;
  }
  return true;
}

/// µs per launch: a graph of 16 launches, replayed, median of 7 samples of 10 replays.
static double time_in_graph(const Config &c, const Problem &p, int slices, cudaStream_t stream) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 16; ++i) launch(c, p, slices, stream);
  CK(cudaStreamEndCapture(stream, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(exec, stream));
  std::vector<double> samples;
  for (int s = 0; s < 7; ++s) {
    CK(cudaEventRecord(start, stream));
    for (int r = 0; r < 10; ++r) CK(cudaGraphLaunch(exec, stream));
    CK(cudaEventRecord(stop, stream));
    CK(cudaEventSynchronize(stop));
    float ms;
    CK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms * 1000.0 / 160.0);
  }
  CK(cudaEventDestroy(start));
  CK(cudaEventDestroy(stop));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  std::sort(samples.begin(), samples.end());
  return samples[3];
}

/// A 16-layer MLP (x -> ping -> pong -> ... ) on one configuration, captured into one graph, with and
/// without PDL: µs per forward synchronising after each (median of 200) and pipelined (200, one
/// sync). Each layer has its own weights, as in PyTorch's and cuBLASLt's twins, so that no layer
/// finds another's weights in L2. PDL must not change a bit of the output.
static void time_mlp(const Config &c, const Problem &p, int m, int slices, float *act[2], const std::vector<float> &ha,
                     const std::vector<float *> &weights, cudaStream_t stream) {
  const size_t count = (size_t)m * p.n;
  std::vector<float> without_pdl;
  for (bool pdl : {false, true}) {
    CK(cudaMemcpy(act[0], ha.data(), count * 4, cudaMemcpyHostToDevice));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int layer = 0; layer < 16; ++layer) {
      Problem lp = p;
      lp.m = m;
      lp.a = act[layer % 2];
      lp.d = act[(layer + 1) % 2];
      lp.w = weights[layer];
      launch(c, lp, slices, stream, pdl);
    }
    CK(cudaStreamEndCapture(stream, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    // 16 layers map act[0] -> act[0]: compare the first forward, on the same fresh input.
    CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    std::vector<float> out(count);
    CK(cudaMemcpy(out.data(), act[0], count * 4, cudaMemcpyDeviceToHost));
    if (!pdl) {
      without_pdl = out;
    } else if (std::memcmp(out.data(), without_pdl.data(), count * 4) != 0) {
      std::printf("CHECK FAILED MLP %s width %d batch %d: PDL changed the result's bits\n", c.name.c_str(), p.n, m);
      ++(c.variant ? g_variant_failures : g_failures);
    }
    for (int i = 0; i < 20; ++i) CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    std::vector<double> sync_us;
    for (int i = 0; i < 200; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      CK(cudaGraphLaunch(exec, stream));
      CK(cudaStreamSynchronize(stream));
      sync_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(sync_us.begin(), sync_us.end());
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    double piped = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 200;
    std::printf("MLP16 %s graph%s: width %d batch %d: %.1f us/forward sync each (median), %.1f us pipelined; "
                "%s x%d slices\n", c.variant ? "variant" : "native", pdl ? " PDL" : "", p.n, m, sync_us[100], piped,
                c.name.c_str(), slices);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
  }
}

__global__ void spin(float *sink, long long cycles) {
  long long start = clock64();
  float x = threadIdx.x;
  while (clock64() - start < cycles) x = x * 1.0000001f + 1e-7f;
  if (x == -1.0f) *sink = x;
}

int main(int argc, char **argv) {
  if (argc < 2) { std::fprintf(stderr, "usage: skinny_test <kernels/build> [--tuning FILE]\n"); return 2; }
  std::string dir = argv[1];
  std::string tuning_path = argc >= 4 && std::string(argv[2]) == "--tuning" ? argv[3] : "";
  auto manifest = read_manifest(dir + "/manifest.properties");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::string cubin_path = dir + "/cg4j_kernels.sm_" + std::to_string(prop.major * 10 + prop.minor) + ".cubin";
  std::ifstream cubin(cubin_path, std::ios::binary);
  if (!cubin) {
    std::fprintf(stderr, "FATAL: no %s for this GPU (compute capability %d.%d)\n", cubin_path.c_str(), prop.major,
                 prop.minor);
    return 2;
  }
  std::vector<char> image((std::istreambuf_iterator<char>(cubin)), std::istreambuf_iterator<char>());
  cudaLibrary_t library;
  CK(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);

  std::vector<Config> configs;
  std::stringstream names(manifest["kernels"]);
  std::string name;
  while (std::getline(names, name, ',')) {
    std::string family = manifest["kernel." + name + ".family"];
    bool split = family == "sgemm_bias_relu_splitk";
    bool seed = name == "cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_bias_f32_relu";
    if (manifest["kernel." + name + ".layout"] != "tnt" || !(split || seed)) continue;
    std::string tile = manifest["kernel." + name + ".tileM"] + "x" + manifest["kernel." + name + ".tileN"];
    std::string batch = manifest["kernel." + name + ".reductionBatch"];
    if (!batch.empty() && batch != "0") tile += "_r" + batch;
    Config c{name, nullptr, std::stoi(manifest["kernel." + name + ".tileM"]),
             std::stoi(manifest["kernel." + name + ".tileN"]), std::stoi(manifest["kernel." + name + ".threads"]),
             std::stoi(manifest["kernel." + name + ".sharedMemBytes"]), split, tile, false};
    cudaKernel_t kernel;
    CK(cudaLibraryGetKernel(&kernel, library, name.c_str()));
    c.kernel = (const void *)kernel;
    configs.push_back(c);
  }
  // GEMV-like variants: 8 rows for batch 1 to 8, 32 rows for up to 32 (more rows take more blocks).
  configs.push_back(gemv<8, 1, 4>("variant_gemv_r8_c1_w4"));
  configs.push_back(gemv<8, 2, 4>("variant_gemv_r8_c2_w4"));
  configs.push_back(gemv<32, 1, 4>("variant_gemv_r32_c1_w4"));
  configs.push_back(gemv<32, 2, 4>("variant_gemv_r32_c2_w4"));
  configs.push_back(gemv<32, 2, 8>("variant_gemv_r32_c2_w8"));
  configs.push_back(gemv<32, 4, 4>("variant_gemv_r32_c4_w4"));
  std::printf("configurations: %zu\n", configs.size());

  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *sink;
  CK(cudaMalloc(&sink, 4));
  auto warm_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) spin<<<prop.multiProcessorCount * 4, 256, 0, stream>>>(sink, 200000000LL);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(stream));
  double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count();
  int clock_khz = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("clock warm-up: %.1f s of spinning kernels on every SM before the first measurement\n", warm_s);

  const int batches[] = {1, 8, 32, 128, 256};
  const int widths[] = {512, 1024, 4096};
  const int slice_counts[] = {1, 2, 4, 8, 16, 32};
  struct Best { std::string name, tile; int slices; double us; double seed_us; };
  std::map<std::pair<int, int>, Best> best;          // shipped instances: the tuning table
  std::map<std::pair<int, int>, Best> best_variant;  // tuning variants, batch 1 to 32
  std::ofstream tuning;
  if (!tuning_path.empty()) {
    tuning.open(tuning_path);
    tuning << "# cudagraph4j split-K sgemm tuning: the fastest split-K tile and slice count per skinny shape (tnt,\n"
              "# bias+ReLU, as in Linear), timed per kernel inside a graph of 16 launches, and the multiprocessor\n"
              "# count it was measured with. Sgemm.choose takes the nearest entry (dimension ratios) and scales\n"
              "# slices by multiprocessors. Written by kernels/test/skinny_test.cu --tuning on "
           << prop.name << ";\n# see kernels/PERFORMANCE.md.\nsms\t" << prop.multiProcessorCount
           << "\n# m\tn\tk\ttile\tslices\tus\tunsplit_seed_tile_us\n";
  }
  std::printf("\n%-6s %-6s %-64s %7s %9s\n", "m", "n=k", "kernel", "slices", "us/kernel");
  for (int width : widths) {
    Problem p{};
    p.n = p.k = width;
    int max_m = 256;
    size_t a_count = (size_t)max_m * width, w_count = (size_t)width * width;
    std::vector<float> ha(a_count), hw(w_count), hb(width);
    Rng rng(width);
    for (auto &v : ha) v = rng.next();
    for (auto &v : hw) v = rng.next() / std::sqrt((float)width);
    for (auto &v : hb) v = rng.next();
    CK(cudaMalloc(&p.a, a_count * 4));
    CK(cudaMalloc(&p.w, w_count * 4));
    CK(cudaMalloc(&p.bias, width * 4));
    CK(cudaMalloc(&p.d, a_count * 4));
    CK(cudaMalloc(&p.workspace, 32 * a_count * 4));
    CK(cudaMalloc(&p.tickets, 65536 * 4));
    CK(cudaMemset(p.tickets, 0, 65536 * 4));
    CK(cudaMemcpy(p.a, ha.data(), a_count * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.w, hw.data(), w_count * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.bias, hb.data(), width * 4, cudaMemcpyHostToDevice));
    for (int m : batches) {
      p.m = m;
      p.ref.assign((size_t)m * width, 0);
#pragma omp parallel for
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < width; ++j) {
          double s = 0;
          for (int q = 0; q < width; ++q) s += (double)ha[(size_t)i * width + q] * hw[(size_t)j * width + q];
          s += hb[j];
          p.ref[(size_t)i * width + j] = s < 0 ? 0 : s;
        }
      Best b{"", "", 0, 1e30, 0};
      Best bv{"", "", 0, 1e30, 0};
      for (const Config &c : configs) {
        if (c.variant && m > 32) continue;
        for (int slices : slice_counts) {
          if (!c.split && slices > 1) continue;
          if (slices > (width + 15) / 16) continue;
          if (!check(c, p, slices, stream)) continue;
          double us = time_in_graph(c, p, slices, stream);
          std::printf("%-6d %-6d %-64s %7d %9.2f\n", m, width, c.name.c_str(), slices, us);
          if (c.variant) {
            if (us < bv.us) bv = Best{c.name, c.tile, slices, us, 0};
          } else if (!c.split) {
            b.seed_us = us;
          } else if (us < b.us) {
            b = Best{c.name, c.tile, slices, us, b.seed_us};
          }
        }
      }
      best[{m, width}] = b;
      if (!bv.name.empty()) best_variant[{m, width}] = bv;
      if (tuning.is_open())
        tuning << m << '\t' << width << '\t' << width << '\t' << b.tile << '\t' << b.slices
               << '\t' << b.us << '\t' << b.seed_us << '\n';
    }

    // 16-layer MLP on the best configuration: one graph. Layer 0 takes the checked weights, the
    // others fresh ones of the same scale.
    float *act[2];
    CK(cudaMalloc(&act[0], a_count * 4));
    CK(cudaMalloc(&act[1], a_count * 4));
    std::vector<float *> weights{p.w};
    for (int layer = 1; layer < 16; ++layer) {
      for (auto &v : hw) v = rng.next() / std::sqrt((float)width);
      float *w;
      CK(cudaMalloc(&w, w_count * 4));
      CK(cudaMemcpy(w, hw.data(), w_count * 4, cudaMemcpyHostToDevice));
      weights.push_back(w);
    }
    for (int m : batches) {
      for (const auto *chosen : {&best, &best_variant}) {
        auto it = chosen->find({m, width});
        if (it == chosen->end()) continue;
        for (const Config &c : configs) {
          if (c.name == it->second.name) time_mlp(c, p, m, it->second.slices, act, ha, weights, stream);
        }
      }
    }
    for (size_t layer = 1; layer < weights.size(); ++layer) CK(cudaFree(weights[layer]));
    for (void *ptr : {(void *)act[0], (void *)act[1], (void *)p.a, (void *)p.w, (void *)p.bias, (void *)p.d,
                      (void *)p.workspace, (void *)p.tickets})
      CK(cudaFree(ptr));
  }
  std::printf("\nbest per shape (m, width): kernel x slices, us/kernel in a graph, unsplit seed tile us\n");
  for (auto &[key, b] : best) {
    std::printf("  %4d %5d  %-68s x%-2d %7.2f  (seed tile %7.2f, %.1fx)\n", key.first, key.second, b.name.c_str(),
                b.slices, b.us, b.seed_us, b.seed_us / b.us);
  }
  std::printf("\nbest tuning variant per shape (m, width): kernel, us/kernel in a graph\n");
  for (auto &[key, v] : best_variant) {
    std::printf("  %4d %5d  %-68s %7.2f  (best shipped %.2f)\n", key.first, key.second, v.name.c_str(), v.us,
                best[key].us);
  }
  std::printf("\nvariant checks failed: %d (variants are not shipped; a failed one is not timed)\n",
              g_variant_failures);
  std::printf("\nchecks failed: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
