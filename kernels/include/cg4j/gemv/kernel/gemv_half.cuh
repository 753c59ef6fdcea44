// cudagraph4j kernels: a half-precision GEMV with the bias+ReLU epilogue, for the small batches of
// a BF16 or FP16 Linear layer: Y[b, n] = relu(sum_k X[b, k] W[n, k] + bias[n]) for b < batch <= 8,
// X [batch, K], W [N, K] (PyTorch's layout) and Y [batch, N], row-major.
//
// At batch 8 or less a layer's time is the read of its weights, 2 bytes each, which every row of the
// batch reuses. One warp owns one output feature n and streams its weight row once, 16 bytes (8 elements)
// per lane per load, two loads of W in flight per lane, and multiplies each against every row of X
// (small, read through L1 and L2 by every warp). Products are exact in FP32 and summed there, then
// reduced across the warp by shuffles; lane 0 adds the bias, applies ReLU and rounds once to
// nearest even. Needs K % 8 == 0 and X, W 16-byte aligned (the library checks before launching).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../epilogue/kernel/elementwise_epilogue.cuh"
#include "../../epilogue/thread/linear_combination_bias_relu.cuh"

namespace cg4j {
namespace gemv {
namespace kernel {

template <typename Element>
__device__ __forceinline__ Element bits_to(unsigned short bits);
template <>
__device__ __forceinline__ __half bits_to<__half>(unsigned short bits) { return __ushort_as_half(bits); }
template <>
__device__ __forceinline__ __nv_bfloat16 bits_to<__nv_bfloat16>(unsigned short bits) {
  return __ushort_as_bfloat16(bits);
}

template <typename Element, int MaxBatch, int Unroll, int Warps = 4>
struct GemvHalfBiasRelu {
  static constexpr int kMaxBatch = MaxBatch;
  static constexpr int kWarps = Warps;
  static constexpr int kThreads = 32 * Warps;
  static constexpr int kVector = 8;  ///< elements per 16-byte load

  /// The first and second half of a 32-bit pair, widened exactly.
  __device__ __forceinline__ static float low(unsigned pair) {
    return epilogue::kernel::to_float(bits_to<Element>(static_cast<unsigned short>(pair & 0xffffu)));
  }
  __device__ __forceinline__ static float high(unsigned pair) {
    return epilogue::kernel::to_float(bits_to<Element>(static_cast<unsigned short>(pair >> 16)));
  }

  /// The dot product of eight halves of W with eight of X, 16 bytes each, products exact in FP32.
  __device__ __forceinline__ static float dot8(uint4 w, uint4 x) {
    const unsigned ws[4] = {w.x, w.y, w.z, w.w};
    const unsigned xs[4] = {x.x, x.y, x.z, x.w};
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sum = fmaf(low(ws[i]), low(xs[i]), sum);
      sum = fmaf(high(ws[i]), high(xs[i]), sum);
    }
    return sum;
  }

  __device__ __forceinline__ static void run(int batch, int N, int K, const Element *X, const Element *W,
                                             const Element *bias, Element *Y) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const long long n = (long long)blockIdx.x * kWarps + warp;
    if (n >= N) return;
    const uint4 *w_row = reinterpret_cast<const uint4 *>(W + n * K);
    const int vectors = K / kVector;
    float acc[kMaxBatch];
#pragma unroll
    for (int b = 0; b < kMaxBatch; ++b) acc[b] = 0.0f;
    // Unroll loads of W issued before any is used, so that they are in flight together.
    for (int v0 = lane; v0 < vectors; v0 += 32 * Unroll) {
      uint4 w[Unroll];
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const int v = v0 + 32 * u;
        w[u] = v < vectors ? __ldg(w_row + v) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const int v = v0 + 32 * u;
        if (v < vectors) {
#pragma unroll
          for (int b = 0; b < kMaxBatch; ++b) {
            if (b < batch) {
              const uint4 x = __ldg(reinterpret_cast<const uint4 *>(X + (long long)b * K) + v);
              acc[b] += dot8(w[u], x);
            }
          }
        }
      }
    }
#pragma unroll
    for (int b = 0; b < kMaxBatch; ++b) {
      if (b < batch) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], offset);
      }
    }
    if (lane == 0) {
      const float bias_n = epilogue::thread::load_bias(bias + n);
#pragma unroll
      for (int b = 0; b < kMaxBatch; ++b) {
        if (b < batch) {
          Y[(long long)b * N + n] =
              epilogue::kernel::from_float<Element>(epilogue::thread::relu_propagate_nan(acc[b] + bias_n));
        }
      }
    }
  }
};

}  // namespace kernel
}  // namespace gemv
}  // namespace cg4j
