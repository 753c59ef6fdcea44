/**
 * The lifetime model of native resources. Each resource has one
 * {@link org.cudagraph4j.internal.lifetime.Lifetime}, a reference count whose first reference its
 * owner drops on {@code close()}; graphs, executables and captures take further references through
 * {@link org.cudagraph4j.internal.lifetime.HeldResources}, and the resource is freed, on the thread
 * that drops it, when the last reference goes. {@link org.cudagraph4j.internal.lifetime.LiveCounters}
 * counts what is alive, {@link org.cudagraph4j.internal.lifetime.CaptureTracker} what a capture in
 * progress uses, and {@link org.cudagraph4j.internal.lifetime.GraphAllocations} the graph memory a
 * graph allocates and frees.
 *
 * <p>The package calls no native code and depends on no other package of the library: freeing a
 * resource is a {@link java.lang.Runnable} its owner supplies. Not exported.
 */
package org.cudagraph4j.internal.lifetime;
