// cudagraph4j kernels: predicated global loads into registers, for tile loaders that stage through
// registers instead of cp.async. `.cg` (L2 only), like the 16-byte cp.async copies: a threadblock
// reads each element of its operand tile once.
#pragma once

namespace cg4j {
namespace arch {

/// Loads 16 bytes (4 floats; the address must be 16-byte aligned) when `pred` holds; otherwise
/// reads nothing and sets `v` to zero. (Zero rather than "unchanged": a value kept from the
/// previous load would have to live in registers from one k-tile to the next.)
__device__ __forceinline__ void ldg_128_zfill(float (&v)[4], const float *ptr, bool pred) {
  float4 t = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (pred) t = __ldcg(reinterpret_cast<const float4 *>(ptr));
  v[0] = t.x;
  v[1] = t.y;
  v[2] = t.z;
  v[3] = t.w;
}

}  // namespace arch
}  // namespace cg4j
