// cudagraph4j benchmarks: the 16-layer MLP through cuBLASLt, NVIDIA's own fused baseline.
//
//   mlp_cublaslt            (build: nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp -I ../../kernels/test
//                                   -o mlp_cublaslt mlp_cublaslt.cu -lcublasLt; in the GPU bundle
//                                   graph_timing.cuh is beside it and needs no -I)
//
// The same MLP as kernels/test/skinny_test.cu's time_mlp and native/mlp_torch.py: 16 layers of
// y = relu(x W^T + b), FP32 data, FP32 compute with no TF32 (CUBLAS_COMPUTE_32F), W stored [out, in]
// row-major as torch.nn.Linear stores it, activations row-major [batch, width]. Every layer is one
// cublasLtMatmul with the fused CUBLASLT_EPILOGUE_RELU_BIAS epilogue and the first algorithm
// cublasLtMatmulAlgoGetHeuristic returns (with a preallocated 32 MiB workspace, shared by all layers).
// Each layer has its own weights and bias, as in the PyTorch twin and the Java MlpForward.
//
// For every width (512, 1024, 4096) and batch (1, 8, 32, 128, 256), after warming the GPU clocks:
//   1. one layer alone, then all 16 eagerly, then the first forward of the captured graph, each with
//      its outputs poisoned (NaN) first, checked against a float64 CPU reference on fresh random data;
//   2. the 16 layers captured on a non-blocking stream into one graph; µs per forward synchronising
//      after each (median of 200) and pipelined (200 launches, one sync), by the loop skinny_test's
//      time_mlp uses (kernels/test/graph_timing.cuh).
// Prints "MLP16 cublaslt graph: width W batch B: X us/forward sync each (median), Y us pipelined",
// which benchmarks' MlpResults reads from mlp-cublaslt.log. Exit code 0 only if every check passed;
// 2 on any failed CUDA or cuBLASLt call.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "graph_timing.cuh"


#define LT(x) check_lt((x), #x, __LINE__)
static void check_lt(cublasStatus_t s, const char *what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "FATAL line %d: %s -> %s (%d): %s\n", line, what, cublasLtGetStatusName(s), (int)s,
                 cublasLtGetStatusString(s));
    std::exit(2);
  }
}

static constexpr int kLayers = 16;
static constexpr int kMaxBatch = 256;
static constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper
static constexpr int kMaxCheckedRows = 32;            // of the 16-layer chain; the single layer checks all

/// As skinny_test's: magnitude 0.5..2, random sign, never zero.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    float mag = 0.5f + 1.5f * (float)((s >> 11) * (1.0 / 9007199254740992.0));
    return (s & 1) ? mag : -mag;
  }
};

static int g_failures = 0;

/// One width's parameters, on the host (for the reference) and on the device.
struct Model {
  int width;
  std::vector<float> w, b;  ///< layer l: w[l*width*width ..] is W_l [out, in] row-major; b[l*width ..] is b_l
  float *dw = nullptr, *db = nullptr;
};

/// The float64 reference: `layers` layers applied to row `row` of x, into out (width doubles).
static void reference_row(const Model &m, const std::vector<float> &x, int row, int layers, double *out) {
  const int n = m.width;
  std::vector<double> a(x.begin() + (size_t)row * n, x.begin() + (size_t)(row + 1) * n), next(n);
  for (int l = 0; l < layers; ++l) {
    const float *w = m.w.data() + (size_t)l * n * n;
    const float *b = m.b.data() + (size_t)l * n;
    for (int j = 0; j < n; ++j) {
      const float *wj = w + (size_t)j * n;
      double s[4] = {0, 0, 0, 0};  // four chains: the float64 sum in any order is far below float32's error
      int q = 0;
      for (; q + 4 <= n; q += 4)
        for (int u = 0; u < 4; ++u) s[u] += a[q + u] * (double)wj[q + u];
      for (; q < n; ++q) s[0] += a[q] * (double)wj[q];
      double sum = (s[0] + s[1]) + (s[2] + s[3]) + b[j];
      next[j] = sum < 0 ? 0 : sum;
    }
    a.swap(next);
  }
  std::copy(a.begin(), a.end(), out);
}

/// The reference rows of a check: all of them, or kMaxCheckedRows spread from first to last.
struct Reference {
  std::vector<int> rows;
  std::vector<double> values;  ///< rows.size() x width
};

static Reference reference(const Model &m, const std::vector<float> &x, int batch, int layers, bool all_rows) {
  Reference r;
  int count = all_rows ? batch : std::min(batch, kMaxCheckedRows);
  for (int i = 0; i < count; ++i) r.rows.push_back(count == 1 ? 0 : (int)((long)i * (batch - 1) / (count - 1)));
  r.values.resize((size_t)count * m.width);
#pragma omp parallel for schedule(dynamic)
  for (int i = 0; i < count; ++i) reference_row(m, x, r.rows[i], layers, r.values.data() + (size_t)i * m.width);
  return r;
}

/// Checks an output (device, [batch, width] row-major): every element finite (the poison overwritten),
/// and the norm-wise relative error over the reference's rows below tol, as skinny_test's check.
static bool check_output(const char *what, int width, int batch, const Reference &ref, const float *d_out,
                         cudaStream_t stream, double tol) {
  std::vector<float> out((size_t)batch * width);
  CK(cudaMemcpyAsync(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost, stream));
  CK(cudaStreamSynchronize(stream));
  size_t non_finite = 0;
  for (float v : out) non_finite += !std::isfinite(v);
  double err = 0, norm = 0;
  for (size_t i = 0; i < ref.rows.size(); ++i)
    for (int j = 0; j < width; ++j) {
      double r = ref.values[i * width + j], diff = out[(size_t)ref.rows[i] * width + j] - r;
      err += diff * diff;
      norm += r * r;
    }
  double rel = non_finite ? INFINITY : norm == 0 ? std::sqrt(err) : std::sqrt(err / norm);
  if (!(rel < tol)) {
    std::printf("CHECK FAILED %s: width %d batch %d: %zu non-finite outputs, relative error %g over %zu rows "
                "(tolerance %g)\n", what, width, batch, non_finite, rel, ref.rows.size(), tol);
    ++g_failures;
    return false;
  }
  std::printf("check %s: width %d batch %d: relative error %.2e over %zu rows\n", what, width, batch, rel,
              ref.rows.size());
  return true;
}

/// One (width, batch) cell: the cuBLASLt descriptors and algorithms of the 16 layers.
///
/// The layout. cuBLASLt is column-major: a matrix with `rows`, `cols` and leading dimension `ld`
/// has element (r, c) at r + c*ld. A row-major [R, C] array read that way is the column-major
/// [C, R] matrix with ld = C, i.e. its transpose. So, with n = width (out), k = width (in),
/// b = batch:
///   X, row-major [b, k]        is column-major X^T [k, b], ld = k
///   W, row-major [n, k]        is column-major W^T [k, n], ld = k
///   Y, row-major [b, n]        is column-major Y^T [n, b], ld = n
/// Row-major Y = X W^T is column-major Y^T = (X W^T)^T = W X^T. cuBLASLt computes
/// D = op(A) op(B); take A = the W buffer (column-major W^T, [k, n]) with op(A) = T, giving W [n, k],
/// and B = the X buffer (column-major X^T, [k, b]) with op(B) = N: D = W X^T = Y^T, [n, b], ld = n,
/// which is exactly row-major Y in memory. Layouts describe the stored matrices, before op:
/// A rows = k, cols = n, ld = k; B rows = k, cols = b, ld = k; C = D rows = n, cols = b, ld = n.
/// The bias epilogue adds a vector of D's row count (n: one per output feature) to every column
/// (every batch row), then ReLU: y = relu(x W^T + b). This is the "TN" GEMM, cuBLAS's best-served
/// layout.
struct Cell {
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulDesc_t desc[kLayers] = {};
  cublasLtMatmulAlgo_t algo[kLayers];
  cublasLtMatmulHeuristicResult_t first;  ///< layer 0's heuristic result, for the log
};

static void describe(cublasLtHandle_t lt, cublasLtMatmulPreference_t pref, const Model &m, int batch, Cell &c) {
  const uint64_t n = m.width, k = m.width;
  LT(cublasLtMatrixLayoutCreate(&c.a, CUDA_R_32F, k, n, (int64_t)k));
  LT(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_32F, k, (uint64_t)batch, (int64_t)k));
  LT(cublasLtMatrixLayoutCreate(&c.d, CUDA_R_32F, n, (uint64_t)batch, (int64_t)n));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  for (int l = 0; l < kLayers; ++l) {
    // CUBLAS_COMPUTE_32F: FP32 multiply-add throughout, never TF32 (that is CUBLAS_COMPUTE_32F_FAST_TF32).
    LT(cublasLtMatmulDescCreate(&c.desc[l], CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(c.desc[l], CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    LT(cublasLtMatmulDescSetAttribute(c.desc[l], CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    LT(cublasLtMatmulDescSetAttribute(c.desc[l], CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    // Bias of D's type (FP32, the default CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE), one per output row of D.
    // Set before the heuristic: it looks at the pointer's alignment. One descriptor per layer, since
    // the bias pointer is part of the descriptor.
    const float *bias = m.db + (size_t)l * m.width;
    LT(cublasLtMatmulDescSetAttribute(c.desc[l], CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    cublasLtMatmulHeuristicResult_t result = {};
    int returned = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(lt, c.desc[l], c.a, c.b, c.d, c.d, pref, 1, &result, &returned));
    if (returned < 1 || result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > kWorkspaceBytes) {
      std::fprintf(stderr, "FATAL: no cuBLASLt algorithm for width %d batch %d layer %d (returned %d, state %d, "
                   "workspace %zu)\n", m.width, batch, l, returned, (int)result.state, (size_t)result.workspaceSize);
      std::exit(2);
    }
    c.algo[l] = result.algo;
    if (l == 0) c.first = result;
  }
}

static void release(Cell &c) {
  for (auto &desc : c.desc) LT(cublasLtMatmulDescDestroy(desc));
  LT(cublasLtMatrixLayoutDestroy(c.a));
  LT(cublasLtMatrixLayoutDestroy(c.b));
  LT(cublasLtMatrixLayoutDestroy(c.d));
}

/// Layer l reads x (l = 0) or act[(l-1) % 2] and writes act[l % 2]; the last layer writes act[1], and
/// x is never written, so every forward computes the same thing.
static void forward(cublasLtHandle_t lt, const Model &m, const Cell &c, int layers, const float *x, float *act[2],
                    void *workspace, cudaStream_t stream) {
  static const float one = 1.0f, zero = 0.0f;  // host pointers (the default pointer mode)
  for (int l = 0; l < layers; ++l) {
    const float *in = l == 0 ? x : act[(l - 1) % 2];
    float *out = act[l % 2];
    // beta = 0: C is not read; pass D as C (same layout), the in-place form every algorithm supports.
    LT(cublasLtMatmul(lt, c.desc[l], &one, m.dw + (size_t)l * m.width * m.width, c.a, in, c.b, &zero, out, c.d,
                      out, c.d, &c.algo[l], workspace, kWorkspaceBytes, stream));
  }
}

static void print_algo(const Model &m, int batch, const Cell &c) {
  // Names cuBLASLt's choice for layer 0 (all layers have the same shape); a field it will not give reads -1.
  auto config = [&](cublasLtMatmulAlgoConfigAttributes_t attr) -> long {
    uint32_t value = 0;  // every attribute read here is 32 bits (CONFIG_ID is int32_t, the rest uint32_t)
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&c.first.algo, attr, &value, sizeof(value), &written) !=
        CUBLAS_STATUS_SUCCESS || written != sizeof(value))
      return -1;
    return attr == CUBLASLT_ALGO_CONFIG_ID ? (long)(int32_t)value : (long)value;
  };
  std::printf("cublaslt algo: width %d batch %d: id %ld tile %ld stages %ld split-k %ld reduction %ld swizzle %ld, "
              "workspace %zu bytes, waves %.2f\n", m.width, batch, config(CUBLASLT_ALGO_CONFIG_ID),
              config(CUBLASLT_ALGO_CONFIG_TILE_ID), config(CUBLASLT_ALGO_CONFIG_STAGES_ID),
              config(CUBLASLT_ALGO_CONFIG_SPLITK_NUM), config(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
              config(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING), (size_t)c.first.workspaceSize, c.first.wavesCount);
}

/// µs per forward of the captured graph, timed as skinny_test's time_mlp times its own.
static void print_graph_times(const Model &m, int batch, cudaGraphExec_t exec, cudaStream_t stream) {
  GraphTimes times = time_graph(exec, stream);
  std::printf("MLP16 cublaslt graph: width %d batch %d: %.1f us/forward sync each (median), %.1f us pipelined\n",
              m.width, batch, times.sync_median_us, times.pipelined_us);
}

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // piped through tee: lines in order with stderr's
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  cublasLtHandle_t lt;
  LT(cublasLtCreate(&lt));
  std::printf("device: %s, %d SMs; cuBLASLt %zu, CUDA runtime %zu; FP32, CUBLAS_COMPUTE_32F (no TF32), "
              "epilogue RELU_BIAS, heuristic's first algorithm, %zu MiB workspace\n", prop.name,
              prop.multiProcessorCount, cublasLtGetVersion(), cublasLtGetCudartVersion(), kWorkspaceBytes >> 20);

  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *sink;
  CK(cudaMalloc(&sink, 4));
  warm_clocks(prop, stream, sink);

  void *workspace;
  CK(cudaMalloc(&workspace, kWorkspaceBytes));
  cublasLtMatmulPreference_t pref;
  LT(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t max_workspace = kWorkspaceBytes;
  LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                          sizeof(max_workspace)));

  const int widths[] = {512, 1024, 4096};
  const int batches[] = {1, 8, 32, 128, 256};
  for (int width : widths) {
    Model m;
    m.width = width;
    const size_t per_w = (size_t)width * width;
    m.w.resize(kLayers * per_w);
    m.b.resize((size_t)kLayers * width);
    Rng rng(width);
    const float scale = 1.0f / std::sqrt((float)width);
    for (auto &v : m.w) v = rng.next() * scale;
    for (auto &v : m.b) v = rng.next();
    // cudaMalloc'd buffers are 256-byte aligned, cuBLASLt's default assumption (CUBLASLT_MATMUL_PREF_MIN_
    // ALIGNMENT_*_BYTES); layer offsets keep it: width * width * 4 and width * 4 are multiples of 256.
    CK(cudaMalloc(&m.dw, m.w.size() * 4));
    CK(cudaMalloc(&m.db, m.b.size() * 4));
    float *x, *act[2];
    const size_t act_count = (size_t)kMaxBatch * width;
    CK(cudaMalloc(&x, act_count * 4));
    CK(cudaMalloc(&act[0], act_count * 4));
    CK(cudaMalloc(&act[1], act_count * 4));
    // Uploads on the non-blocking stream itself: it does not wait for the legacy default stream.
    CK(cudaMemcpyAsync(m.dw, m.w.data(), m.w.size() * 4, cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(m.db, m.b.data(), m.b.size() * 4, cudaMemcpyHostToDevice, stream));
    CK(cudaStreamSynchronize(stream));

    for (int batch : batches) {
      // Fresh input per cell.
      std::vector<float> hx((size_t)batch * width);
      Rng xr((uint64_t)width * 1000 + batch);
      for (auto &v : hx) v = xr.next();
      CK(cudaMemcpyAsync(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice, stream));
      CK(cudaStreamSynchronize(stream));

      Cell c;
      describe(lt, pref, m, batch, c);
      print_algo(m, batch, c);
      const size_t out_bytes = (size_t)batch * width * 4;
      auto poison = [&] {
        CK(cudaMemsetAsync(act[0], 0xFF, out_bytes, stream));  // 0xFFFFFFFF is a NaN
        CK(cudaMemsetAsync(act[1], 0xFF, out_bytes, stream));
      };
      // One layer: skinny_test's tolerance (1e-5), every row. Then the 16-layer chain, eagerly (this also
      // loads every kernel before capture) and as the graph's first forward: 1e-4, skinny_test's 1e-5
      // per layer allowing for 16 layers of accumulated rounding; a layout or epilogue mistake is O(1).
      const Reference one_layer = reference(m, hx, batch, 1, true);
      const Reference chain = reference(m, hx, batch, kLayers, false);
      poison();
      forward(lt, m, c, 1, x, act, workspace, stream);
      bool ok = check_output("cublaslt 1 layer", width, batch, one_layer, act[0], stream, 1e-5);
      poison();
      forward(lt, m, c, kLayers, x, act, workspace, stream);
      ok &= check_output("cublaslt eager 16 layers", width, batch, chain, act[1], stream, 1e-4);

      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      forward(lt, m, c, kLayers, x, act, workspace, stream);
      CK(cudaStreamEndCapture(stream, &graph));
      CK(cudaGraphInstantiate(&exec, graph, 0));
      size_t nodes = 0;
      CK(cudaGraphGetNodes(graph, nullptr, &nodes));
      poison();
      CK(cudaGraphLaunch(exec, stream));
      ok &= check_output("cublaslt graph 16 layers", width, batch, chain, act[1], stream, 1e-4);
      std::printf("graph: width %d batch %d: %zu nodes for %d layers\n", width, batch, nodes, kLayers);
      if (ok) print_graph_times(m, batch, exec, stream);
      CK(cudaGraphExecDestroy(exec));
      CK(cudaGraphDestroy(graph));
      release(c);
    }
    for (void *ptr : {(void *)x, (void *)act[0], (void *)act[1], (void *)m.dw, (void *)m.db}) CK(cudaFree(ptr));
  }
  LT(cublasLtMatmulPreferenceDestroy(pref));
  LT(cublasLtDestroy(lt));
  CK(cudaFree(workspace));
  CK(cudaFree(sink));
  CK(cudaStreamDestroy(stream));
  std::printf("\nchecks failed: %d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
