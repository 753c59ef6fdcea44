package org.cudagraph4j.graph;

import java.util.ArrayList;
import java.util.List;
import org.cudagraph4j.internal.Lifetime;

/**
 * What a graph's nodes use, for an executable to hold: its kernel nodes one by one, so that
 * replacing one node's parameters releases what only that node used, and the other nodes (its
 * conditional bodies' included) as one group, with a repeat for each node that uses a resource.
 */
record NodeResources(KernelNodes kernelNodes, List<Lifetime> others) {
    NodeResources {
        others = List.copyOf(others);
    }

    /** Every use, with repeats: one per node that uses a resource. */
    List<Lifetime> all() {
        List<Lifetime> all = new ArrayList<>(others);
        all.addAll(kernelNodes.allUses());
        return all;
    }
}
