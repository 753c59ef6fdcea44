// cudagraph4j kernels: the skinny-sgemm sweep and the 16-layer MLP, native.
//
//   skinny_test <kernels/build dir> [--tuning FILE]
//
// Loads the shipped cubin for the device's compute capability as the Java side does (cudaLibraryLoadData), warms the GPU clocks,
// then for every inference shape (M = batch 1..256, N = K = width 512, 1024, 4096; B stored [N,K],
// bias+ReLU, as in Linear) times every split-K tile at every slice count, the GEMV instances at
// batch 1 to 32, and the unsplit seed tile for reference. A time is per kernel inside a captured
// graph of 16 back-to-back launches, so it includes the per-node gap an MLP layer pays. Every
// configuration timed is first checked against a float64 reference (output poisoned with NaN
// first). --tuning writes, per shape, the best split-K tile and slice count, and the GEMV instance
// where one was faster still, in the format of kernels/tuning/sgemm-tuning.tsv (the tile column
// names the split-K instance: "32x32", or "32x32_r4" for the batched reduction; the gemv column
// "gemv_8x8_w4", rows x columns per block and warps per block). Last, a 16-layer MLP per (batch, width) on the best configuration, captured into
// one graph (and on the best split-K one too where a GEMV instance won): µs per forward,
// synchronising after each (latency) and pipelined (throughput), by graph_timing.cuh's loop, which
// benchmarks/native/mlp_cublaslt.cu times cuBLASLt's MLP with. Exit code 0 only if every check
// passed.
//
// Build: nvcc -std=c++17 -O3 -arch=native -Xcompiler -fopenmp -o skinny_test skinny_test.cu
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
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

#include "graph_timing.cuh"



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
  const void *kernel;  ///< a cudaKernel_t from the shipped cubin
  int tile_m, tile_n, threads, smem;
  bool split;
  std::string tile;  ///< the tuning table's name for the instance: "32x32", "32x32_r4", "gemv_8x8_w4"
  bool gemv;         ///< a GEMV instance: timed at batch 1 to 32 only
};

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {  // magnitude 0.5..2, random sign: never zero
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    float mag = 0.5f + 1.5f * (float)((s >> 11) * (1.0 / 9007199254740992.0));
    return (s & 1) ? mag : -mag;
  }
};

static int g_failures = 0;  ///< any failure fails the run

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
    ++g_failures;
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
static void time_mlp(const char *label, const Config &c, const Problem &p, int m, int slices, float *act[2],
                     const std::vector<float> &ha, const std::vector<float *> &weights, cudaStream_t stream) {
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
      ++g_failures;
    }
    GraphTimes times = time_graph(exec, stream);
    std::printf("MLP16 %s graph%s: width %d batch %d: %.1f us/forward sync each (median), %.1f us pipelined; "
                "%s x%d slices\n", label, pdl ? " PDL" : "", p.n, m, times.sync_median_us, times.pipelined_us,
                c.name.c_str(), slices);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
  }
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
    // SIMT only: the tensor-core tiles are tensor_op_test.cu's (the table's 3xtf32 columns).
    bool split = family == "sgemm_bias_relu_splitk" && manifest["kernel." + name + ".math"] == "fp32";
    bool gemv = family == "gemv_bias_relu";
    bool seed = name == "cg4j_simt_sgemm_f32_64x32x16_3_tnt_align1_bias_f32_relu";
    if (manifest["kernel." + name + ".layout"] != "tnt" || !(split || gemv || seed)) continue;
    std::string tile = manifest["kernel." + name + ".tileM"] + "x" + manifest["kernel." + name + ".tileN"];
    std::string batch = manifest["kernel." + name + ".reductionBatch"];
    if (!batch.empty() && batch != "0") tile += "_r" + batch;
    if (gemv) tile = "gemv_" + tile + "_w" + manifest["kernel." + name + ".warps"];
    Config c{name, nullptr, std::stoi(manifest["kernel." + name + ".tileM"]),
             std::stoi(manifest["kernel." + name + ".tileN"]), std::stoi(manifest["kernel." + name + ".threads"]),
             std::stoi(manifest["kernel." + name + ".sharedMemBytes"]), split, tile, gemv};
    cudaKernel_t kernel;
    CK(cudaLibraryGetKernel(&kernel, library, name.c_str()));
    c.kernel = (const void *)kernel;
    configs.push_back(c);
  }
  std::printf("configurations: %zu\n", configs.size());

  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *sink;
  CK(cudaMalloc(&sink, 4));
  warm_clocks(prop, stream, sink);

  const int batches[] = {1, 8, 32, 128, 256};
  const int widths[] = {512, 1024, 4096};
  const int slice_counts[] = {1, 2, 4, 8, 16, 32};
  struct Best { std::string name, tile; int slices; double us; double seed_us; };
  std::map<std::pair<int, int>, Best> best;       // split-K instances: the tuning table's tile column
  std::map<std::pair<int, int>, Best> best_gemv;  // GEMV instances, batch 1 to 32: its gemv column
  std::ofstream tuning;
  if (!tuning_path.empty()) {
    tuning.open(tuning_path);
    tuning << "# cudagraph4j sgemm tuning for skinny shapes (tnt, bias+ReLU, as in Linear): per shape the fastest\n"
              "# split-K instance and slice count, and, where a GEMV instance ran faster still, that instance.\n"
              "# Timed per kernel inside a captured graph of 16 launches, with the multiprocessor count it was\n"
              "# measured with. Sgemm.choose takes the nearest entry (dimension ratios): its GEMV instance where\n"
              "# the operands are aligned for it, else its split-K launch, with the slices scaled by\n"
              "# multiprocessors. Written by kernels/test/skinny_test.cu --tuning on "
           << prop.name << ";\n# see kernels/PERFORMANCE.md.\nsms\t" << prop.multiProcessorCount
           << "\n# m\tn\tk\ttile\tslices\tus\tunsplit_seed_tile_us\tgemv\tgemv_us\n";
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
      Best bg{"", "", 0, 1e30, 0};
      for (const Config &c : configs) {
        if (c.gemv && m > 32) continue;
        for (int slices : slice_counts) {
          if (!c.split && slices > 1) continue;
          if (slices > (width + 15) / 16) continue;
          if (!check(c, p, slices, stream)) continue;
          double us = time_in_graph(c, p, slices, stream);
          std::printf("%-6d %-6d %-64s %7d %9.2f\n", m, width, c.name.c_str(), slices, us);
          if (c.gemv) {
            if (us < bg.us) bg = Best{c.name, c.tile, slices, us, 0};
          } else if (!c.split) {
            b.seed_us = us;
          } else if (us < b.us) {
            b = Best{c.name, c.tile, slices, us, b.seed_us};
          }
        }
      }
      best[{m, width}] = b;
      if (bg.us < b.us) best_gemv[{m, width}] = bg;
      if (tuning.is_open()) {
        tuning << m << '\t' << width << '\t' << width << '\t' << b.tile << '\t' << b.slices
               << '\t' << b.us << '\t' << b.seed_us;
        if (bg.us < b.us) tuning << '\t' << bg.tile << '\t' << bg.us;
        tuning << '\n';
      }
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
    // "native" is what Sgemm.choose runs: the GEMV instance where it won, else the split-K launch.
    for (int m : batches) {
      auto gemv = best_gemv.find({m, width});
      const Best &split = best[{m, width}];
      for (const Config &c : configs) {
        if (gemv != best_gemv.end() && c.name == gemv->second.name)
          time_mlp("native", c, p, m, 1, act, ha, weights, stream);
        if (c.name == split.name)
          time_mlp(gemv != best_gemv.end() ? "split-K" : "native", c, p, m, split.slices, act, ha, weights, stream);
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
  std::printf("\nGEMV instance per shape where it beat every split-K launch (m, width): kernel, us/kernel in a graph\n");
  for (auto &[key, g] : best_gemv) {
    std::printf("  %4d %5d  %-68s %7.2f  (best split-K %.2f, %.2fx)\n", key.first, key.second, g.name.c_str(), g.us,
                best[key].us, best[key].us / g.us);
  }
  std::printf("\nchecks failed: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
