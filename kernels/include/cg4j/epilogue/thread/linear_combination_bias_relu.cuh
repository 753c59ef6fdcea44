// cudagraph4j kernels: D = relu(accumulator + bias[col]).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace cg4j {
namespace epilogue {
namespace thread {

/// `max(x, 0)` that keeps NaN, as torch.relu does (fmaxf would turn NaN into 0).
__device__ __forceinline__ float relu_propagate_nan(float x) { return x < 0.0f ? 0.0f : x; }

__device__ __forceinline__ float load_bias(const float *bias) { return __ldg(bias); }
__device__ __forceinline__ float load_bias(const __half *bias) { return __half2float(__ldg(bias)); }
__device__ __forceinline__ float load_bias(const __nv_bfloat16 *bias) { return __bfloat162float(__ldg(bias)); }

/// Bias (one value per output column, i.e. per output feature of a Linear layer) then ReLU, in
/// float whatever the bias's element type. Never reads a source matrix.
template <typename BiasElement = float>
class LinearCombinationBiasReluOf {
 public:
  struct Params {
    const BiasElement *bias;  ///< N elements
  };

  __device__ __forceinline__ explicit LinearCombinationBiasReluOf(Params const &params) : params_(params) {}

  __device__ __forceinline__ bool is_source_needed() const { return false; }

  __device__ __forceinline__ float operator()(float accum, float /*source*/, int col) const {
    return (*this)(accum, col);
  }

  __device__ __forceinline__ float operator()(float accum, int col) const {
    return relu_propagate_nan(accum + load_bias(params_.bias + col));
  }

 private:
  Params params_;
};

using LinearCombinationBiasRelu = LinearCombinationBiasReluOf<float>;

}  // namespace thread
}  // namespace epilogue
}  // namespace cg4j
