package org.cudagraph4j.graph;

import java.util.Objects;
import org.cudagraph4j.DeviceBuffer;

/**
 * A memory allocation node and the memory it allocates, from {@link CudaGraph#addMemAlloc}.
 *
 * @param node the allocation node: nodes that use the memory depend on it
 * @param buffer a view of the memory, which only nodes of the graph may use, and which
 *     {@link CudaGraph#addMemFree} frees
 */
public record GraphAllocation(GraphNode node, DeviceBuffer buffer) {
    /**
     * Checks the parts.
     *
     * @param node the allocation node
     * @param buffer the graph memory it allocates
     * @throws NullPointerException if either is {@code null}
     */
    public GraphAllocation {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(buffer, "buffer");
    }
}
