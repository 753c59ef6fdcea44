package org.cudagraph4j;

import org.cudagraph4j.internal.lifetime.LiveCounters;
import org.cudagraph4j.internal.lifetime.LiveCounters.Kind;

/**
 * How many of the library's native resources are alive now, from {@link Cuda#liveResources()}: a
 * resource is alive from its creation until its native memory or handle is freed. One that was
 * closed while a graph or executable still uses it stays alive until they let go, so a count that
 * only grows in a long-running process is a leak.
 *
 * @param streams streams not yet destroyed
 * @param events events not yet destroyed
 * @param deviceBuffers device allocations not yet freed (slices are not counted), stream-ordered ones included
 * @param deviceBytes the bytes of those allocations
 * @param pinnedBuffers page-locked host allocations not yet freed
 * @param pinnedBytes the bytes of those allocations
 * @param libraries loaded libraries
 * @param graphs graph templates
 * @param graphExecs executable graphs
 * @param kernelArguments argument blocks in native memory: prepared ones ({@link CudaKernel#arguments}) not yet
 *     closed, and a one-shot launch's while it runs; a one-shot launch or node update normally reuses its thread's
 *     block instead, which is not counted
 * @param memoryPools pools made by {@link CudaDevice#createMemoryPool} and not yet destroyed (default pools are
 *     the runtime's, and not counted)
 * @param hostFunctions Java callbacks that CUDA may still call: queued with {@link CudaStream#launchHostFunction}
 *     and not yet run, or held by a graph or executable ({@code addHostFunction})
 */
public record LiveResources(long streams, long events, long deviceBuffers, long deviceBytes, long pinnedBuffers,
        long pinnedBytes, long libraries, long graphs, long graphExecs, long kernelArguments, long memoryPools,
        long hostFunctions) {

    static LiveResources now() {
        return new LiveResources(LiveCounters.count(Kind.STREAM), LiveCounters.count(Kind.EVENT),
                LiveCounters.count(Kind.DEVICE_BUFFER), LiveCounters.bytes(Kind.DEVICE_BUFFER),
                LiveCounters.count(Kind.PINNED_BUFFER), LiveCounters.bytes(Kind.PINNED_BUFFER),
                LiveCounters.count(Kind.LIBRARY), LiveCounters.count(Kind.GRAPH), LiveCounters.count(Kind.GRAPH_EXEC),
                LiveCounters.count(Kind.KERNEL_ARGUMENTS), LiveCounters.count(Kind.MEMORY_POOL),
                LiveCounters.count(Kind.HOST_FUNCTION));
    }

    /**
     * Describes what this snapshot has more of than {@code before}, by name.
     *
     * @param before the earlier snapshot
     * @return the counts that grew, e.g. {@code deviceBuffers +2 (+8192 bytes)}, comma-separated; empty when
     *     nothing grew
     */
    public String growthSince(LiveResources before) {
        StringBuilder growth = new StringBuilder();
        grew(growth, "streams", streams - before.streams, 0);
        grew(growth, "events", events - before.events, 0);
        grew(growth, "deviceBuffers", deviceBuffers - before.deviceBuffers, deviceBytes - before.deviceBytes);
        grew(growth, "pinnedBuffers", pinnedBuffers - before.pinnedBuffers, pinnedBytes - before.pinnedBytes);
        grew(growth, "libraries", libraries - before.libraries, 0);
        grew(growth, "graphs", graphs - before.graphs, 0);
        grew(growth, "graphExecs", graphExecs - before.graphExecs, 0);
        grew(growth, "kernelArguments", kernelArguments - before.kernelArguments, 0);
        grew(growth, "memoryPools", memoryPools - before.memoryPools, 0);
        grew(growth, "hostFunctions", hostFunctions - before.hostFunctions, 0);
        return growth.toString();
    }

    private static void grew(StringBuilder growth, String name, long count, long bytes) {
        if (count > 0 || bytes > 0) {
            growth.append(growth.isEmpty() ? "" : ", ").append(name).append(' ').append(count >= 0 ? "+" : "")
                    .append(count);
            if (bytes != 0) {
                growth.append(" (").append(bytes > 0 ? "+" : "").append(bytes).append(" bytes)");
            }
        }
    }
}
