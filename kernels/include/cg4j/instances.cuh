// cudagraph4j kernels: what the instance list (src/instances.def) is written in, for the two files
// that expand it: cg4j_kernels.cu, which compiles the instances, and manifest_gen.cu, which prints
// their launch metadata from the same types.
#pragma once

#include "cg4j/sgemm_simt.cuh"
#include "cg4j/sgemm_tensor_op.cuh"
#include "cg4j/sgemm_wgmma.cuh"
#include "cg4j/gemv/kernel/gemv_half.cuh"

using cg4j::GemmShape;
using cg4j::ThreadShape;
using cg4j::layout::ColumnMajor;
using cg4j::layout::RowMajor;

#define CG4J_OUTPUT_OP_LINCOMB cg4j::epilogue::thread::LinearCombination
#define CG4J_OUTPUT_OP_BIAS_RELU cg4j::epilogue::thread::LinearCombinationBiasRelu
