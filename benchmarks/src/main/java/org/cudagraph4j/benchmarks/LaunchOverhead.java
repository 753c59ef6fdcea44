package org.cudagraph4j.benchmarks;

import org.openjdk.jmh.annotations.Param;

/**
 * N empty-kernel launches against one graph of N nodes, each followed by a stream
 * synchronization, so the device's work and the wake-up are counted. Native twin:
 * {@code launch_overhead/{eager,graph}/N}.
 */
public class LaunchOverhead extends EagerVersusGraph {
    @Param({"1", "2", "8", "32", "128"})
    int n;

    @Override
    void forward() {
        for (int i = 0; i < n; i++) {
            gpu.empty.launch(gpu.stream, gpu.emptyLaunch, gpu.noArguments);
        }
    }
}
