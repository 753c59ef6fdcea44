/**
 * Matrix products on cuBLASLt, NVIDIA's matmul library, in FP32 and on the tensor cores in BF16
 * and FP16: a {@link org.cudagraph4j.blas.Matmul} describes a product (layouts, transposes, compute
 * type, epilogue), a {@link org.cudagraph4j.blas.CublasLt} handle plans it once, and a
 * {@link org.cudagraph4j.blas.MatmulPlan} runs it on buffers, eagerly or into a graph.
 *
 * <p>cuBLASLt is optional: {@code libcublasLt.so.13} is opened on the first handle, and the rest of
 * the library runs without it.
 */
package org.cudagraph4j.blas;
