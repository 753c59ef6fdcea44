// cudagraph4j kernels: D = relu(accumulator + bias[col]).
#pragma once

namespace cg4j {
namespace epilogue {
namespace thread {

/// `max(x, 0)` that keeps NaN, as torch.relu does (fmaxf would turn NaN into 0).
__device__ __forceinline__ float relu_propagate_nan(float x) { return x < 0.0f ? 0.0f : x; }

/// Bias (one value per output column, i.e. per output feature of a Linear layer) then ReLU.
/// Never reads a source matrix.
class LinearCombinationBiasRelu {
 public:
  struct Params {
    const float *bias;  ///< N floats
  };

  __device__ __forceinline__ explicit LinearCombinationBiasRelu(Params const &params) : params_(params) {}

  __device__ __forceinline__ bool is_source_needed() const { return false; }

  __device__ __forceinline__ float operator()(float accum, float /*source*/, int col) const {
    return (*this)(accum, col);
  }

  __device__ __forceinline__ float operator()(float accum, int col) const {
    return relu_propagate_nan(accum + __ldg(params_.bias + col));
  }

 private:
  Params params_;
};

}  // namespace thread
}  // namespace epilogue
}  // namespace cg4j
