// cudagraph4j native harnesses: the host data cg4j_test.cu and tensor_op_test.cu share: a seeded
// random generator for inputs, the NaN poison that outputs are filled with before a launch so that
// an element never written is caught, and a float buffer on the device. CK(x), the including
// harness's CUDA status check, must be defined before this is included.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

/// xorshift64, seeded: the same inputs on every run for a given seed.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double uniform01() { return ((next() >> 11) + 0.5) / 9007199254740992.0; }
  float uniform() { return (float)(uniform01() * 2.0 - 1.0); }
  float normal() { return (float)(std::sqrt(-2.0 * std::log(uniform01())) * std::cos(6.283185307179586 * uniform01())); }
  /// Sign, mantissa and a power of two spread over 2^-20 .. 2^20: a product spans 80 binades.
  float wide() { return (float)std::ldexp(uniform(), (int)(next() % 41) - 20); }
};

static const uint32_t kPoisonBits = 0x7FC0DEADu;  // a quiet NaN with a recognisable payload
static float poison() {
  float f;
  std::memcpy(&f, &kPoisonBits, 4);
  return f;
}
static bool is_poison(float f) { return std::memcmp(&f, &kPoisonBits, 4) == 0; }
static const int kGuard = 256;  // floats of guard zone after every output buffer

/// count floats of device memory (at least one), freed with the buffer.
struct DevBuf {
  float *p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) { CK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(float))); }
  ~DevBuf() { cudaFree(p); }
  void upload(const std::vector<float> &h) { CK(cudaMemcpy(p, h.data(), h.size() * 4, cudaMemcpyHostToDevice)); }
  std::vector<float> download() const {
    std::vector<float> h(n);
    CK(cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost));
    return h;
  }
};
