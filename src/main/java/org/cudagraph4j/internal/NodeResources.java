package org.cudagraph4j.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What a graph's nodes use, for an executable graph to hold: per kernel node (by node address),
 * so that replacing one node's parameters releases what only that node used, and the rest of the
 * graph's nodes as one group.
 */
public record NodeResources(Map<Long, List<Lifetime>> kernelNodes, List<Lifetime> others) {
    public NodeResources {
        kernelNodes = Map.copyOf(kernelNodes);
        others = List.copyOf(others);
    }

    /** Every use, with repeats: one per node that uses a resource. */
    public List<Lifetime> all() {
        List<Lifetime> all = new ArrayList<>(others);
        kernelNodes.values().forEach(all::addAll);
        return all;
    }
}
