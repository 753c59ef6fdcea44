package org.cudagraph4j;

/**
 * One parameter of a kernel, as {@code cudaFuncGetParamInfo} reports it.
 *
 * @param index position in the parameter list, from 0
 * @param offsetBytes offset in the kernel's parameter buffer
 * @param sizeBytes size of the parameter
 */
public record KernelParameter(int index, long offsetBytes, long sizeBytes) {}
