/**
 * CUDA Graphs: {@link org.cudagraph4j.graph.StreamCapture stream capture}, explicit construction
 * ({@link org.cudagraph4j.graph.CudaGraph}), instantiation, launch and update
 * ({@link org.cudagraph4j.graph.GraphExec}), introspection, the box diagram and DOT;
 * {@linkplain org.cudagraph4j.graph.ConditionalNode conditional nodes} (IF, IF/ELSE, WHILE and
 * SWITCH, decided on the device, with CUDA's rules for their bodies checked in Java); and
 * {@link org.cudagraph4j.graph.GraphArchive}, which saves a graph in one process and rebuilds it in
 * another against named buffers, refusing every mismatch.
 *
 * <p>Graphs, executables and captures in progress keep alive the libraries, buffers and events
 * their nodes use (a conditional node's bodies included); an executable holds exactly what its
 * current nodes use, across updates. The model is described once, in
 * {@link org.cudagraph4j the root package's documentation}.
 */
package org.cudagraph4j.graph;
