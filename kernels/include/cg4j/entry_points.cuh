// cudagraph4j kernels: extern "C" entry points with the uniform parameter lists of kernels/README.md,
// shared by the SIMT and the tensor-core compositions (any GEMM type with kThreads and run()).
#pragma once

// extern "C" entry points with the uniform parameter lists of kernels/README.md.
#define CG4J_SGEMM_LINCOMB_ENTRY(NAME, GEMM, MIN_BLOCKS)                                                   \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, \
           float *C, int ldc) {                                                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {alpha, beta}, C, ldc, C, ldc);                                     \
  }

#define CG4J_SGEMM_BIAS_RELU_ENTRY(NAME, GEMM, MIN_BLOCKS)                                                 \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, const float *A, int lda, const float *B, int ldb, const float *bias,       \
           float *D, int ldd) {                                                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {bias}, D, ldd, nullptr, 0);                                        \
  }

// Split-K entries: the family's parameters plus the workspace (slices * M * N floats) and one int
// ticket per output tile, both zero before the first launch; gridDim.z is the number of slices.
#define CG4J_SGEMM_LINCOMB_SPLITK_ENTRY(NAME, GEMM, MIN_BLOCKS)                                            \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, \
           float *C, int ldc, float *workspace, int *tickets) {                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {alpha, beta}, C, ldc, C, ldc, workspace, tickets);                 \
  }

#define CG4J_SGEMM_BIAS_RELU_SPLITK_ENTRY(NAME, GEMM, MIN_BLOCKS)                                          \
  extern "C" __global__ void __launch_bounds__(GEMM::kThreads, MIN_BLOCKS)                                 \
      NAME(int M, int N, int K, const float *A, int lda, const float *B, int ldb, const float *bias,       \
           float *D, int ldd, float *workspace, int *tickets) {                                            \
    GEMM::run(M, N, K, A, lda, B, ldb, {bias}, D, ldd, nullptr, 0, workspace, tickets);                    \
  }

// GEMV entries: the non-split families' parameters (kernels/README.md).
#define CG4J_GEMV_LINCOMB_ENTRY(NAME, GEMV)                                                                \
  extern "C" __global__ void __launch_bounds__(GEMV::kThreads)                                             \
      NAME(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, \
           float *C, int ldc) {                                                                            \
    GEMV::run(M, N, K, A, lda, B, ldb, {alpha, beta}, C, ldc, C, ldc);                                     \
  }
#define CG4J_GEMV_BIAS_RELU_ENTRY(NAME, GEMV)                                                              \
  extern "C" __global__ void __launch_bounds__(GEMV::kThreads)                                             \
      NAME(int M, int N, int K, const float *A, int lda, const float *B, int ldb, const float *bias,       \
           float *D, int ldd) {                                                                            \
    GEMV::run(M, N, K, A, lda, B, ldb, {bias}, nullptr, 0, D, ldd);                                        \
  }
