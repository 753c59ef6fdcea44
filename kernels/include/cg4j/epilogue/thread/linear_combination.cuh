// cudagraph4j kernels: D = alpha * accumulator + beta * C.
#pragma once

namespace cg4j {
namespace epilogue {
namespace thread {

/// Linear combination `alpha * AB + beta * C`. With beta == 0 the source C is never read, so C may
/// hold anything (NaN included) on entry.
class LinearCombination {
 public:
  struct Params {
    float alpha;
    float beta;
  };

  __device__ __forceinline__ explicit LinearCombination(Params const &params) : params_(params) {}

  /// Whether the epilogue has to load C.
  __device__ __forceinline__ bool is_source_needed() const { return params_.beta != 0.0f; }

  /// Output when the source is needed.
  __device__ __forceinline__ float operator()(float accum, float source, int /*col*/) const {
    return fmaf(params_.beta, source, params_.alpha * accum);
  }

  /// Output when the source is not needed.
  __device__ __forceinline__ float operator()(float accum, int /*col*/) const { return params_.alpha * accum; }

 private:
  Params params_;
};

}  // namespace thread
}  // namespace epilogue
}  // namespace cg4j
