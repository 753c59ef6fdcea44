// cudagraph4j kernels: umbrella header.
#pragma once

#include "arch/cp_async.cuh"
#include "arch/grid_dependency.cuh"
#include "gemm_shape.cuh"
#include "layout.cuh"
#include "gemm/threadblock/mma_multistage_simt.cuh"
#include "gemm/threadblock/threadblock_swizzle.cuh"
#include "gemm/kernel/gemm.cuh"
#include "gemm/kernel/gemm_split_k.cuh"
#include "epilogue/thread/linear_combination.cuh"
#include "epilogue/thread/linear_combination_bias_relu.cuh"
#include "epilogue/threadblock/epilogue_simt.cuh"
#include "epilogue/kernel/elementwise_epilogue.cuh"
