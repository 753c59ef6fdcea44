package org.cudagraph4j.benchmarks.server;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The server's Flight Recorder event, beside the engine's ({@code org.cudagraph4j.serving.*}):
 * one per inference request answered 200, with the time each step of its handler took, so that a recording
 * ({@code --flight-recording}) shows where a request's microseconds go.
 */
final class ServerEvents {
    private ServerEvents() {}

    @Name("org.cudagraph4j.server.Infer")
    @Label("Inference Request")
    @Category({"cudagraph4j", "Server"})
    @Description("One inference request's handler: reading the body, parsing it, waiting for the engine, "
            + "writing the answer")
    @StackTrace(false)
    static final class Infer extends Event {
        @Label("Body Read")
        @Timespan(Timespan.NANOSECONDS)
        long readNanos;

        @Label("Parse")
        @Timespan(Timespan.NANOSECONDS)
        long parseNanos;

        @Label("Engine")
        @Description("From submission to the engine until the answer is in the response's buffer")
        @Timespan(Timespan.NANOSECONDS)
        long engineNanos;

        @Label("Response Written")
        @Description("Serializing the answer (for JSON) and handing the response to the server")
        @Timespan(Timespan.NANOSECONDS)
        long writeNanos;

        @Label("Body Bytes")
        @DataAmount
        long bodyBytes;

        @Label("Binary")
        boolean binary;
    }
}
