package org.cudagraph4j.benchmarks.server;

import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The model on the CPU, in its element type as {@link MlpWeights#forward} computes it: for machines
 * without a GPU, and for tests.
 *
 * <p>Forward passes run on a fixed pool of platform threads of their own, never on the virtual
 * threads' carriers that serve HTTP, so a long computation cannot starve the health endpoints. A
 * request is computed {@link #ROWS_PER_STEP} rows at a time, and a request whose future was
 * cancelled (its deadline passed) stops between two steps, or never starts.
 */
public final class CpuBackend extends MlpBackend {
    /** Rows computed between two checks for cancellation. */
    static final int ROWS_PER_STEP = 64;

    private final ExecutorService executor;
    private final AtomicInteger computing = new AtomicInteger();
    /** The answers not yet given, to fail on closing. */
    private final Set<CompletableFuture<float[]>> pending = ConcurrentHashMap.newKeySet();

    /**
     * Serves {@code model} on the CPU, a compute thread per processor.
     *
     * @param model the weights
     */
    public CpuBackend(MlpWeights model) {
        this(model, Runtime.getRuntime().availableProcessors());
    }

    /**
     * Serves {@code model} on the CPU with {@code threads} compute threads.
     *
     * @param model the weights
     * @param threads the platform threads that run forward passes, at least 1
     */
    public CpuBackend(MlpWeights model, int threads) {
        super(model);
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be positive, got " + threads);
        }
        this.executor = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                Thread.ofPlatform().daemon().name("cpu-backend-", 0).factory());
    }

    @Override
    public boolean ready() {
        return !executor.isShutdown();
    }

    /** Forward passes running now, for tests. */
    int computing() {
        return computing.get();
    }

    @Override
    public CompletableFuture<float[]> infer(float[] rows) {
        CompletableFuture<float[]> answer = new CompletableFuture<>();
        pending.add(answer);
        answer.whenComplete((rows1, failure) -> pending.remove(answer));
        executor.execute(() -> {
            if (answer.isDone()) {
                return; // cancelled before it started
            }
            computing.incrementAndGet();
            try {
                int width = model.inputWidth();
                int n = rows.length / width;
                if (n <= ROWS_PER_STEP) {
                    answer.complete(model.forward(rows));
                    return;
                }
                float[] out = new float[n * model.outputWidth()];
                for (int r = 0; r < n; r += ROWS_PER_STEP) {
                    if (answer.isDone()) {
                        return; // cancelled: its deadline passed
                    }
                    int end = Math.min(n, r + ROWS_PER_STEP);
                    float[] step = model.forward(Arrays.copyOfRange(rows, r * width, end * width));
                    System.arraycopy(step, 0, out, r * model.outputWidth(), step.length);
                }
                answer.complete(out);
            } catch (Throwable t) {
                answer.completeExceptionally(t);
            } finally {
                computing.decrementAndGet();
            }
        });
        return answer;
    }

    /** Fails every answer not yet given (a computation running stops at its next step), then stops the threads. */
    @Override
    public void close() {
        executor.shutdown();
        for (CompletableFuture<float[]> answer : pending) {
            answer.completeExceptionally(new IllegalStateException("the CPU backend is closed"));
        }
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
