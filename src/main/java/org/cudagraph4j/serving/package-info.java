/**
 * Serving for JVM inference servers: an {@link org.cudagraph4j.serving.InferenceEngine} takes rows
 * from many threads, batches them onto bucketed CUDA graphs ({@link org.cudagraph4j.serving.BucketLadder},
 * captured eagerly or lazily: {@link org.cudagraph4j.serving.CapturePolicy}) and answers each request
 * with a future of its own rows. Lanes (a stream, staging buffers, graphs and a model copy each)
 * overlap one batch's copies with another's kernels; the queue is bounded, requests have deadlines,
 * and a context-poisoning error makes the engine unhealthy instead of hanging it.
 *
 * <p>Flight Recorder events, all in the category "cudagraph4j / Serving":
 * {@code org.cudagraph4j.serving.Capture} (a bucket's warm-up, capture and instantiation),
 * {@code org.cudagraph4j.serving.Batch} (one batch on a lane) and
 * {@code org.cudagraph4j.serving.QueueWait} (a request piece waiting for its batch).
 */
package org.cudagraph4j.serving;
