package org.cudagraph4j.benchmarks.server;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.cudagraph4j.ElementType;
import org.cudagraph4j.HalfFloats;
import org.cudagraph4j.serving.EngineMetrics;

/**
 * What the server serves: rows in, rows out, of the model's element type. {@link EngineBackend}
 * runs the model on the GPU through the serving engine; {@link CpuBackend} runs it on the CPU (a
 * server without a GPU, and the tests').
 */
public interface InferenceBackend extends AutoCloseable {
    /**
     * The type of the model's input and output elements.
     *
     * @return FLOAT32 (the default), FLOAT16 or BFLOAT16
     */
    default ElementType elementType() {
        return ElementType.FLOAT32;
    }

    /** Elements per input row. */
    int inputWidth();

    /** Elements per output row. */
    int outputWidth();

    /** Whether requests can be served now. */
    boolean ready();

    /**
     * Runs the model on {@code rows}.
     *
     * @param rows {@code n * inputWidth()} floats, rounded to a half-precision model's format first
     * @return the future of {@code n * outputWidth()} floats (a half-precision model's widened); it fails with
     *     {@link org.cudagraph4j.serving.QueueFullException} when the backend is saturated
     */
    CompletableFuture<float[]> infer(float[] rows);

    /**
     * Runs the model on {@code rows} and writes the answer into {@code output}, for a server that
     * sends its response from there. This default goes through {@link #infer(float[])}, with a copy
     * (and for a half-precision model a conversion) each way; a backend that can write
     * {@code output} directly overrides it.
     *
     * @param rows {@code n * inputWidth()} elements of {@link #elementType()} in native byte order, left
     *     unchanged until the future completes
     * @param output room for {@code n * outputWidth()} elements of {@link #elementType()} in native byte order
     * @return the future, completed with {@code output} once it holds the answer; it fails as
     *     {@link #infer(float[])}'s does, and cancelling it cancels the computation
     */
    default CompletableFuture<MemorySegment> infer(MemorySegment rows, MemorySegment output) {
        ElementType type = elementType();
        CompletableFuture<float[]> computed;
        CompletableFuture<MemorySegment> written;
        if (type == ElementType.FLOAT32) {
            computed = infer(rows.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED));
            written = computed.thenApply(answer -> {
                MemorySegment.copy(answer, 0, output, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, answer.length);
                return output;
            });
        } else {
            computed = infer(HalfFloats.toFloats(rows.toArray(ValueLayout.JAVA_SHORT_UNALIGNED), type));
            written = computed.thenApply(answer -> {
                // The answer holds values of the format, so narrowing it back is exact.
                MemorySegment.copy(HalfFloats.fromFloats(answer, type), 0, output, ValueLayout.JAVA_SHORT_UNALIGNED,
                        0, answer.length);
                return output;
            });
        }
        // Cancelling the answer (a request past its deadline) cancels the computation it waits for.
        written.whenComplete((answer, failure) -> {
            if (written.isCancelled()) {
                computed.cancel(false);
            }
        });
        return written;
    }

    /**
     * The serving engine's counters, per device included, for {@code GET /v2/models/{name}/metrics}.
     *
     * @return them, or empty for a backend without an engine (the default)
     */
    default Optional<EngineMetrics> metrics() {
        return Optional.empty();
    }

    @Override
    void close();
}
