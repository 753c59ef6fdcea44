/**
 * CUDA Graphs: {@link org.cudagraph4j.graph.StreamCapture stream capture}, explicit construction
 * ({@link org.cudagraph4j.graph.CudaGraph}), instantiation, launch and update
 * ({@link org.cudagraph4j.graph.GraphExec}), introspection, the box diagram and DOT.
 *
 * <p>Graphs, executables and captures in progress keep alive the libraries, buffers and events
 * their nodes use; an executable holds exactly what its current nodes use, across updates. The
 * model is described once, in {@link org.cudagraph4j the root package's documentation}.
 */
package org.cudagraph4j.graph;
