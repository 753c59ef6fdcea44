/**
 * What a failed CUDA call raises: {@link org.cudagraph4j.error.CudaException} with the function,
 * the raw {@code cudaError_t} and the runtime's name and explanation for it;
 * {@link org.cudagraph4j.error.CudaError}, every status as an enum, with whether it is sticky;
 * {@link org.cudagraph4j.error.StreamCaptureException} for what a capture forbids; and
 * {@link org.cudagraph4j.error.CudaRuntimeNotFoundException} when the runtime or NVRTC cannot be
 * loaded.
 *
 * <p>The types sit below every other package of the library and use none of them: the layer of
 * checked native calls throws them, and the graph package refines them for a failed
 * instantiation or update ({@link org.cudagraph4j.graph.GraphInstantiateException},
 * {@link org.cudagraph4j.graph.GraphUpdateException}). Misuse of the API is an
 * {@link java.lang.IllegalArgumentException} or {@link java.lang.IllegalStateException} instead,
 * raised before anything reaches the runtime.
 */
package org.cudagraph4j.error;
