package org.cudagraph4j.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The JMH settings of the launch benchmarks, each its own state on one {@link Gpu}: sampled times
 * in microseconds, two warm-up and five measured iterations of half a second, one fork with native
 * access. A benchmark that needs other settings annotates its own class; those win.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgs = "--enable-native-access=ALL-UNNAMED")
public abstract class GpuBenchmark extends GpuState {}
