// Kernels that set a conditional graph node's value on the device (cudaGraphSetConditional), for
// org.cudagraph4j.graph.ConditionalKernels. Each runs as one thread, as a kernel node upstream of
// the conditional node, or as the last node of a WHILE body to decide whether it runs again.
//
// Shipped as PTX for compute_80: the driver JIT-compiles these few instructions for any GPU from
// sm_80 on. cudaGraphSetConditional is resolved by the driver when the image is loaded (as vprintf
// is), so no device runtime library is linked.
//
// A user's own kernel sets a condition the same way: take the handle as an `unsigned long long`
// (cudaGraphConditionalHandle) parameter, pass ConditionalHandle.value() for it, and call
// cudaGraphSetConditional(handle, value) from one thread.
#include <cuda_runtime.h>

// handle = *value. For IF, a non-zero value runs the body (the THEN body of IF/ELSE); for SWITCH,
// it is the index of the body to run; for WHILE, non-zero runs the body (again).
extern "C" __global__ void cg4j_set_conditional(cudaGraphConditionalHandle handle, const unsigned int* value) {
    cudaGraphSetConditional(handle, *value);
}

// A counted loop, as the last node of a WHILE body: decrements *remaining (never below 0) and keeps
// the loop going while it is still positive. Entered with the count n >= 1 (set upstream from it
// with cg4j_set_conditional), the body runs n times; a count of 0 runs it no times.
extern "C" __global__ void cg4j_count_down(cudaGraphConditionalHandle handle, unsigned int* remaining) {
    unsigned int left = *remaining;
    left = left > 0 ? left - 1 : 0;
    *remaining = left;
    cudaGraphSetConditional(handle, left > 0 ? 1u : 0u);
}

// handle = (*value > threshold): a loop that runs until a device-computed value (a residual, an
// error estimate) has fallen to the threshold. NaN compares false, so it ends the loop.
extern "C" __global__ void cg4j_set_conditional_if_greater(cudaGraphConditionalHandle handle, const float* value,
                                                           float threshold) {
    cudaGraphSetConditional(handle, *value > threshold ? 1u : 0u);
}
