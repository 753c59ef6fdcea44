// Kernels for the library's own gpu tests. Rebuild the committed fatbin with ./build.sh.
#include <cstdint>

// out[i] = i * scale + offset: every element gets a distinct, checkable value.
extern "C" __global__ void write_pattern(float* out, int n, float scale, float offset) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        out[i] = i * scale + offset;
    }
}

// y = a * x + y, the classic check that a kernel reads its inputs.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = a * x[i] + y[i];
    }
}

// Mixed parameter sizes, for parameter-info checks: 8, 1, 2, 4, 8, 8.
extern "C" __global__ void mixed_parameters(int64_t* out, char c, short s, int i, long long l, double d) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = c + s + i + l + static_cast<long long>(d);
    }
}

// Does nothing: the launch-overhead baseline.
extern "C" __global__ void empty_kernel() {}
