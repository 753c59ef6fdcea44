package org.cudagraph4j.serving;

import java.util.concurrent.RejectedExecutionException;

/** A submission found the engine's queue full; nothing of it was queued. */
public final class QueueFullException extends RejectedExecutionException {
    private static final long serialVersionUID = 1L;

    QueueFullException(int pieces, int capacity) {
        super("the engine's queue is full: " + pieces + " piece(s) refused, capacity " + capacity);
    }
}
