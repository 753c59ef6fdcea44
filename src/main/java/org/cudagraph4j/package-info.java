/**
 * The CUDA runtime through the Foreign Function &amp; Memory API: devices, streams, events, device
 * and pinned memory, libraries and kernels. CUDA Graphs are in {@link org.cudagraph4j.graph}.
 *
 * <h2>Lifetimes: who keeps what alive</h2>
 * <ul>
 *   <li>Every type that owns a native resource ({@link org.cudagraph4j.CudaStream},
 *       {@link org.cudagraph4j.CudaEvent}, {@link org.cudagraph4j.DeviceBuffer},
 *       {@link org.cudagraph4j.PinnedBuffer}, {@link org.cudagraph4j.MemoryPool}, {@link org.cudagraph4j.CudaLibrary},
 *       {@link org.cudagraph4j.KernelArguments}, {@link org.cudagraph4j.graph.CudaGraph},
 *       {@link org.cudagraph4j.graph.GraphExec}) is {@link java.lang.AutoCloseable}. {@code close()}
 *       is idempotent; any other use after it throws {@link java.lang.IllegalStateException}.</li>
 *   <li>A graph, an executable graph and a capture in progress keep alive what their nodes use:
 *       the kernels' libraries, the buffers among kernel arguments, copy and memset operands,
 *       events. Closing such a resource while a graph uses it only drops its owner's reference:
 *       the memory is freed when the last graph or executable that uses it is closed.</li>
 *   <li>An executable holds exactly what its current nodes use. {@code update} and
 *       {@code updateKernelNode} hold the new resources before the call and let go of the replaced
 *       ones after it succeeds; a refused update changes nothing.</li>
 *   <li>A stream-ordered buffer ({@link org.cudagraph4j.MemoryPool#allocate}) keeps its stream and
 *       its pool alive until it is freed; {@link org.cudagraph4j.MemoryPool} says how it is freed.</li>
 *   <li>Prepared {@link org.cudagraph4j.KernelArguments} do not keep buffers alive: a launch with a
 *       closed buffer among them throws instead of reaching the GPU.</li>
 *   <li>A kernel keeps its library object reachable; closing the library makes its kernels
 *       unusable for new launches and nodes, but graphs that use them keep the image loaded.</li>
 *   <li>Borrowed handles ({@link org.cudagraph4j.CudaStream#borrow}, {@link org.cudagraph4j.CudaEvent#borrow},
 *       {@link org.cudagraph4j.DeviceBuffer#borrow}, {@link org.cudagraph4j.PinnedBuffer#borrow}) wrap
 *       a stream, event or memory that another library created and owns. The library never
 *       destroys or frees what it borrowed: {@code close()} ends the wrapper's use, after which the
 *       wrapper refuses use like any closed resource. Graphs, executables and captures hold a
 *       borrowed wrapper's lifetime as they hold an owned resource's, but that keeps only the
 *       wrapper alive, not the lender's resource: the lender must keep the stream, event or memory
 *       alive until every wrapper of it is closed, every graph and executable that uses it is
 *       closed, and the work queued through it has completed. If the lender frees first, graphs
 *       that use it read and write freed memory or use a dead handle, and what follows is CUDA's
 *       undefined behaviour: the library cannot see a free it did not make. Work the library queues
 *       on a borrowed stream while the lender captures it goes into the lender's graph, which holds
 *       nothing alive for it.</li>
 *   <li>Safety net: an owner that becomes unreachable without {@code close()} is closed by a
 *       {@link java.lang.ref.Cleaner}, with one warning in the {@code org.cudagraph4j}
 *       {@link java.lang.System.Logger} naming the resource (and where it was created, when started with
 *       {@code -Dorg.cudagraph4j.trackAllocations=true}). Close explicitly: the collector may run
 *       late or never. {@link org.cudagraph4j.Cuda#liveResources()} counts what is alive.</li>
 * </ul>
 *
 * <h2>Errors</h2>
 * Every failing runtime call is a {@link org.cudagraph4j.error.CudaException} naming the function, the
 * CUDA error and what the library was doing. Misuse is an {@link java.lang.IllegalArgumentException}
 * or {@link java.lang.IllegalStateException}, raised before anything reaches the runtime. Errors
 * for which {@link org.cudagraph4j.error.CudaException#isSticky()} is true (an illegal address in a
 * kernel, for one) leave the process's CUDA context unusable: every later call fails, and only a
 * new process recovers.
 *
 * <h2>Synchronous and asynchronous calls</h2>
 * A synchronous call (a copy or memset without a stream) has completed when it returns: work queued
 * afterwards on any stream sees its effect. An {@code Async} call is ordered on its stream only.
 *
 * <h2>Threads</h2>
 * Each type documents its thread safety. The runtime keeps the current device per OS thread; the
 * calls that create or allocate on a device (and synchronous copies) make that device current on
 * the calling thread first, so objects may be used from any thread, virtual threads included.
 */
package org.cudagraph4j;
