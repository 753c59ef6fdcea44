package org.cudagraph4j.serving;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The engine's Flight Recorder events, all under the category "cudagraph4j / Serving", so that
 * {@code jcmd <pid> JFR.start} (or {@code -XX:StartFlightRecording}) shows an engine's life:
 * {@code org.cudagraph4j.serving.Capture} (a bucket's capture and instantiation),
 * {@code org.cudagraph4j.serving.Batch} (a batch on a lane: copies, launch and synchronization) and
 * {@code org.cudagraph4j.serving.QueueWait} (a request piece from submission to its batch).
 */
final class ServingEvents {
    private ServingEvents() {}

    @Name("org.cudagraph4j.serving.Capture")
    @Label("Graph Capture")
    @Category({"cudagraph4j", "Serving"})
    @Description("A lane's warm-up pass, stream capture and instantiation of one bucket's graph")
    @StackTrace(false)
    static final class Capture extends Event {
        @Label("Lane")
        int lane;

        @Label("Bucket")
        int bucket;

        @Label("Succeeded")
        boolean succeeded;
    }

    @Name("org.cudagraph4j.serving.Batch")
    @Label("Batch")
    @Category({"cudagraph4j", "Serving"})
    @Description("One batch on a lane: the copy in, the graph launch (or eager kernels), the copy out")
    @StackTrace(false)
    static final class Batch extends Event {
        @Label("Lane")
        int lane;

        @Label("Bucket")
        int bucket;

        @Label("Rows")
        int rows;

        @Label("Graph Launch")
        boolean graph;

        @Label("Succeeded")
        boolean succeeded;
    }

    @Name("org.cudagraph4j.serving.QueueWait")
    @Label("Queue Wait")
    @Category({"cudagraph4j", "Serving"})
    @Description("A request piece, from its submission until the dispatcher put it in a batch")
    @StackTrace(false)
    static final class QueueWait extends Event {
        @Label("Rows")
        int rows;
    }
}
