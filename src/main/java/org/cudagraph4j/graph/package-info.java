/**
 * CUDA Graphs: {@link org.cudagraph4j.graph.StreamCapture stream capture}, explicit construction
 * ({@link org.cudagraph4j.graph.CudaGraph}) and
 * {@linkplain org.cudagraph4j.graph.CudaGraph#copy() copies}, instantiation, launch and update
 * ({@link org.cudagraph4j.graph.GraphExec}), introspection, the box diagram and DOT;
 * {@linkplain org.cudagraph4j.graph.ConditionalNode conditional nodes} (IF, IF/ELSE, WHILE and
 * SWITCH, decided on the device, with CUDA's rules for their bodies checked in Java); and
 * {@link org.cudagraph4j.graph.GraphArchive}, which saves a graph in one process and rebuilds it in
 * another against named buffers, refusing every mismatch.
 *
 * <p>Graphs, executables and captures in progress keep alive the libraries, buffers and events
 * their nodes use (a conditional node's bodies included; a copy as much as its original); an
 * executable holds exactly what its current nodes use, across updates. The model is described once, in
 * {@link org.cudagraph4j the root package's documentation}.
 *
 * <h2>Other libraries' kernels</h2>
 * A capture records whatever is queued on its streams, also by other libraries (cuBLAS, cuBLASLt,
 * cuDNN, TensorRT) on a capturing stream's {@link org.cudagraph4j.CudaStream#handle() handle} or a
 * {@link org.cudagraph4j.CudaStream#borrow borrowed} one. Such kernels are loaded through the
 * driver, so the runtime cannot read their nodes; the library reads them through the driver's
 * entry points ({@code cuGraphKernelNodeGetParams}, {@code cuFuncGetName}, reached through
 * {@code cudaGetDriverEntryPointByVersion}, with no link to {@code libcuda}):
 * <ul>
 *   <li>{@link org.cudagraph4j.graph.GraphNode#kernelInfo()}, {@code describe()}, {@code toDot()},
 *       {@code nodes()}, {@code dependencies()} and snapshots show them with their name and launch
 *       shape; their {@link org.cudagraph4j.graph.GraphNode#kernelParams()} is empty, since their
 *       arguments are the other library's.</li>
 *   <li>The library's own launches captured between them are still matched to their nodes, by the
 *       kernel each node launches, so they keep their recorded launch and can be updated one by
 *       one.</li>
 *   <li>{@link org.cudagraph4j.graph.GraphExec#update whole-graph updates},
 *       {@link org.cudagraph4j.graph.GraphExec#setEnabled enabling}, child graphs and conditional
 *       bodies take them like any node;
 *       {@link org.cudagraph4j.graph.GraphExec#updateKernelNode updateKernelNode} refuses one,
 *       naming it, unless the new launch is of the kernel the node already launches; a
 *       {@link org.cudagraph4j.graph.GraphArchive} refuses to save one, naming it.</li>
 *   <li>The graph keeps alive nothing of the other library's: its handles, workspaces and
 *       buffers must outlive every graph and executable that holds its nodes, as that library's own
 *       rules for graph capture say.</li>
 * </ul>
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
