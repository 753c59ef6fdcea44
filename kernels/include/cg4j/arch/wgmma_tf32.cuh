// cudagraph4j kernels: warpgroup-wide TF32 matrix multiply-accumulate on sm_90a (`wgmma.mma_async`), A
// from registers and B from shared memory through a matrix descriptor.
//
// A warpgroup is four consecutive warps (128 threads). One wgmma_tf32<N> computes a 64 x N x 8 product:
//   A 64 x 8, in registers: warp w of the warpgroup holds rows 16w .. 16w + 15 in the mma.sync m16n8k8
//     A layout (arch/mma_tf32.cuh): lane l has a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
//     with g = l / 4, t = l % 4, rows counted from 16w.
//   B 8 x N, in shared memory K-major (stored [N][K]) in the 128-byte swizzled layout of
//     Smem128BSwizzle: each n a 128-byte row of 32 k, its 16-byte chunk c stored at chunk c ^ (n % 8);
//     groups of 8 rows 1024 bytes apart, the group of rows 0-7 at a 1024-byte aligned address.
//   D 64 x N in FP32: warp w's rows 16w + g and 16w + g + 8, lane l holding d[4j + r] = D(16w + g + 8 (r / 2),
//     8j + 2t + r % 2) for j = 0 .. N/8 - 1, the mma.sync D layout once per n8 column.
// The product is asynchronous: its registers (d and a) must not be read or written until
// wgmma_wait() has returned for the group that holds it, and the shared memory it reads not
// overwritten. Shared memory written through the generic proxy (st.shared, cp.async) is made
// visible to it by fence_proxy_async() in the writing thread and a barrier.
//
// Like mma.sync, the tensor core reads only the top 19 bits of each FP32 operand (TF32) and adds
// the products to d with truncation, so FP32-accurate callers keep d short-lived (see
// gemm/threadblock/mma_multistage_wgmma.cuh).
#pragma once

// The instructions exist on sm_90a alone. Other device passes (the other architectures' cubins, and
// the manifest generator, which only takes the kernels' sizes) see empty bodies, and a kernel built
// on them fails to compile (MmaMultistageWgmma checks CG4J_WGMMA_AVAILABLE).
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CG4J_WGMMA_AVAILABLE 0
#else
#define CG4J_WGMMA_AVAILABLE 1
#endif

namespace cg4j {
namespace arch {

/// The 128-byte swizzle of a K-major operand tile: rows of 32 floats, element (row, k) at byte
/// row * 128 + (((k / 4) ^ row) % 8) * 16 + (k % 4) * 4 from the tile's 1024-byte aligned base (the
/// layout TileLoaderPitchLinear<..., kSwizzle128B> writes).
struct Smem128BSwizzle {
  static constexpr int kRowFloats = 32;
};

/// The wgmma matrix descriptor of a 128-byte swizzled K-major tile at shared-window address
/// `smem_addr` (the tile's first row, plus 32 bytes per k step of 8 into the row): start address
/// in 16-byte units, leading-dimension offset unused by swizzled K-major layouts (1), stride
/// between groups of 8 rows 1024 bytes, swizzle mode 1 (128 bytes) in bits 62-63.
__device__ __forceinline__ unsigned long long smem_descriptor_128b(unsigned smem_addr) {
  return (unsigned long long)((smem_addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
         (1ull << 62);
}

/// Orders this warpgroup's earlier register and shared-memory accesses before the wgmma that follow.
__device__ __forceinline__ void wgmma_fence() {
#if CG4J_WGMMA_AVAILABLE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/// Closes the group of the wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() {
#if CG4J_WGMMA_AVAILABLE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// Blocks until at most N of this warpgroup's committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if CG4J_WGMMA_AVAILABLE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/// Makes this thread's generic-proxy writes to shared memory visible to the async proxy (wgmma).
__device__ __forceinline__ void fence_proxy_async() {
#if CG4J_WGMMA_AVAILABLE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// Tells the compiler that `r` may change here: keeps reads of a wgmma accumulator after the wait
/// that completes it, and writes before the wgmma that reads it.
__device__ __forceinline__ void fence_operand(float &r) { asm volatile("" : "+f"(r)::"memory"); }

/// d (+)= a * b for one 64 x N x 8 TF32 product; scale_d 0 ignores d's old value (d = a * b).
template <int N>
__device__ __forceinline__ void wgmma_tf32(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long b_desc,
                                           int scale_d);

template <>
__device__ __forceinline__ void wgmma_tf32<64>(float (&d)[32], const unsigned (&a)[4], unsigned long long b_desc,
                                            int scale_d) {
#if CG4J_WGMMA_AVAILABLE
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "{%32,%33,%34,%35}, %36, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d));
#endif
}

template <>
__device__ __forceinline__ void wgmma_tf32<128>(float (&d)[64], const unsigned (&a)[4], unsigned long long b_desc,
                                            int scale_d) {
#if CG4J_WGMMA_AVAILABLE
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "{%64,%65,%66,%67}, %68, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d));
#endif
}

}  // namespace arch
}  // namespace cg4j
