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
 *
 * <h2>Graph memory</h2>
 * A graph can own memory: {@link org.cudagraph4j.graph.CudaGraph#addMemAlloc} and
 * {@link org.cudagraph4j.graph.CudaGraph#addMemFree} add allocation and free nodes, and
 * {@link org.cudagraph4j.CudaStream#allocate} on a capturing stream adds an allocation node, whose
 * buffer's {@code close()} during the capture adds the free node. The rules:
 * <ul>
 *   <li>The buffer is a {@linkplain org.cudagraph4j.DeviceBuffer#isGraphMemory() view} at an
 *       address fixed for the life of the graph. The memory behind it exists only while a launch
 *       runs between the two nodes, and its contents do not survive from one launch to the next.</li>
 *   <li>Only the graph's own nodes may use it: nodes added to that graph or to its conditional
 *       nodes' bodies (which hold no memory nodes themselves), or work captured into the capture
 *       that allocated it. Synchronous copies and memsets, eager launches and other
 *       graphs are refused with {@link java.lang.IllegalStateException} or
 *       {@link java.lang.IllegalArgumentException} before anything reaches the device, where the
 *       access would be an illegal address that ruins the context.</li>
 *   <li>A graph is instantiated only if it frees every allocation it makes, so that no memory
 *       outlives a launch; CUDA then allows one executable of it at a time, and no use of it as a
 *       child graph.</li>
 *   <li>The graph and each executable made from it hold the views; closing them closes the views.
 *       The physical memory is the runtime's: an executable keeps what its launches mapped until it
 *       is closed, {@link org.cudagraph4j.CudaDevice#graphMemoryUsage()} reports it, and
 *       {@link org.cudagraph4j.CudaDevice#trimGraphMemory()} returns what no executable holds.</li>
 * </ul>
 */
package org.cudagraph4j.graph;
