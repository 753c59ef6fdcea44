// cudagraph4j kernels: programmatic dependent launch (PDL), sm_90 and newer.
//
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may start while the
// kernel before it on the stream is still running. wait_for_prerequisite_grids() blocks until that
// kernel has completed and its memory is visible, so everything before it must be independent of
// the previous kernel's output (and must not write anything it reads); allow_dependent_launch()
// lets the next kernel start its own independent prologue. Without the attribute (or before
// sm_90) both are no-ops, so one kernel serves both kinds of launch and gives the same bits.
#pragma once

namespace cg4j {
namespace arch {

__device__ __forceinline__ void wait_for_prerequisite_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Asks L2 for the 128-byte line holding `p`: no register result, no fault on a valid address.
__device__ __forceinline__ void prefetch_l2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

}  // namespace arch
}  // namespace cg4j
