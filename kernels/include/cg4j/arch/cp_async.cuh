// cudagraph4j kernels: asynchronous global->shared copies (sm_80+ `cp.async`).
#pragma once

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
#error "cg4j kernels need sm_80 or newer (cp.async)"
#endif

namespace cg4j {
namespace arch {

/// Copies one float from global to shared memory asynchronously. When `pred` is false nothing is
/// read (src-size 0; the address is not dereferenced, as in CUTLASS's zfill) and the shared word
/// is zero-filled, which is what the K residue needs. `.ca` because 4-byte copies may not bypass L1.
__device__ __forceinline__ void cp_async_zfill_4(unsigned smem_addr, const void *global_ptr, bool pred) {
  int src_bytes = pred ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr), "l"(global_ptr),
               "r"(src_bytes));
}

/// Copies one float when `pred` holds; otherwise issues nothing and leaves shared memory as it was.
/// Used for rows/columns past the M/N edge inside full k-tiles: they only feed outputs that are
/// never stored, so they need no zero fill.
__device__ __forceinline__ void cp_async_pred_4(unsigned smem_addr, const void *global_ptr, bool pred) {
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %2, 0;\n"
      "  @p cp.async.ca.shared.global [%0], [%1], 4;\n"
      "}\n" ::"r"(smem_addr),
      "l"(global_ptr), "r"((int)pred));
}

/// Shared-window address of a generic pointer to shared memory.
__device__ __forceinline__ unsigned smem_u32(const void *smem_ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(smem_ptr));
}

/// 16-byte variant: copies `src_bytes` (0..16) and zero-fills the rest of the 16 bytes.
/// Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async_zfill_16(unsigned smem_addr, const void *global_ptr, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(global_ptr),
               "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_fence() { asm volatile("cp.async.commit_group;\n" ::); }

/// Blocks until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace arch
}  // namespace cg4j
