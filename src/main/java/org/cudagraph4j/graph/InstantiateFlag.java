package org.cudagraph4j.graph;

import org.cudagraph4j.CudaEnum;

/** Options for {@link CudaGraph#instantiate} ({@code cudaGraphInstantiateFlags}). */
public enum InstantiateFlag implements CudaEnum {
    /** Free memory that graph allocation nodes left allocated before each relaunch. */
    AUTO_FREE_ON_LAUNCH(1),
    /** Upload the executable graph to the device as part of instantiation (needs an upload stream). */
    UPLOAD(2),
    /** Make the graph launchable from device code. */
    DEVICE_LAUNCH(4),
    /** Run nodes at their own priority attributes rather than the launch stream's. */
    USE_NODE_PRIORITY(8);

    private final int value;

    InstantiateFlag(int value) {
        this.value = value;
    }

    /**
     * The {@code cudaGraphInstantiateFlags} bit.
     *
     * @return the flag's bit, to be combined with the others by OR
     */
    @Override
    public int value() {
        return value;
    }
}
