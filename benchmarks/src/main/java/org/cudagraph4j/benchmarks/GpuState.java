package org.cudagraph4j.benchmarks;

import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * A JMH state on the GPU: one {@link Gpu} a trial, opened before {@link #setUp()} makes what is
 * measured, and closed after {@link #tearDown()} has closed it, once the stream has drained.
 */
@State(Scope.Thread)
public abstract class GpuState {
    Gpu gpu;

    /** Opens the GPU, then makes what is measured. */
    @Setup(Level.Trial)
    public final void openGpu() {
        gpu = new Gpu();
        setUp();
    }

    /** Waits for the stream, closes what {@link #setUp()} made, then the GPU. */
    @TearDown(Level.Trial)
    public final void closeGpu() {
        gpu.stream.synchronize();
        tearDown();
        gpu.close();
    }

    /** Makes what is measured, on {@link #gpu}. */
    abstract void setUp();

    /** Closes what {@link #setUp()} made; the GPU is closed after it. */
    abstract void tearDown();
}
