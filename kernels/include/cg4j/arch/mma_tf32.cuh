// cudagraph4j kernels: TF32 tensor-core multiply-accumulate (sm_80+ `mma.sync`) and the split of an
// FP32 operand into TF32 parts.
#pragma once

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#error "cg4j tensor-core kernels need sm_80 or newer (TF32 mma.sync)"
#endif

namespace cg4j {
namespace arch {

/// How FP32 operands meet the TF32 tensor cores (TF32: FP32's 8-bit exponent, 10 explicit mantissa bits).
enum class TensorMath {
  /// 3xTF32: each operand x = big + small, both TF32, and a*b ~ big*big + big*small + small*big,
  /// accumulated in FP32 (the small*small term, about 2^-22 relative, is dropped): FP32-level
  /// accuracy at three tensor-core products per term.
  kFastF32,
  /// One TF32 product per term (the tensor core truncates each operand to 10 mantissa bits):
  /// about 1e-3 relative error.
  kTF32,
};

/// x = big + small, both TF32 in FP32 bit patterns: big is x truncated to TF32 (it cannot overflow),
/// small the exact residual x - big with 0x1000 added to its bits, so that the tensor core's own
/// truncation of its low 13 bits rounds it to nearest (ties away). Where the residual is zero (x is
/// a TF32 value, or infinite) small is 2^-126, the least normal float, instead: a zero small part
/// would make the cross term inf * 0 = NaN wherever the other operand is infinite, and 2^-126 times a
/// finite big part is below any FP32 sum that is not itself near underflow. A NaN x gives a NaN big.
__device__ __forceinline__ void tf32_split(float x, unsigned &big, unsigned &small) {
  big = __float_as_uint(x) & 0xffffe000u;
  const float residual = x == __uint_as_float(big) ? 1.17549435e-38f : x - __uint_as_float(big);
  small = __float_as_uint(residual) + 0x1000u;
}

/// d = a * b + c for one m16n8k8 tile: a row-major 16x8 (4 registers per lane), b column-major 8x8
/// (2 registers per lane), d 16x8 in FP32 (4 per lane). Lane l holds, with g = l / 4, t = l % 4:
///   a0 (g, t)  a1 (g + 8, t)  a2 (g, t + 4)  a3 (g + 8, t + 4)     b0 (k = t, n = g)  b1 (k = t + 4, n = g)
///   d0 (g, 2t) d1 (g, 2t + 1) d2 (g + 8, 2t) d3 (g + 8, 2t + 1)
///
/// The tensor core adds the products to c with truncation, not round-to-nearest (its FP32 sums drift
/// toward zero as K grows), so FP32-accurate callers keep c short-lived and add it to their own
/// accumulator with an FP32 add.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// d = a * b for one m16n8k8 tile (the accumulator input is zero), same layouts as above.
__device__ __forceinline__ void mma_m16n8k8_tf32_zero_c(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

/// Loads 4 (x4) or 2 (x2) 8x4 tiles of 32-bit words from shared memory, one row of 16 bytes per
/// address: lanes 8q .. 8q + 7 give the rows of tile q, and lane l receives word l % 4 of row l / 4
/// of each tile, which is where an mma.sync TF32 operand fragment wants it. Rows 16-byte aligned.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], unsigned smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr));
}

}  // namespace arch
}  // namespace cg4j
