package org.cudagraph4j.graph;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.cudagraph4j.Cuda;
import org.cudagraph4j.CudaDevice;
import org.cudagraph4j.CudaEvent;
import org.cudagraph4j.DeviceBuffer;

/**
 * Named buffers and events: what a {@link GraphArchive} records pointers and events against when
 * it saves a graph, and what it binds them to when it loads one. A pointer argument is saved as
 * (slot name, byte offset) in the smallest bound buffer that holds it; an event as its slot name.
 *
 * <p>Thread safety: not thread-safe; fill it on one thread, then share it read-only.
 */
public final class GraphBindings {
    private final Map<String, DeviceBuffer> buffers = new LinkedHashMap<>();
    private final Map<String, CudaEvent> events = new LinkedHashMap<>();

    /** No slots yet: bind them with {@link #buffer} and {@link #event}. */
    public GraphBindings() {}

    /**
     * Bindings of the buffers in {@code buffers}, by name, in the map's order.
     *
     * @param buffers slot name to buffer
     * @return new bindings, to which events may still be added
     * @throws IllegalArgumentException if a name is empty
     */
    public static GraphBindings of(Map<String, DeviceBuffer> buffers) {
        GraphBindings bindings = new GraphBindings();
        buffers.forEach(bindings::buffer);
        return bindings;
    }

    /**
     * Binds a buffer slot.
     *
     * @param name the slot's name, unique among buffer slots
     * @param buffer the buffer
     * @return this
     * @throws IllegalArgumentException if the name is empty or already bound
     */
    public GraphBindings buffer(String name, DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        buffers.put(checkedName(name, buffers), buffer);
        return this;
    }

    /**
     * Binds an event slot.
     *
     * @param name the slot's name, unique among event slots
     * @param event the event
     * @return this
     * @throws IllegalArgumentException if the name is empty or already bound
     */
    public GraphBindings event(String name, CudaEvent event) {
        Objects.requireNonNull(event, "event");
        events.put(checkedName(name, events), event);
        return this;
    }

    /**
     * The buffer slots.
     *
     * @return name to buffer, in binding order, unmodifiable
     */
    public Map<String, DeviceBuffer> buffers() {
        return Collections.unmodifiableMap(buffers);
    }

    /**
     * The event slots.
     *
     * @return name to event, in binding order, unmodifiable
     */
    public Map<String, CudaEvent> events() {
        return Collections.unmodifiableMap(events);
    }

    /** The device of the first bound buffer, or device 0: where a graph saved or built against them has its memory. */
    CudaDevice device() {
        return buffers.values().stream().findFirst().map(DeviceBuffer::device).orElseGet(() -> Cuda.device(0));
    }

    private static String checkedName(String name, Map<String, ?> bound) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a slot needs a name");
        }
        if (bound.containsKey(name)) {
            throw new IllegalArgumentException("slot '" + name + "' is already bound");
        }
        return name;
    }
}
