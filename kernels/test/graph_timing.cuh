// cudagraph4j native harnesses: what kernels/test/skinny_test.cu and benchmarks/native/mlp_cublaslt.cu
// share, so that the native MLP and its cuBLASLt baseline are timed by the same loop: CUDA error
// checks, the clock warm-up, and the µs per forward of a captured graph. Beside both in the GPU
// bundle (benchmarks/native/); in this tree mlp_cublaslt.cu finds it with -I kernels/test.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) check_cuda((x), #x, __LINE__)
static void check_cuda(cudaError_t e, const char *what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FATAL line %d: %s -> %s: %s\n", line, what, cudaGetErrorName(e), cudaGetErrorString(e));
    std::exit(2);
  }
}

__global__ void spin(float *sink, long long cycles) {
  long long start = clock64();
  float x = threadIdx.x;
  while (clock64() - start < cycles) x = x * 1.0000001f + 1e-7f;
  if (x == -1.0f) *sink = x;
}

/// Spins every SM for a few seconds so that the first measurement runs at boost clocks, and says
/// how long it took. sink is 4 bytes of device memory the spin never writes in practice.
static void warm_clocks(const cudaDeviceProp &prop, cudaStream_t stream, float *sink) {
  auto warm_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) spin<<<prop.multiProcessorCount * 4, 256, 0, stream>>>(sink, 200000000LL);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(stream));
  double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count();
  std::printf("clock warm-up: %.1f s of spinning kernels on every SM before the first measurement\n", warm_s);
}

/// µs per launch of a captured graph, both ways a server sees it.
struct GraphTimes {
  double sync_median_us;  // launch then synchronize, median of 200: the latency of one forward
  double pipelined_us;    // 200 launches back to back, one synchronize: the throughput
};

/// Times exec on stream after 20 untimed launches.
static GraphTimes time_graph(cudaGraphExec_t exec, cudaStream_t stream) {
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
  return {sync_us[100], piped};
}
